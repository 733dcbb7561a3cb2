"""Writing tokenised (and optionally tagged) sentences as CoNLL-U (through the one writer,
``structkit.io.document.write_conllu``).

Each sentence is written as UD writes it: ``# newdoc`` / ``# newpar`` where it opens a
document or paragraph, ``# sent_id``, ``# text``, a range line ``a-b FORM`` before the words
of a multiword token, then one row per syntactic word. UPOS, XPOS, LEMMA, FEATS, HEAD and
DEPREL are filled from the lists given for them (a tagger's, a lemmatizer's, a parser's
output) and ``_`` otherwise (without heads: the form the dependency parser reads as input);
DEPS is ``_``.
``SpaceAfter=No`` goes in MISC of the range line for a multiword token and of the word
otherwise, so the surface tokens and MISC rebuild ``# text`` exactly.
"""
from __future__ import annotations

import operator
from typing import IO, TYPE_CHECKING, Iterable, Iterator, Sequence

from structkit.io.document import new_sentence
from structkit.io.document import write_conllu as write
from structkit.text.base import Sentence

if TYPE_CHECKING:
    from structkit.io.document import Sentence as DocSentence

__all__ = ["write_conllu", "sentence_text", "conllu_sentence"]


def sentence_text(sentence: Sentence) -> str:
    """The sentence as ``# text`` gives it: its tokens with one space wherever the input had
    whitespace (a sentence may span a line break, which a comment line cannot hold)."""
    parts = []
    for tok in sentence.tokens[:-1]:
        parts.append(tok.form)
        if tok.space_after:
            parts.append(" ")
    parts.append(sentence.tokens[-1].form)
    return "".join(parts)


def conllu_sentence(sent: Sentence, sent_id: str,
                    middle: Sequence[Sequence[str]] | None = None) -> "DocSentence":
    """The CoNLL-U sentence (held as lines) :func:`write_conllu` writes for ``sent``: its
    comments, ``sent_id``, and LEMMA..DEPREL from ``middle`` (six strings per word; ``_``
    without it)."""
    comments = (["# newdoc"] if sent.new_doc else []) + (["# newpar"] if sent.new_par else []) + \
        [f"# sent_id = {sent_id}", f"# text = {sentence_text(sent)}"]
    return new_sentence(((t.form, t.words, t.space_after) for t in sent.tokens), comments, middle)


def _tags(tags: Iterator[Sequence] | None, k: int, n: int, name: str) -> Sequence:
    """The next sentence's tags from ``tags`` (checked to hold ``n``), or ``_`` throughout."""
    if tags is None:
        return ["_"] * n
    got = next(tags, None)
    if got is None:
        raise ValueError(f"{name} has {k} sentences, fewer than the sentences written")
    if len(got) != n:
        raise ValueError(f"sentence {k + 1}: {name} has {len(got)} tags for {n} words")
    return got


COLUMNS = ("lemmas", "upos", "xpos", "feats", "heads", "deprels")


def write_conllu(sentences: Iterable[Sentence], out: IO[str],
                 upos: Iterable[Sequence[str]] | None = None,
                 xpos: Iterable[Sequence[str]] | None = None,
                 sent_id_prefix: str = "", start: int = 1, *,
                 lemmas: Iterable[Sequence[str]] | None = None,
                 feats: Iterable[Sequence[str]] | None = None,
                 heads: Iterable[Sequence[int]] | None = None,
                 deprels: Iterable[Sequence[str]] | None = None) -> int:
    """Write ``sentences`` to ``out`` as CoNLL-U; return how many were written.

    ``upos``/``xpos``/``lemmas``/``feats``/``deprels``: per sentence, one value per syntactic
    word (``_`` where a list is not given); ``heads``: per sentence, each word's head (an int,
    1-based, 0 for the root), as a parser predicts them. They are read alongside
    ``sentences``, so all may be generators. Sentence ids are ``sent_id_prefix`` followed by
    ``start``, ``start + 1``, ... Raises ValueError when the lists do not match the sentences
    or their words, a value holds whitespace, or a head is outside 0..n.
    """
    iters = {name: None if v is None else iter(v) for name, v in
             (("lemmas", lemmas), ("upos", upos), ("xpos", xpos), ("feats", feats),
              ("heads", heads), ("deprels", deprels))}
    count = 0
    for k, sent in enumerate(sentences):
        n = sum(len(tok.words) for tok in sent.tokens)
        cols = {name: _tags(it, k, n, name) for name, it in iters.items()}
        hs = cols["heads"]
        if iters["heads"] is not None:
            hs = [_head(h, i, k, n) for i, h in enumerate(hs)]
        middle = [(_column(cols["lemmas"][i], "lemma"), _column(cols["upos"][i], "upos"),
                   _column(cols["xpos"][i], "xpos"), _column(cols["feats"][i], "feats"), str(hs[i]),
                   _column(cols["deprels"][i], "deprel")) for i in range(n)]
        count += write([conllu_sentence(sent, f"{sent_id_prefix}{start + k}", middle)], out)
    for name, tags in iters.items():
        if tags is not None and next(tags, None) is not None:
            raise ValueError(f"{name} has more sentences than the {count} written")
    return count


def _head(h: object, i: int, k: int, n: int) -> int:
    """A head as an int in 0..n (numpy integers too); ValueError otherwise."""
    try:
        if isinstance(h, bool):
            raise TypeError
        v = operator.index(h)  # type: ignore[arg-type]
    except TypeError:
        v = -1
    if not 0 <= v <= n:
        raise ValueError(f"sentence {k + 1}: head {h!r} of word {i + 1} is not an integer in 0..{n}")
    return v


def _column(value: str | None, name: str) -> str:
    """A tag as a CoNLL-U column value; whitespace would break the row."""
    if not value:
        return "_"
    if any(c.isspace() for c in value):
        raise ValueError(f"cannot write {name} {value!r}: it contains whitespace")
    return value
