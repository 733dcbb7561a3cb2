"""Evaluating tokenisation and sentence splitting against a gold CoNLL-U file.

The method is the one of the CoNLL 2018 shared task's ``conll18_ud_eval.py`` (Zeman et al.
2018), reimplemented here so structkit needs no copy of that script:

* Both files are read as one stream of characters: the FORMs of the surface tokens (the
  range line's FORM for a multiword token) with every whitespace character removed. The two
  streams must be identical, since a tokeniser only decides where the boundaries are; the
  first difference is a ``UserError`` naming both places.
* **Tokens**: a surface token is its span (start, end) in that stream; a system token is
  correct when a gold token has the same span.
* **Sentences**: the span from a sentence's first character to its last; correct as tokens.
* **Words** (syntactic words): a word of a plain token has the token's span; the words of a
  multiword token all carry the span of that token. Outside multiword tokens, words match on
  identical spans. Where a multiword token of either file begins, the smallest region whose
  edges are token edges in both files and that covers every multiword token it touches is
  taken, and within it gold and system words are matched by a longest common subsequence of
  their lowercased forms, whitespace removed (``do n't`` against ``do n't`` scores 2,
  against ``don't`` 0). :func:`align_words` gives the aligned pairs themselves, the ones the
  official script pairs (``structkit.eval.ud`` scores the columns of those words).

Precision, recall and F1 are percentages (0-100); each is 0.0 when there is nothing to count.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from structkit.errors import UserError, quote
from structkit.io.conllu import read_trees
from structkit.io.document import Sentence
from structkit.io.files import display_name

__all__ = ["evaluate_tokenization", "report", "METRICS", "Segmentation", "load_segmentation",
           "check_characters", "align_words", "segmentation_scores", "span_matches", "score"]

METRICS = ("tokens", "sentences", "words")


@dataclass(frozen=True)
class _Word:
    """A syntactic word: the span of its surface token, its lowercased form, and whether that
    token is a multiword token."""

    start: int
    end: int
    form: str
    multiword: bool


@dataclass
class Segmentation:
    """One file as the evaluation sees it: the non-whitespace characters and the spans of its
    tokens, sentences and words; ``where`` locates each token for error messages; ``read``,
    the sentences as read (kept when asked: ``structkit.eval.ud`` scores their columns), whose
    words are ``words`` in the same order."""

    path: str
    chars: str = ""
    tokens: list[tuple[int, int]] = field(default_factory=list)
    sentences: list[tuple[int, int]] = field(default_factory=list)
    words: list[_Word] = field(default_factory=list)
    where: list[tuple[int, int, str]] = field(default_factory=list)  # (line, token no., form)
    read: list[Sentence] = field(default_factory=list)


def _strip_space(form: str) -> str:
    # conll18_ud_eval removes Unicode spaces from forms so that a tokeniser may keep or drop
    # a space inside a token (e.g. "3 1/2") without changing the character stream.
    return "".join(form.split())


def load_segmentation(path: str, keep: bool = False) -> Segmentation:
    """Read a CoNLL-U (or CoNLL-X) file into its character stream and spans (and, with
    ``keep``, its sentences)."""
    seg = Segmentation(display_name(path))
    parts: list[str] = []
    n = 0                       # characters so far
    for sent in read_trees(path):
        if keep:
            seg.read.append(sent)
        ranges = {first: (last, form) for first, last, form in sent.multiword}
        forms = sent.forms
        first_line = sent.line_of(0)
        sent_start = n
        i = 0
        number = 0
        while i < len(forms):
            if i + 1 in ranges:
                last, form = ranges[i + 1]
                words = forms[i:last]
                multiword = True
            else:
                form, words, multiword = forms[i], forms[i:i + 1], False
            chars = _strip_space(form)
            number += 1
            if not chars:
                raise UserError(f"token {number} of the sentence at line {first_line} "
                                f"is only whitespace", seg.path, first_line)
            start, n = n, n + len(chars)
            parts.append(chars)
            seg.tokens.append((start, n))
            seg.where.append((first_line, number, form))
            seg.words.extend(_Word(start, n, _strip_space(w).lower(), multiword) for w in words)
            i += len(words)
        seg.sentences.append((sent_start, n))
    seg.chars = "".join(parts)
    return seg


def check_characters(gold: Segmentation, system: Segmentation) -> None:
    """Raise UserError at the first character where the two files' texts differ."""
    if gold.chars == system.chars:
        return
    n = min(len(gold.chars), len(system.chars))
    k = next((i for i in range(n) if gold.chars[i] != system.chars[i]), n)

    def locate(seg: Segmentation) -> tuple[str, int | None]:
        if k >= len(seg.chars):
            return "the end of the file", None
        t = _token_at(seg.tokens, k)
        line, number, form = seg.where[t]
        return f"token {number} {quote(form)} of the sentence at line {line}", line

    gold_at, _ = locate(gold)
    sys_at, sys_line = locate(system)
    g = gold.chars[k:k + 20]
    s = system.chars[k:k + 20]
    raise UserError(f"the text differs from the gold file's (whitespace ignored) at character "
                    f"{k + 1}: system has {s!r} at {sys_at}, gold {gold.path} has {g!r} at "
                    f"{gold_at}", system.path, sys_line)


def _token_at(tokens: Sequence[tuple[int, int]], k: int) -> int:
    """Index of the token whose span contains character ``k`` (binary search)."""
    lo, hi = 0, len(tokens) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tokens[mid][0] <= k:
            lo = mid
        else:
            hi = mid - 1
    return lo


