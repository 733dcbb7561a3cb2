"""The sequence tasks (pos, chunk, ner) as the front-ends see them: one :class:`SequenceTask`
each, registered in ``structkit.tasks``. Light: the methods import the wing's code when called
(listing the tasks loads no numba)."""
from __future__ import annotations

from dataclasses import dataclass

from structkit import rawtext
from structkit.errors import UserError
from structkit.serving import Serving, SpanServing
from structkit.tasks import SEQUENCE, Command, CommandOption, Task, Training, register

_FILES = ("\n\nFILES may be files, folders (read recursively; see --glob) or '-'; none is "
          "standard input.")

_OPTIONS = (
    *rawtext.options("Then tagged."),
    CommandOption(("--format", "fmt"), "With --text: 'word label' rows (conll, the default) or CoNLL-U "
                  "with # sent_id, # text and SpaceAfter=No (conllu; pipe it to `structkit parse`).",
                  choices=("conll", "conllu")),
    CommandOption(("--columns",), "Name the input columns, e.g. 'word,pos' or 'word,pos,label'."),
    CommandOption(("--depth",), "Lookahead depth for history-based models (default: the depth trained "
                  "with).", int),
    CommandOption(("--scores",), "Add each token's margin (a last column, or Margin= in CoNLL-U MISC): "
                  "for Viterbi models the best sequence's score minus the best with another label at "
                  "that token (max-marginals); for history-based models (greedy, lookahead, OLaRank "
                  "greedy) the decision margin: the chosen label's score with its best lookahead "
                  "continuation minus the best other label's. Small margins are the doubtful tags.", bool),
)


@dataclass(frozen=True)
class SequenceTraining(Training):
    """How a chain model trains (its learner's spec reports the epochs)."""

    task: str = "pos"

    def setup(self) -> tuple:
        from structkit.sequence.task import TaggerConfig, train_tagger

        return TaggerConfig, train_tagger

    def choose_algo(self, train_path: str | None) -> str | None:
        from structkit.config import resolve_data_path
        from structkit.sequence.task import default_algo

        return default_algo(self.task, train_path and resolve_data_path(train_path))

    def main_score(self) -> str:
        from structkit.sequence.task import main_score

        return main_score(self.task)

    def epoch_calls(self, config) -> int:
        return config.spec.epoch_calls(config)

    def epoch_line(self, config, stats: dict) -> str:
        return config.spec.report(stats)

    def trained(self, config, model) -> str:
        info = model.info
        if getattr(model, "kind", None) == "lattice":
            return (f"{info['n_labels']} labels (dense weights would take {info['dense_mb']:,} MB): hashed "
                    f"candidate lattice over {info['n_classes']} {info['classes']}, averaged perceptron")
        what = f"{info['n_features']} features, {len(model.labels)} labels"
        if "scheme" in info:
            how = "detected" if info.get("scheme_detected", True) else "given"
            what += f" ({info['scheme'].upper()} scheme, {how})"
        chosen = getattr(model, "default_templates", None)
        if chosen:
            why = " (the input has no POS column)" if chosen.endswith("-nopos") else ""
            what += f", templates {chosen}{why}"
        if isinstance(info.get("vectors"), dict):
            what += f", word clusters of {info['vectors'].get('words', '?'):,} vectors"
        return what



class TagCommand(Command):
    """`structkit tag`, `chunk` and `ner`: CoNLL columns, CoNLL-U or raw text in, a block at a
    time."""

    def batch_job(self, task: Task, model_path: str, command: str, text: bool = False,
                  no_split: bool = False, fmt: str | None = None, lang: str = "en",
                  columns: str | None = None, depth: int | None = None, scores: bool = False,
                  tokenizer_path: str | None = None):
        import gc

        from structkit.sequence.jobs import TagJob

        if not text and fmt:
            raise UserError("--format goes with --text")
        if text and columns:
            raise UserError("--columns does not apply to --text (raw text has no columns)")
        protect = [model_path]
        raw = rawtext.resolve(command, text, no_split, lang, tokenizer_path, protect)
        # The collector would scan the model's objects (and numba's) over and over while they
        # are built; frozen, they are never scanned again, nor torn down one by one at exit.
        gc.disable()
        try:
            tagger = task.load(model_path, command)
        finally:
            gc.freeze()
            gc.enable()
        task.check_search_options(tagger, model_path, depth)
        job = TagJob(tagger, columns, text, raw.split if raw else "auto", fmt, raw.tokenizer if raw else lang,
                     depth, scores)
        return job, protect


class TaggerServing(Serving):
    """A chain model served: its labels, margins and explanations per token."""

    def describe(self, model) -> dict:
        # margins: max-marginals for Viterbi models, the decision margin for history-based ones
        info = getattr(model, "info", {}) or {}
        lattice = getattr(model, "kind", None) == "lattice"
        column, key = model.output_column()
        from structkit.io.conllu import NAMES

        return {"labels": [] if lattice and model.rules else [str(x) for x in model.labels],
                "decoder": "viterbi" if lattice else model.config.spec.decoder,
                "needs_pos": bool(model.features.uses_pos), "scheme": info.get("scheme"),
                "scores": True, "explain": True,
                # its labels are POS tags later models may read (not a pos model of lemmas or a FEATS key)
                "gives_pos": "tags" in self.provides and key is None and NAMES[column] in ("upos", "xpos")}


class PhraseServing(SpanServing, TaggerServing):
    """A chunker or NER tagger served: its labels are the request's phrases."""


