"""The dependency parsers' task (parse) as the front-ends see it, registered in
``structkit.tasks``. Light: the methods import the wing's code when called."""
from __future__ import annotations


from structkit import rawtext
from structkit.errors import UserError
from structkit.parse.serving import ParseServing
from structkit.tasks import Command, CommandOption, Task, Training, get_task, register

_HELP = """Parse CoNLL-X or CoNLL-U files (or `word POS` columns): CoNLL-U comes back as CoNLL-U
with HEAD and DEPREL predicted and every other line and column as read; other input as
CoNLL-X. With --text the input is raw text: tokenised (the rules of --lang, or a tokenizer
model with --tokenizer), POS-tagged with --tagger and written as CoNLL-U with # sent_id,
# text, SpaceAfter=No and multiword range lines. An unlabelled parser writes DEPREL '_',
never the input's. FILES may be files, folders (read recursively; see --glob) or '-'; none
is standard input."""

_OPTIONS = (
    CommandOption(("--depth",), "Lookahead depth of a lookahead parser, or of the lookahead inside the "
                  "beam of a beam parser (0..3; default: the depth trained with).", int),
    CommandOption(("--beam",), "Beam width of a beam parser (default: the width trained with).", int),
    CommandOption(("--tagger", "tagger_path"), "POS-tag the words first with this tagger model "
                  "(`structkit train --task pos`); needed with --text."),
    *rawtext.options("Then tagged with --tagger and parsed; output CoNLL-U."),
)


class ParseTraining(Training):
    """How a parser trains, and what `train` prints of it."""

    def setup(self) -> tuple:
        from structkit.parse.parser import ParserConfig, train_parser

        return ParserConfig, train_parser

    def main_score(self) -> str:
        return "uas"

    def dev_line(self, config, dev: dict) -> str:
        return f"dev UAS {dev['uas']:.2f}" + (f", LAS {dev['las']:.2f}" if "las" in dev else "")

    def epoch_line(self, config, stats: dict) -> str:
        """The beam parser's figure is the share of sentences that needed no update (its one
        decision per sentence); the others' the share of transitions chosen right."""
        if "train_accuracy" not in stats:
            return f"train updates {stats['train_updates']}"
        what = "sentences with no update" if config.algo == "beam" else "transitions right"
        return f"train {what} {stats['train_accuracy']:.2f}%"

    def trained(self, config, model) -> str:
        info = model.info
        return (f"{info['train_sentences']} training sentences ({info['skipped_unbuildable']} "
                "skipped: not projective or not single-rooted)")


class ParseCommand(Command):
    """`structkit parse`: CoNLL-U, CoNLL-X, `word POS` rows or raw text in, a block at a time."""

    def batch_job(self, task: Task, model_path: str, command: str, depth: int | None = None,
                  beam: int | None = None, tagger_path: str | None = None, text: bool = False,
                  no_split: bool = False, lang: str = "en", tokenizer_path: str | None = None):
        from structkit.parse.jobs import ParseJob

        if text and not tagger_path:
            raise UserError(f"{command} --text needs --tagger: raw text has no POS tags, which the "
                            "parser reads (a tagger trained with `structkit train --task pos`)")
        protect = [model_path]
        raw = rawtext.resolve(command, text, no_split, lang, tokenizer_path, protect)
        parser = task.load(model_path, command)
        beam = task.check_search_options(parser, model_path, depth, beam)
        tagger = None
        if tagger_path:
            pos = get_task("pos")   # a POS model of `train --task pos`
            tagger = pos.load(tagger_path, f"{command} --tagger")
            protect.append(tagger_path)
        if tagger is not None:  # its tags must be ones the parser knows (structkit.tagsets)
            from structkit.tagsets import check_models

            check_models(tagger, parser, f"--tagger {tagger_path}", f"the parser {model_path}",
                         input_has_morph=not text)
        return ParseJob(parser, tagger, depth, beam, raw.tokenizer if raw else None,
                        raw.split if raw else "auto"), protect


class ParseTask(Task):
    """Dependency parsing: CoNLL-X, CoNLL-U or `word POS` rows in, a tree per sentence out."""

    def load(self, path: str, command: str | None = None, tasks: tuple[str, ...] | None = None):
        from structkit.parse.parser import DependencyParser

        return DependencyParser.load(path, command=command)

    def components(self, model, path: str | None = None, beam: int | None = None, **options) -> list:
        from structkit.parse.component import Parser

        return [Parser(model, path, beam)]

    def dump_lines(self, model, top: int, pattern: str | None) -> list[str]:
        from structkit.parse.dump import parser_lines

        return parser_lines(model, top, pattern)

    def check_search_options(self, model, path: str, depth: int | None = None,
                             beam: int | None = None) -> int | None:
        from structkit.parse.parser import check_search_options

        return check_search_options(model, depth, beam, path)[1]

    def evaluate(self, files: tuple[str, ...], **options) -> tuple[dict, str]:
        """UAS and LAS (both conventions), root, complete match and the per-label table of
        GOLD PRED dependency files."""
        from structkit.config import resolve_data_path
        from structkit.eval.files import evaluate_parse_files

        if len(files) != 2:
            raise UserError(f"eval --task {self.name} takes two files, GOLD PRED; got {len(files)}")
        return evaluate_parse_files(*(resolve_data_path(f, must_exist=True) for f in files))


register(ParseTask("parse", ParseTraining("beam"),
                   ParseCommand("parse", "Parse CoNLL-U (back into CoNLL-U), CoNLL-X or `word POS` files: heads "
                                "and labels.", _HELP, _OPTIONS, "a parser"),
                   ParseServing("parse", order=2, provides=frozenset({"head", "deprel"}))))