def score(gold: int, system: int, correct: int) -> dict:
    return {"precision": 100.0 * correct / system if system else 0.0,
            "recall": 100.0 * correct / gold if gold else 0.0,
            "f1": 200.0 * correct / (gold + system) if gold + system else 0.0,
            "gold": gold, "system": system, "correct": correct}


def span_matches(gold: Sequence[tuple[int, int]], system: Sequence[tuple[int, int]]) -> int:
    """How many spans occur in both sorted, non-overlapping span lists."""
    correct = gi = si = 0
    while gi < len(gold) and si < len(system):
        if system[si][0] < gold[gi][0]:
            si += 1
        elif gold[gi][0] < system[si][0]:
            gi += 1
        else:
            correct += gold[gi][1] == system[si][1]
            gi += 1
            si += 1
    return correct


def _past_region(words: Sequence[_Word], i: int, end: int) -> bool:
    """True once word ``i`` lies outside a multiword region ending (so far) at ``end``."""
    if i >= len(words):
        return True
    if words[i].multiword:
        return words[i].start >= end
    return words[i].end > end


def _region(gold: Sequence[_Word], system: Sequence[_Word], gi: int, si: int
            ) -> tuple[int, int, int, int]:
    """The multiword region starting at gold word ``gi`` / system word ``si`` (one of them is
    in a multiword token): returns (gold start, system start, gold end, system end) indices."""
    if gold[gi].multiword:
        end = gold[gi].end
        if not system[si].multiword and system[si].start < gold[gi].start:
            si += 1
    else:
        end = system[si].end
        if not gold[gi].multiword and gold[gi].start < system[si].start:
            gi += 1
    gs, ss = gi, si
    while not _past_region(gold, gi, end) or not _past_region(system, si, end):
        if gi < len(gold) and (si >= len(system) or gold[gi].start <= system[si].start):
            word = gold[gi]
            gi += 1
        else:
            word = system[si]
            si += 1
        if word.multiword and word.end > end:
            end = word.end
    return gs, ss, gi, si


def _lcs_pairs(gold: Sequence[_Word], system: Sequence[_Word]) -> list[tuple[int, int]]:
    """The (gold, system) positions of a longest common subsequence of the two lists' forms,
    the one conll18_ud_eval picks: from the front, equal forms are paired at once, else the
    gold word is skipped when that loses nothing, else the system word."""
    n, m = len(gold), len(system)
    # rest[g][s]: the LCS length of gold[g:] and system[s:] (a row and column of 0 past the end)
    rest = [[0] * (m + 1) for _ in range(n + 1)]
    for g in range(n - 1, -1, -1):
        row, below = rest[g], rest[g + 1]
        for s in range(m - 1, -1, -1):
            row[s] = below[s + 1] + 1 if gold[g].form == system[s].form else max(below[s], row[s + 1])
    pairs = []
    g = s = 0
    while g < n and s < m:
        if gold[g].form == system[s].form:
            pairs.append((g, s))
            g += 1
            s += 1
        elif rest[g][s] == rest[g + 1][s]:
            g += 1
        else:
            s += 1
    return pairs


def align_words(gold: Sequence[_Word], system: Sequence[_Word]) -> list[tuple[int, int]]:
    """The aligned words, as (gold index, system index) pairs in file order (see the module
    docstring): equal spans outside multiword regions, the LCS of forms within them."""
    pairs: list[tuple[int, int]] = []
    gi = si = 0
    while gi < len(gold) and si < len(system):
        if gold[gi].multiword or system[si].multiword:
            gs, ss, gi, si = _region(gold, system, gi, si)
            pairs.extend((gs + g, ss + s) for g, s in _lcs_pairs(gold[gs:gi], system[ss:si]))
        elif (gold[gi].start, gold[gi].end) == (system[si].start, system[si].end):
            pairs.append((gi, si))
            gi += 1
            si += 1
        elif gold[gi].start <= system[si].start:
            gi += 1
        else:
            si += 1
    return pairs


def evaluate_tokenization(gold_path: str, pred_path: str) -> dict:
    """Score the tokens, sentences and words of ``pred_path`` against ``gold_path``.

    Both are CoNLL-U files (CoNLL-X works too, without multiword tokens) of the same text.
    Returns ``{"tokens": {...}, "sentences": {...}, "words": {...}}``, each with
    ``precision``, ``recall``, ``f1`` (percentages) and the counts ``gold``, ``system`` and
    ``correct``. Raises UserError on a malformed file or when the texts differ.
    """
    gold = load_segmentation(gold_path)
    system = load_segmentation(pred_path)
    check_characters(gold, system)
    return segmentation_scores(gold, system, align_words(gold.words, system.words))


def segmentation_scores(gold: Segmentation, system: Segmentation,
                        pairs: Sequence[tuple[int, int]]) -> dict:
    """The tokens, sentences and words scores of two segmentations of the same text, given
    their aligned words (:func:`align_words`)."""
    return {
        "tokens": score(len(gold.tokens), len(system.tokens),
                        span_matches(gold.tokens, system.tokens)),
        "sentences": score(len(gold.sentences), len(system.sentences),
                           span_matches(gold.sentences, system.sentences)),
        "words": score(len(gold.words), len(system.words), len(pairs)),
    }


def report(result: dict) -> str:
    """The scores of ``evaluate_tokenization`` as a small text table, one metric per row."""
    lines = [f"{'':10}{'precision':>10}{'recall':>9}{'F1':>8}{'gold':>9}{'system':>9}"
             f"{'correct':>9}"]
    for name in METRICS:
        s = result[name]
        lines.append(f"{name.capitalize():10}{s['precision']:10.2f}{s['recall']:9.2f}"
                     f"{s['f1']:8.2f}{s['gold']:9d}{s['system']:9d}{s['correct']:9d}")
    return "\n".join(lines)
