"""The morph task as the front-ends see it, registered in ``structkit.tasks``: training a
morphological tagger and lemmatizer on a UD treebank, `structkit morph` (fills LEMMA, UPOS,
XPOS and FEATS of CoNLL-U) and `structkit eval --task morph`. Light: the methods import the
wing when called."""
from __future__ import annotations


from structkit import rawtext
from structkit.errors import UserError
from structkit.config import two_files
from structkit.morph.serving import MorphServing
from structkit.tasks import Command, CommandOption, Task, Training, register

_HELP = """Analyse CoNLL-U with a model trained by `structkit train --task morph`: fill each word's
LEMMA, UPOS, XPOS and FEATS (a column the model does not predict, '_' throughout its training
data, is passed through as read). Every other column, comment, multiword range and empty node is
written back as read. FILES may be CoNLL-U files, folders (read recursively; see --glob) or '-';
none is standard input."""

_OPTIONS = (
    CommandOption(("--scores",), "Add each predicted part's margin to MISC: UPOSMargin=, XPOSMargin= and "
                  "FeatsMargin= (the best tag sequence with the predicted value of that part at the word "
                  "minus the best with another value there: max-marginals over the candidate lattice; inf "
                  "when every candidate agrees) and LemmaMargin= (the chosen edit rule's score minus the "
                  "best other candidate rule's). Small margins are the doubtful analyses; `structkit "
                  "explain -m MODEL FILE` shows why.", bool),
    *rawtext.options("Then analysed into CoNLL-U."),
)


class MorphTraining(Training):
    """How a morph model trains, and what `train` prints of it."""

    def setup(self) -> tuple:
        from structkit.morph.task import MorphConfig, train_morph

        return MorphConfig, train_morph

    def main_score(self) -> str:
        # dev selection keeps the best AllTags (all FEATS) + Lemmas (structkit.morph.task)
        return "alltags_full"

    def epoch_line(self, config, stats: dict) -> str:
        return f"train tags right {stats['train_accuracy']:.2f}%"

    def dev_line(self, config, dev: dict) -> str:
        return (f"dev UPOS {dev['upos']:.2f}, XPOS {dev['xpos']:.2f}, UFeats {dev['ufeats']:.2f}, "
                f"AllTags {dev['alltags']:.2f}, AllTags (all FEATS) {dev['alltags_full']:.2f}, "
                f"Lemmas {dev['lemmas']:.2f}")

    def trained(self, config, model) -> str:
        return f"{model.info['tags']} tags, {model.info['rules']} lemma rules"

    def summary(self, config, model) -> str:
        info = model.info
        kept = ""
        if info.get("selected_epoch") is not None:
            d = info["dev_scores"]
            best = f"dev AllTags (all FEATS) {d['alltags_full']:.2f}, Lemmas {d['lemmas']:.2f}"
            kept = f", epoch {info['selected_epoch']} of {info['epochs_run']} "
            kept += (f"best on the held-out {info['dev_sentences']} ({best}), then {info['refit_epochs']} "
                     f"epochs on all {info['train_sentences']} sentences" if info.get("refit")
                     else f"kept (best {best})")
        return (f"{self.trained(config, model)}, {info['train_tokens']} training tokens{kept}, "
                f"{info['train_seconds']:.1f} s")


class MorphCommand(Command):
    """`structkit morph`: CoNLL-U or raw text in, a block at a time."""

    def batch_job(self, task: Task, model_path: str, command: str, scores: bool = False, text: bool = False,
                  no_split: bool = False, lang: str = "en", tokenizer_path: str | None = None):
        from structkit.morph.jobs import MorphJob

        protect = [model_path]
        raw = rawtext.resolve(command, text, no_split, lang, tokenizer_path, protect)
        model = task.load(model_path, command)
        return MorphJob(model, scores, raw.tokenizer if raw else None, raw.split if raw else "auto"), protect


