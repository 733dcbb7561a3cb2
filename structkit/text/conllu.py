"""Writing tokenised (and optionally tagged) sentences as CoNLL-U.

Each sentence is written as UD writes it: ``# newdoc`` / ``# newpar`` where it opens a
document or paragraph, ``# sent_id``, ``# text``, a range line ``a-b FORM`` before the words
of a multiword token, then one row per syntactic word with LEMMA, FEATS, HEAD, DEPREL and
DEPS left as ``_`` (the form the dependency parser reads as input without heads).
``SpaceAfter=No`` goes in MISC of the range line for a multiword token and of the word
otherwise, so the surface tokens and MISC rebuild ``# text`` exactly.
"""
from __future__ import annotations

from typing import IO, Iterable, Iterator, Sequence

from structkit.text.base import Sentence

__all__ = ["write_conllu", "sentence_text"]


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


def _tags(tags: Iterator[Sequence[str]] | None, k: int, n: int, name: str) -> Sequence[str]:
    """The next sentence's tags from ``tags`` (checked to hold ``n``), or ``_`` throughout."""
    if tags is None:
        return ["_"] * n
    got = next(tags, None)
    if got is None:
        raise ValueError(f"{name} has {k} sentences, fewer than the sentences written")
    if len(got) != n:
        raise ValueError(f"sentence {k + 1}: {name} has {len(got)} tags for {n} words")
    return got


def write_conllu(sentences: Iterable[Sentence], out: IO[str],
                 upos: Iterable[Sequence[str]] | None = None,
                 xpos: Iterable[Sequence[str]] | None = None,
                 sent_id_prefix: str = "", start: int = 1) -> int:
    """Write ``sentences`` to ``out`` as CoNLL-U; return how many were written.

    ``upos``/``xpos``: per sentence, one tag per syntactic word (``_`` where absent); they
    are read alongside ``sentences``, so all three may be generators. Sentence ids are
    ``sent_id_prefix`` followed by ``start``, ``start + 1``, ... Raises ValueError when the
    tag lists do not match the sentences or their words, or a tag holds whitespace.
    """
    upos_iter = None if upos is None else iter(upos)
    xpos_iter = None if xpos is None else iter(xpos)
    count = 0
    for k, sent in enumerate(sentences):
        n = sum(len(tok.words) for tok in sent.tokens)
        up = _tags(upos_iter, k, n, "upos")
        xp = _tags(xpos_iter, k, n, "xpos")
        lines = []
        if sent.new_doc:
            lines.append("# newdoc")
        if sent.new_par:
            lines.append("# newpar")
        lines.append(f"# sent_id = {sent_id_prefix}{start + k}")
        lines.append(f"# text = {sentence_text(sent)}")
        i = 0
        for tok in sent.tokens:
            misc = "_" if tok.space_after else "SpaceAfter=No"
            if len(tok.words) > 1:
                lines.append(f"{i + 1}-{i + len(tok.words)}\t{tok.form}\t_\t_\t_\t_\t_\t_\t_\t"
                             f"{misc}")
                misc = "_"
            for word in tok.words:
                tags = (_column(up[i], "upos"), _column(xp[i], "xpos"))
                i += 1
                lines.append(f"{i}\t{word}\t_\t{tags[0]}\t{tags[1]}\t_\t_\t_\t_\t{misc}")
        out.write("\n".join(lines) + "\n\n")
        count += 1
    for name, tags in (("upos", upos_iter), ("xpos", xpos_iter)):
        if tags is not None and next(tags, None) is not None:
            raise ValueError(f"{name} has more sentences than the {count} written")
    return count


def _column(value: str, name: str) -> str:
    """A tag as a CoNLL-U column value; whitespace would break the row."""
    if not value:
        return "_"
    if any(c.isspace() for c in value):
        raise ValueError(f"cannot write {name} {value!r}: it contains whitespace")
    return value