class SequenceTask(Task):
    """A chain-model tagging task: CoNLL columns or CoNLL-U in, one label per token out."""

    @property
    def tags_pos(self) -> bool:
        """Its labels are the POS tags later models read (a parser's --tagger)."""
        return self.serving is not None and "tags" in self.serving.provides

    def load(self, path: str, command: str | None = None, tasks: tuple[str, ...] | None = None):
        from structkit.sequence.task import SequenceTagger

        return SequenceTagger.load(path, command=command, tasks=tasks or (self.name,))

    def dump_lines(self, model, top: int, pattern: str | None) -> list[str]:
        if getattr(model, "kind", None) == "lattice":
            from structkit.sequence.lattice import lattice_lines

            return lattice_lines(model, top, pattern)
        from structkit.sequence.dump import tagger_lines

        return tagger_lines(model, top, pattern)

    def explanations(self, model, sentence, path: str, columns: str | None = None,
                     text: bool = False, depth: int | None = None, only: int | None = None):
        from structkit.sequence.explain import iter_explanations

        if getattr(model, "kind", None) == "lattice":   # a large label set: hashed candidate lattices
            if depth is not None:
                model.check_depth(depth, path)
            if text:
                cols = model.text_columns(sentence, path)
            else:
                try:
                    cols, _ = model.input_columns(len(sentence.rows[0]), columns, sentence.lines is not None)
                except ValueError as e:
                    raise UserError(str(e), path) from None
            from structkit.sequence.explain import lattice_explanations

            return lattice_explanations(model, [r[cols.word] for r in sentence.rows], only)
        return iter_explanations(model, sentence, path, columns, text, depth, only)

    def check_search_options(self, model, path: str, depth: int | None = None,
                             beam: int | None = None) -> int | None:
        if depth is not None:
            model.check_depth(depth, path)
        return super().check_search_options(model, path, None, beam)

    def evaluate(self, files: tuple[str, ...], label_column: str | None = None,
                 model_path: str | None = None, other: str | None = None,
                 scheme: str = "auto") -> tuple[dict, str]:
        """Accuracy (pos), conlleval phrase scores (chunk, ner), or McNemar's test with
        ``other``: FILE with gold and prediction last, or GOLD PRED (columns or CoNLL-U)."""
        from structkit.config import resolve_data_path
        from structkit.eval.files import evaluate_files

        task = self.name
        if len(files) not in (1, 2):
            raise UserError(f"eval takes one file (gold and prediction columns) or two (GOLD PRED), "
                            f"got {len(files)}")
        if other is not None:
            from structkit.eval.files import compare_files

            return compare_files(task, tuple(resolve_data_path(f, must_exist=True) for f in files),
                                 resolve_data_path(other, must_exist=True), scheme)
        known = None
        if model_path:
            from structkit.sequence.task import SequenceTagger
            known = SequenceTagger.load(model_path).features.known_words()
        paths = tuple(resolve_data_path(f, must_exist=True) for f in files)
        from structkit.io.conllu import is_conllu_file

        conllu = len(paths) == 2 and is_conllu_file(paths[0])
        if conllu and not is_conllu_file(paths[1]):
            raise UserError("the gold file is CoNLL-U, the prediction file is not: give both as CoNLL-U",
                            paths[1])
        if label_column is not None and not conllu:
            raise UserError("--label-column is for CoNLL-U files (GOLD PRED); in column files the "
                            "label is the last column")
        if conllu and self.tags_pos:
            from structkit.eval.tags import evaluate_conllu_pos

            return evaluate_conllu_pos(*paths, label_column or "upos", known)
        if conllu:
            if label_column is None:
                raise UserError(f"eval --task {task} on CoNLL-U needs --label-column, e.g. misc.NER")
            from structkit.eval.files import evaluate_sentences
            from structkit.eval.tags import conllu_label_triples

            return evaluate_sentences(task, conllu_label_triples(task, *paths, label_column), known, scheme)
        return evaluate_files(task, paths, known, scheme)


class PosTask(SequenceTask):
    """POS tagging: its models are pipeline components."""

    def components(self, model, path: str | None = None, **options) -> list:
        """A POS tagger's tags are UPOS and XPOS in a pipeline (chunk and ner models make no
        component: their labels are no CoNLL-U column)."""
        from structkit.sequence.component import Tagger

        return [Tagger(model, path)]


# name: (its Task class, command, its help, how the server runs its models, the eval options of
# phrase labels)
_TASKS = {
    "pos": (PosTask, "tag", "POS-tag CoNLL files (or --text); writes each row plus the predicted tag.",
            TaggerServing("tag", order=0, provides=frozenset({"tags"})), ()),
    "chunk": (SequenceTask, "chunk", "Chunk CoNLL files (word POS [gold]); writes each row plus the predicted "
              "chunk tag.", PhraseServing("chunk"), ("scheme",)),
    "ner": (SequenceTask, "ner", "Find named entities in CoNLL files; writes each row plus the predicted tag.",
            PhraseServing("ner"), ("scheme",)),
}
assert tuple(_TASKS) == SEQUENCE

for _name, (_class, _command, _help, _serving, _scheme) in _TASKS.items():
    register(_class(_name, SequenceTraining("perceptron", mixes=True, task=_name),
                    TagCommand(_command, _help, _help + _FILES, _OPTIONS),
                    _serving, ("label_column", "model_path", "other") + _scheme))
