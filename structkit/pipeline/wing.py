"""The pipeline task as the front-ends see it, registered in ``structkit.tasks``: `structkit
train --task pipeline` (tokenizer, morph model and parser in one file) and `structkit annotate`
(raw text in, CoNLL-U or JSON out). Light: the methods import the wing when called."""
from __future__ import annotations


from structkit.errors import UserError
from structkit.pipeline.serving import PipelineServing
from structkit.tasks import Command, CommandOption, Task, Training, register
from structkit.tokenizer.wing import TOKENIZE

_HELP = """Annotate raw text with a pipeline model (`structkit train --task pipeline`): tokenise
and split it into sentences with the pipeline's tokenizer (or the rules of --lang when it has
none), fill LEMMA, UPOS, XPOS and FEATS with its morph model and HEAD and DEPREL with its parser.
-m can be given several times to chain models trained apart, in order: a tokenizer (first), a
morph model or POS tagger, a parser, or a pipeline (-m tok.skm -m morph.skm -m parser.skm); a
model that reads what nothing before it gives, or tags a parser was not trained on, is refused.
Output: CoNLL-U (# sent_id, # text, multiword token lines, SpaceAfter=No) or, with --format
json, one JSON object per sentence (JSON lines). FILES may be files, folders (read
recursively; see --glob) or '-'; none is standard input. A blank line ends a paragraph."""

_OPTIONS = (
    CommandOption(("--format", "fmt"), "Output format: CoNLL-U, or JSON lines (one object per "
                  "sentence: sent_id, text, words, multiword).", choices=("conllu", "json"),
                  default="conllu", show_default=True),
    CommandOption(("--no-split",), "Each line is one sentence.", bool),
    CommandOption(("--lang",), "The tokenizer's language (rules: en), for a pipeline without a "
                  "tokenizer.", default="en", show_default=True),
    CommandOption(("--beam",), "Beam width of the parser (default: the width trained with).", int),
    CommandOption(("--input", "input_format"), "What FILES hold: raw text, or CoNLL-U whose tokens, "
                  "multiword tokens and sentences are kept as given (and every line not analysed: "
                  "comments, ranges, MISC) while the models fill LEMMA to DEPREL. Raw text that "
                  "looks like CoNLL-U is refused, naming this option.", choices=("text", "conllu"),
                  default="text", show_default=True),
)


class PipelineTraining(Training):
    """How a pipeline trains (its tokenizer, morph model and parser, one after the other), and
    what `train` prints of it."""

    def setup(self) -> tuple:
        from structkit.pipeline.train import PipelineConfig, train_pipeline

        return PipelineConfig, train_pipeline

    def main_score(self) -> str:
        return "las"

    def epoch_calls(self, config) -> int:
        """The epochs of every stage (``structkit.pipeline.train.Stages``; without dev: each
        epoch's ``expect`` corrects the count once training knows it)."""
        from structkit.pipeline.train import _plan

        try:
            return max(sum(n for _, n in _plan(config, None)), 1)
        except UserError:
            return 1

    def epoch_line(self, config, stats: dict) -> str:
        """The stage, its epoch and its training figure, named: the share of characters the
        tokenizer labelled right, of words the morph model tagged right, of sentences the
        parser parsed with no update."""
        what = {"tokenize": "characters right", "morph": "tags right",
                "parse": "sentences with no update"}.get(stats.get("kind"), "right")
        line = f"{stats.get('part', '')} epoch {stats.get('part_epoch', '?')}: "
        if "train_accuracy" in stats:
            return line + f"train {what} {stats['train_accuracy']:.2f}%"
        return line + f"train updates {stats['train_updates']}"

    def dev_line(self, config, dev: dict) -> str:
        """Each stage's dev scores, named as `eval` names them (the parser's and the morph
        model's ``words`` is a count, not shown)."""
        if "las" in dev:
            keys = (("uas", "UAS"), ("las", "LAS"))
        elif "upos" in dev:
            keys = (("upos", "UPOS"), ("xpos", "XPOS"), ("ufeats", "UFeats"), ("alltags", "AllTags"),
                    ("lemmas", "Lemmas"))
        else:
            keys = (("words", "words F1"), ("sentences", "sentences F1"))
        return "dev " + ", ".join(f"{name} {dev[k]:.2f}" for k, name in keys if k in dev)

    def trained(self, config, model) -> str:
        return "a pipeline of " + ", ".join(model.parts())

    def summary(self, config, model) -> str:
        info = model.info
        out = self.trained(config, model)
        if model.parser is not None and model.morph is not None:
            dev = info.get("parser_dev") or {}
            scores = "; ".join(f"dev LAS {v['las']:.2f} on {k} morphology" for k, v in dev.items())
            out += f"; the parser trained on {info['parser_morphology']} morphology" + \
                (f" ({scores})" if scores else "")
        cpu = info.get("train_cpu_seconds")
        return out + f", {info.get('train_seconds', 0):.1f} s" + (f" ({cpu:.1f} s CPU)" if cpu is not None else "")

    def chosen(self, model) -> dict | None:
        """The parser kept (on gold or jackknifed morphology) and both parsers' dev scores."""
        kept, dev = model.info.get("parser_morphology"), model.info.get("parser_dev") or {}
        if not kept or kept not in dev:
            return None
        return {"kept": f"the parser on {kept} morphology", "scores": dev[kept],
                "others": {f"the parser on {k} morphology": v for k, v in dev.items() if k != kept}}

    def metrics(self, config, model, history: list[dict]) -> dict:
        return {"config": model.info | {"config": vars(config)}, "epochs": history}


