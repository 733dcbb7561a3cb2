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

from structkit.errors import UserError
from structkit.io.document import Sentence, read_conllu
from structkit.text.tokenize import MAX_BLOCK_CHARS

# Training memory follows the characters read (about 0.5 KB each: 783 MB for a treebank with
# one 1M-character sentence); analysis cuts a paragraph at MAX_BLOCK_CHARS, so no model needs
# to see a longer sentence, and a longer one is refused before any work.
MAX_SENTENCE_CHARS = MAX_BLOCK_CHARS

LABELS = ("N", "T", "S", "W")
N, T, S, W = range(4)


# What a tokenizer learns of a sentence of the treebank (``structkit.io.document.Sentence``):
# its ``# text``, and its tokens as (token form, its words).
Gold = tuple[str, list[tuple[str, tuple[str, ...]]]]


@dataclass
class Paragraph:
    """A block of raw text with its gold labels; ``mwt`` the multiword tokens met in it."""

    text: str
    labels: list[int]
    sentences: int = 0
    first_line: int = 0
    tokens: list[str] = field(default_factory=list)   # its token forms
    sents: list[Gold] = field(default_factory=list)   # its sentences' text and tokens


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


def gold_text(sent: Sentence, path: str) -> str:
    """A treebank sentence's ``# text`` (a ``file:line`` error when it has none)."""
    text = next((t for c in sent.comments if (t := _text_comment(c)) is not None), None)
    if text is None:
        raise UserError("sentence has no '# text = ...' comment (a tokenizer learns from "
                        "the raw text)", path, sent.first_line)
    return text


def opens_paragraph(sent: Sentence) -> bool:
    return any(c.startswith(("# newpar", "# newdoc")) for c in sent.comments)


def gold_tokens(sent: Sentence) -> list[tuple[str, tuple[str, ...]]]:
    """A treebank sentence's tokens as (token form, its words)."""
    return [(t.form, tuple(w.form for w in t.words)) for t in sent.tokens]


def sentence_labels(text: str, tokens: list[tuple[str, tuple[str, ...]]], path: str,
                    line: int) -> list[int]:
    """One label per character of a sentence's ``text``: each of its ``tokens`` found in order
    after whitespace (``line``: where the sentence is, for the error)."""
    labels = [W] * len(text)
    pos = 0
    last_end = -1
    for form, _ in tokens:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if not form or not text.startswith(form, pos):
            shown = text[pos:pos + len(form) + 10]
            raise UserError(f"token {form!r} is not in '# text' at character {pos + 1} (the text "
                            f"has {shown!r} there): the tokens and the text disagree", path, line)
        for i in range(pos, pos + len(form)):
            labels[i] = N
        pos += len(form)
        labels[pos - 1] = T
        last_end = pos - 1
    if text[pos:].strip():
        raise UserError(f"'# text' goes on after the last token: {text[pos:pos + 20]!r}", path, line)
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
    for sent in read_conllu(path, check_text=False):
        text = gold_text(sent, path)
        if len(text) > MAX_SENTENCE_CHARS:
            raise UserError(f"a sentence of {len(text):,} characters: a tokenizer trains on at most "
                            f"{MAX_SENTENCE_CHARS:,} a sentence (tokenizer.gold.MAX_SENTENCE_CHARS, the "
                            "paragraph analysis reads at once; no option raises it); split it",
                            path, sent.first_line)
        tokens = gold_tokens(sent)
        labels = sentence_labels(text, tokens, path, sent.first_line)
        tb.n_sentences += 1
        for form, words in tokens:
            tb.n_tokens += 1
            tb.n_words += len(words)
            tb.tokens[form] = tb.tokens.get(form, 0) + 1
            if len(words) > 1:
                seen = tb.mwt.setdefault(form, {})
                seen[words] = seen.get(words, 0) + 1
        tb.n_chars += len(text)
        if cur is None or opens_paragraph(sent) or len(cur.text) >= max_chars:
            cur = Paragraph(text, labels, 1, sent.first_line)
            tb.paragraphs.append(cur)
        else:
            cur.text += " " + text
            cur.labels += [W] + labels
            cur.sentences += 1
        cur.tokens.extend(form for form, _ in tokens)
        cur.sents.append((text, tokens))
    if tb.n_sentences == 0:
        raise UserError("no sentences: a tokenizer needs a CoNLL-U treebank with '# text'", path)
    return tb
