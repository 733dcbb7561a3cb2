"""The tokenize task as the front-ends see it, registered in ``structkit.tasks``: training a
tokenizer on a UD treebank, `structkit tokenize` (raw text to CoNLL-U with the segmentation
only) and `structkit eval --task tokenize`. Light: the methods import the wing when called."""
from __future__ import annotations


from structkit.errors import UserError
from structkit.config import two_files
from structkit.tasks import Command, CommandOption, Task, Training, register

_HELP = """Tokenize raw text with a tokenizer trained by `structkit train --task tokenize`: tokens,
multiword tokens and sentences, written as CoNLL-U with # text, SpaceAfter=No and range lines
(every other column '_'). A blank line in the input ends a paragraph. FILES are raw text files
or '-'; none is standard input."""

_OPTIONS = (
    CommandOption(("-o", "--output"), "Write here instead of standard output."),
    CommandOption(("--no-split",), "Each line is one sentence (only tokens are found).", bool),
    CommandOption(("--scores",), "Add the margins of the boundary decisions to MISC: TokMargin= on "
                  "each token (the best score with a boundary where it ends minus the best with "
                  "none; on a multiword token's range line) and SentMargin= on a sentence's last "
                  "token (the best score with the sentence ending there minus the best without); "
                  "inf where nothing else is allowed. Small margins are the doubtful boundaries; "
                  "`structkit explain -m MODEL FILE` shows why.", bool),
)


class TokenizeTraining(Training):
    """How a tokenizer trains, and what `train` prints of it."""

    def setup(self) -> tuple:
        from structkit.tokenizer.task import TokenizeConfig, train_tokenizer

        return TokenizeConfig, train_tokenizer

    def main_score(self) -> str:
        return "words"

    def epoch_line(self, config, stats: dict) -> str:
        return f"train characters right {stats['train_accuracy']:.2f}%"

    def dev_line(self, config, dev: dict) -> str:
        return f"dev words F1 {dev['words']:.2f}, sentences F1 {dev['sentences']:.2f}"

    def trained(self, config, model) -> str:
        info = model.info
        return (f"{info['train_chars']} training characters, {info['train_sentences']} sentences, "
                f"{info['multiword_types']} multiword token types")

    def summary(self, config, model) -> str:
        info = model.info
        kept = ""
        if info.get("selected_epoch") is not None:
            kept = f", epoch {info['selected_epoch']} of {info['epochs_run']} kept (best dev words F1)"
        return f"{self.trained(config, model)}{kept}, {info['train_seconds']:.1f} s"


class TokenizeCommand(Command):
    """`structkit tokenize`: raw text in, CoNLL-U out (not a batch job)."""

    def run(self, task: Task, model_path: str, files: tuple[str, ...], output: str | None = None,
            no_split: bool = False, scores: bool = False) -> None:
        """Tokenize each file (streamed, one paragraph at a time) into one CoNLL-U stream."""
        from structkit.config import resolve_data_path
        from structkit.io.files import atomic_output, check_outputs, iter_lines, open_input
        from structkit.text.conllu import write_conllu
        from structkit.text.tokenize import iter_sentences

        model = task.load(model_path, self.name)
        paths = [resolve_data_path(f, must_exist=True) if f != "-" else "-" for f in files] or ["-"]
        check_outputs([output], paths + [model_path])
        with atomic_output(output) as out:
            n = 0
            for path in paths:
                with open_input(path) as stream:
                    lines = (line + "\n" for _, line in iter_lines(path, stream))
                    split = "lines" if no_split else "auto"
                    if scores:
                        from structkit.tokenizer.explain import scored_sentences, write_scored

                        for sent, tok_margins, sent_margin in scored_sentences(model.tokenizer, lines, split):
                            n += 1
                            write_scored(sent, tok_margins, sent_margin, out, n)
                        continue
                    for sent in iter_sentences(lines, model.tokenizer, split):
                        n += 1
                        write_conllu([sent], out, start=n)

    def model_input(self, gold_path: str, folder: str) -> str:
        """The treebank's raw text (``# text`` of each sentence, paragraphs apart), as the CoNLL
        2018 evaluation tokenizes it."""
        import os

        from structkit.tokenizer.task import raw_text

        path = os.path.join(folder, "input.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(raw_text(gold_path))
        return path

    def explain_input(self, file: str | None, text: str | None, number: int):
        """Raw text, as `structkit tokenize` reads it: the ``number``-th paragraph."""
        from structkit.tokenizer.explain import read_paragraph

        return read_paragraph(file, text, number)


class TokenizeTask(Task):
    """Tokens, multiword tokens and sentences of raw text, learnt from a treebank."""

    def load(self, path: str, command: str | None = None, tasks: tuple[str, ...] | None = None):
        from structkit.tokenizer.task import TokenizerModel

        return TokenizerModel.load(path, command)

    def components(self, model, path: str | None = None, **options) -> list:
        from structkit.components import Tokenizer

        return [Tokenizer(model, path)]

    def explanations(self, model, sentence, path: str, columns: str | None = None,
                     text: bool = False, depth: int | None = None, only: int | None = None):
        from structkit.tokenizer.explain import explanations

        if depth is not None:
            raise UserError(f"--depth does not apply to {self.name} models", path)
        return explanations(model, sentence, path, only)

    def dump_lines(self, model, top: int, pattern: str | None) -> list[str]:
        from structkit.tokenizer.dump import tokenizer_lines

        return tokenizer_lines(model, top, pattern)

    def evaluate(self, files: tuple[str, ...], model_path: str | None = None, other: str | None = None,
                 **options) -> tuple[dict, str]:
        """Tokens, words and sentences of GOLD PRED (CoNLL-U), aligned by their characters as
        the CoNLL 2018 shared task does."""
        from structkit.eval.tokenize import evaluate_tokenization, report

        result = evaluate_tokenization(*two_files(self.name, files, model_path, other))
        return result, report(result)


TOKENIZE = register(TokenizeTask("tokenize", TokenizeTraining("pa"),
                                 TokenizeCommand("tokenize", "Tokenize raw text (tokens, multiword tokens, "
                                                 "sentences) with a trained tokenizer.", _HELP, _OPTIONS,
                                                 "a tokenizer", batched=False)))
