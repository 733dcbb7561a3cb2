"""A UD treebank as a tokenizer learns from it: the raw text rebuilt from each sentence's
``# text`` and the ``# newdoc``/``# newpar`` marks, and the gold segmentation as one label per
character, with the treebank's multiword tokens.

Rebuilding the text: the sentences of a paragraph are joined by one space, and paragraphs are
separated (each is a block of its own), as ``eval --task tokenize`` and the CoNLL 2018 shared task
read a treebank's raw text. Each token is found in its sentence's ``# text``, in order, after
optional whitespace: a token that is not there (the ``# text`` disagrees with the tokens) is a
``file:line`` error, as is a sentence without ``# text``.

Labels, one per character (``LABELS``): ``N`` inside a token with more of it to come, ``T`` the
last character of a token, ``S`` the last character of a sentence's last token, ``W`` whitespace
between tokens. Whitespace inside a token (Vietnamese ``Hà Nội``) is ``N``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from structkit.errors import UserError
from structkit.io.document import read_conllu
from structkit.text.tokenize import MAX_BLOCK_CHARS

# Training memory follows the characters read (about 0.5 KB each: 783 MB for a treebank with
# one 1M-character sentence); analysis cuts a paragraph at MAX_BLOCK_CHARS, so no model needs
# to see a longer sentence, and a longer one is refused before any work.
MAX_SENTENCE_CHARS = MAX_BLOCK_CHARS

LABELS = ("N", "T", "S", "W")
N, T, S, W = range(4)


@dataclass
class GoldSentence:
    text: str
    line: int                                   # the line of its first comment or row
    tokens: list[tuple[str, tuple[str, ...]]]   # (token form, its words)
    new_par: bool


@dataclass
class Paragraph:
    """A block of raw text with its gold labels; ``mwt`` the multiword tokens met in it."""

    text: str
    labels: list[int]
    sentences: int = 0
    first_line: int = 0
    tokens: list[str] = field(default_factory=list)   # its token forms
    sents: list["GoldSentence"] = field(default_factory=list)


@dataclass
class Treebank:
    paragraphs: list[Paragraph] = field(default_factory=list)
    # token form -> {words: count}: how the training data splits each multiword token
    mwt: dict[str, dict[tuple[str, ...], int]] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)   # token form -> count (all tokens)
    n_sentences: int = 0
    n_tokens: int = 0
    n_words: int = 0
    n_chars: int = 0


def _text_comment(comment: str) -> str | None:
    """The value of ``# text = ...``; ``# text =Word`` (no space, as one treebank writes it) too."""
    body = comment[1:].lstrip()
    if not body.startswith("text"):
        return None
    rest = body[4:].lstrip(" \t")
    if not rest.startswith("="):
        return None
    value = rest[1:]
    return value[1:] if value.startswith(" ") else value


def read_sentences(path: str) -> Iterator[GoldSentence]:
    """The sentences of a CoNLL-U file (read and checked by the one reader,
    ``structkit.io.document.read_conllu``): text, tokens (multiword tokens with their words)."""
    for s in read_conllu(path, check_text=False):
        text = next((t for c in s.comments if (t := _text_comment(c)) is not None), None)
        if text is None:
            raise UserError("sentence has no '# text = ...' comment (a tokenizer learns from "
                            "the raw text)", path, s.first_line)
        tokens = [(t.form, tuple(w.form for w in t.words)) for t in s.tokens]
        new_par = any(c.startswith(("# newpar", "# newdoc")) for c in s.comments)
        yield GoldSentence(text, s.first_line, tokens, new_par)


def sentence_labels(sent: GoldSentence, path: str) -> list[int]:
    """One label per character of ``sent.text``: each token found in order after whitespace."""
    text = sent.text
    labels = [W] * len(text)
    pos = 0
    last_end = -1
    for form, _ in sent.tokens:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if not form or not text.startswith(form, pos):
            shown = text[pos:pos + len(form) + 10]
            raise UserError(f"token {form!r} is not in '# text' at character {pos + 1} (the text "
                            f"has {shown!r} there): the tokens and the text disagree", path, sent.line)
        for i in range(pos, pos + len(form)):
            labels[i] = N
        pos += len(form)
        labels[pos - 1] = T
        last_end = pos - 1
    if text[pos:].strip():
        raise UserError(f"'# text' goes on after the last token: {text[pos:pos + 20]!r}", path, sent.line)
    if last_end >= 0:
        labels[last_end] = S
    return labels


def read_treebank(path: str, max_chars: int = 2000) -> Treebank:
    """The training view of a treebank: paragraphs of consecutive sentences (at most about
    ``max_chars`` characters each, cut between sentences: the features look a few characters
    around, so short stretches teach sentence ends as well as long ones, and each is one
    update of a sequence learner) and the multiword tokens' splits."""
    tb = Treebank()
    cur: Paragraph | None = None
    for sent in read_sentences(path):
        if len(sent.text) > MAX_SENTENCE_CHARS:
            raise UserError(f"a sentence of {len(sent.text):,} characters: a tokenizer trains on at most "
                            f"{MAX_SENTENCE_CHARS:,} a sentence (tokenizer.gold.MAX_SENTENCE_CHARS, the "
                            "paragraph analysis reads at once; no option raises it); split it", path, sent.line)
        labels = sentence_labels(sent, path)
        tb.n_sentences += 1
        for form, words in sent.tokens:
            tb.n_tokens += 1
            tb.n_words += len(words)
            tb.tokens[form] = tb.tokens.get(form, 0) + 1
            if len(words) > 1:
                seen = tb.mwt.setdefault(form, {})
                seen[words] = seen.get(words, 0) + 1
        tb.n_chars += len(sent.text)
        if cur is None or sent.new_par or len(cur.text) >= max_chars:
            cur = Paragraph(sent.text, labels, 1, sent.line)
            tb.paragraphs.append(cur)
            cur.tokens.extend(form for form, _ in sent.tokens)
            cur.sents.append(sent)
            continue
        else:
            cur.text += " " + sent.text
            cur.labels += [W] + labels
            cur.sentences += 1
            cur.tokens.extend(form for form, _ in sent.tokens)
            cur.sents.append(sent)
    if tb.n_sentences == 0:
        raise UserError("no sentences: a tokenizer needs a CoNLL-U treebank with '# text'", path)
    return tb
