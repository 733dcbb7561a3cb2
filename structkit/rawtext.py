"""Raw text as a command's input: the options ``--text``, ``--no-split``, ``--lang`` and
``--tokenizer``, declared once for every command that takes them, and what they resolve to.

``--text`` says the input is raw text; it is cut into tokens and sentences by the rules of
``--lang`` or by a tokenizer trained with `structkit train --task tokenize` (``--tokenizer``);
``--no-split`` makes each line one sentence. :func:`resolve` checks them (an option that needs
``--text`` without it, an unknown language, a file that is not a tokenizer model: one line
each, before any input is read) and gives what tokenises: a language code or a learnt
tokenizer, and the split mode.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from structkit.errors import UserError
from structkit.tasks import CommandOption, get_task

NO_SPLIT = CommandOption(("--no-split",), "With --text: each line is one sentence.", bool)
LANG = CommandOption(("--lang",), "With --text: the tokenizer's language (rules: en).", default="en",
                     show_default=True)
TOKENIZER = CommandOption(("--tokenizer", "tokenizer_path"), "With --text: a tokenizer trained with "
                          "`structkit train --task tokenize` (any language), instead of the rules of --lang.")


def options(then: str) -> tuple[CommandOption, ...]:
    """``--text`` (its help ending with what the command does ``then``), ``--no-split``,
    ``--lang`` and ``--tokenizer``."""
    text = CommandOption(("--text",), "Input is raw text: tokenised (the rules of --lang, or --tokenizer) "
                         f"and split into sentences; a blank line ends a paragraph. {then}", bool)
    return (text, NO_SPLIT, LANG, TOKENIZER)


@dataclass(frozen=True)
class RawText:
    """What tokenises a command's raw text: a language code or a learnt tokenizer, and the
    split mode ("auto": the tokenizer finds the sentences; "lines": one sentence a line)."""

    tokenizer: Any
    split: str


def resolve(command: str, text: bool, no_split: bool = False, lang: str = "en",
            tokenizer_path: str | None = None, protect: list[str] | None = None) -> RawText | None:
    """The raw-text options of ``command`` checked: None without ``--text`` (where
    ``--no-split`` or ``--tokenizer`` is refused); else the learnt tokenizer of ``--tokenizer``
    (loaded, its file added to ``protect``: no output may be it) or the rules of ``--lang``."""
    if not text:
        if no_split or tokenizer_path:
            raise UserError(f"{'--no-split' if no_split else '--tokenizer'} goes with --text")
        return None
    split = "lines" if no_split else "auto"
    if tokenizer_path:
        tokenizer = get_task("tokenize").load(tokenizer_path, f"{command} --tokenizer").tokenizer
        if protect is not None:
            protect.append(tokenizer_path)
        return RawText(tokenizer, split)
    from structkit.text.tokenize import get_tokenizer

    get_tokenizer(lang)  # an unknown language is an error before any input is read
    return RawText(lang, split)