class MorphTask(Task):
    """UPOS, XPOS, FEATS and LEMMA of each word, learnt from a treebank."""

    def load(self, path: str, command: str | None = None, tasks: tuple[str, ...] | None = None):
        from structkit.morph.task import MorphModel

        return MorphModel.load(path, command, tasks)

    def components(self, model, path: str | None = None, **options) -> list:
        from structkit.morph.component import Morph

        return [Morph(model, path)]

    def explanations(self, model, sentence, path: str, columns: str | None = None,
                     text: bool = False, depth: int | None = None, only: int | None = None):
        """Each predicted part of each word (UPOS, XPOS, FEATS, LEMMA): ``structkit.morph.explain``."""
        from structkit.morph.explain import explanations

        if depth is not None:
            raise UserError(f"--depth does not apply to {self.name} models", path)
        if columns:
            raise UserError(f"--columns does not apply to {self.name} models (they read CoNLL-U FORM)", path)
        if sentence.lines is None and len(sentence.rows[0]) != 1:
            raise UserError(f"a {self.name} model reads CoNLL-U (or raw text): the words of its FORM column", path)
        words = [r[1] if sentence.lines is not None else r[0] for r in sentence.rows]
        return explanations(model, words, only)

    def dump_lines(self, model, top: int, pattern: str | None) -> list[str]:
        """The model's facts, then its ``top`` most frequent tags and lemma rules (those whose
        text contains ``pattern``). Its weights are hashed: they have no feature names to show."""
        from structkit.lattice.rules import parse_rule

        info, t = model.info, model.tables
        lines = [f"# morph model: {len(t.tags)} tags, {len(t.rules)} lemma rules, {len(t.lexicon.form_tags)} "
                 f"known forms, weights 2^{model.W_tag.size.bit_length() - 1} (tagger) and "
                 f"2^{model.W_lem.size.bit_length() - 1} (lemmatizer), hashed",
                 f"# trained on {info.get('train_file')} ({info.get('train_tokens')} tokens)"]
        counts = t.lexicon.all_tags
        tags = [(counts.get(i, 0), tag.replace("\t", " ")) for i, tag in enumerate(t.tags)]
        rule_counts: dict[int, int] = {}
        for c in t.lexicon.form_rules.values():
            for r, n in c.items():
                rule_counts[r] = rule_counts.get(r, 0) + n

        def rule_words(r: int) -> str:
            lower, cut_front, add_front, cut_end, add_end = parse_rule(t.rules[r])
            out = (["lower-case"] if lower else []) + ([f"cut {cut_front} at the start"] if cut_front else []) \
                + ([f"prefix {add_front!r}"] if add_front else []) + ([f"cut {cut_end} at the end"] if cut_end else []) \
                + ([f"append {add_end!r}"] if add_end else [])
            return ", ".join(out) or "identity"

        rules = [(n, rule_words(r)) for r, n in rule_counts.items()]
        for name, items in (("tag", tags), ("rule", rules)):
            chosen = [x for x in sorted(items, key=lambda x: (-x[0], x[1])) if pattern is None or pattern in x[1]]
            lines += [f"{name}\t{n}\t{text}" for n, text in chosen[:top]]
        return lines

    def evaluate(self, files: tuple[str, ...], model_path: str | None = None, other: str | None = None,
                 **options) -> tuple[dict, str]:
        """UPOS, XPOS, UFeats, AllTags (CoNLL 2018: universal features), AllTags (all FEATS) and
        Lemmas accuracy of PRED against GOLD (same words)."""
        from structkit.morph.evaluate import evaluate_files, report

        result = evaluate_files(*two_files(self.name, files, model_path, other))
        return result, report(result)


register(MorphTask("morph", MorphTraining("perceptron"),
                   MorphCommand("morph", "Fill LEMMA, UPOS, XPOS and FEATS of CoNLL-U with a trained tagger "
                                "and lemmatizer.", _HELP, _OPTIONS, "a morphological tagger"),
                   MorphServing("morph", order=0, provides=frozenset({"lemma", "upos", "xpos", "feats"}))))