class PipelineCommand(Command):
    """`structkit annotate`: raw text in, CoNLL-U out, through a chain of components."""

    def batch_job(self, task: Task, model_path: str | tuple[str, ...], command: str, fmt: str = "conllu",
                  no_split: bool = False, lang: str = "en", beam: int | None = None,
                  input_format: str = "text"):
        """A job that runs the chain of the -m models (each a component or a pipeline file)."""
        if input_format == "conllu" and no_split:
            raise UserError("--no-split is for raw text: CoNLL-U input keeps its own sentences")
        from structkit.pipeline.annotate import AnnotateJob
        from structkit.components import chain

        paths = [model_path] if isinstance(model_path, str) else list(model_path)
        return AnnotateJob(chain(paths, command, lang, "lines" if no_split else "auto", beam), fmt,
                           input_format == "conllu"), paths

    def model_input(self, gold_path: str, folder: str) -> str:
        """`annotate` reads raw text: the treebank's, rebuilt as the tokenizer's card reads it."""
        return TOKENIZE.command.model_input(gold_path, folder)


class PipelineTask(Task):
    """A tokenizer, a morph model and a parser, trained together and run on raw text."""

    def load(self, path: str, command: str | None = None, tasks: tuple[str, ...] | None = None):
        from structkit.pipeline.model import PipelineModel

        return PipelineModel.load(path, command, tasks)

    def components(self, model, path: str | None = None, beam: int | None = None, **options) -> list:
        return model.components(path, beam)

    def dump_lines(self, model, top: int, pattern: str | None) -> list[str]:
        import json

        lines = [f"# pipeline model: {', '.join(model.parts())}"]
        for k, v in model.facts().items():
            lines.append(f"{k}\t{json.dumps(v, ensure_ascii=False)}")
        info = model.info
        if info.get("parser_morphology"):
            lines.append(f"parser morphology\t{info['parser_morphology']}\t"
                         f"{json.dumps(info.get('parser_dev'))}")
        return lines

    def evaluate(self, files: tuple[str, ...], **options) -> tuple[dict, str]:
        """GOLD SYSTEM: `annotate`'s output scored as `eval --task ud` scores it (CoNLL 2018)."""
        from structkit.tasks import get_task

        return get_task("ud").evaluate(files, **options)


register(PipelineTask("pipeline", PipelineTraining("none", parts=("tokenize", "morph", "parse")),
                      PipelineCommand("annotate", "Annotate raw text with a pipeline model: tokens, sentences, "
                                      "LEMMA, UPOS, XPOS, FEATS, HEAD and DEPREL (CoNLL-U or JSON).", _HELP,
                                      _OPTIONS, "a pipeline", chains=True),
                      PipelineServing(provides=frozenset({"tags", "lemma", "upos", "xpos", "feats", "head",
                                                          "deprel"}))))
