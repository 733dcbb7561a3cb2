"""The CoNLL 2018 shared task's metrics for a parsed CoNLL-U file against the gold one.

Reimplements the definitions of ``conll18_ud_eval.py`` (Zeman et al. 2018; Straka and Popel's
script, version 1.2), so structkit needs no copy of it:

* **Tokens**, **Sentences** and **Words** as :mod:`structkit.eval.tokenize` computes them
  (the two files must have the same text, whitespace aside); the words are aligned there, and
  every other metric is counted on those aligned (gold word, system word) pairs.
* **UPOS**, **XPOS**, **UFeats** (the universal features only: :data:`UNIVERSAL_FEATURES`,
  the list of the official script, compared as a sorted set), **AllTags** (the three together)
  and **Lemmas** (a gold lemma ``_`` matches any system lemma).
* **UAS**: the heads agree, that is the system head is the word aligned to the gold head
  (both roots, or a head that is not aligned at all, which never agrees). **LAS** adds the
  DEPREL, its subtype dropped (``nmod:poss`` is ``nmod``).
* **CLAS**, **MLAS** and **BLEX** count only words whose DEPREL is a content relation
  (:data:`CONTENT_DEPRELS`): gold words for recall, system words for precision. CLAS is LAS on
  them; MLAS adds UPOS, UFeats and the word's functional children (its dependents whose DEPREL
  is in :data:`FUNCTIONAL_DEPRELS`), each child's aligned word, DEPREL, UPOS and UFeats, all
  in order; BLEX adds the lemma (again ``_`` in gold matches anything).

Precision is correct / system words (or tokens, sentences), recall correct / gold, F1 their
harmonic mean, and AligndAcc correct / aligned words, as percentages; AligndAcc is None for
Tokens, Sentences and Words, as the official script leaves it blank.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from structkit.errors import UserError
from structkit.eval.tokenize import (
    align_words,
    check_characters,
    load_segmentation,
    segmentation_scores,
)
from structkit.io.conllx import check_tree

if TYPE_CHECKING:
    from structkit.eval.tokenize import Segmentation

__all__ = ["evaluate_ud", "report", "METRICS", "NAMES", "UNIVERSAL_FEATURES", "CONTENT_DEPRELS",
           "FUNCTIONAL_DEPRELS"]

# The relations of the official script: CLAS, MLAS and BLEX score the content ones; MLAS
# compares a content word's functional children.
CONTENT_DEPRELS = frozenset({
    "nsubj", "obj", "iobj", "csubj", "ccomp", "xcomp", "obl", "vocative", "expl", "dislocated",
    "advcl", "advmod", "discourse", "nmod", "appos", "nummod", "acl", "amod", "conj", "fixed",
    "flat", "compound", "list", "parataxis", "orphan", "goeswith", "reparandum", "root", "dep"})
FUNCTIONAL_DEPRELS = frozenset({"aux", "cop", "mark", "det", "clf", "case", "cc"})
# The features UFeats keeps: the official script's list (21 names; UD v2 has added Typo,
# NounClass, Clusivity and ExtPos since, which it drops as it drops language-specific ones).
UNIVERSAL_FEATURES = frozenset({
    "PronType", "NumType", "Poss", "Reflex", "Foreign", "Abbr", "Gender", "Animacy", "Number",
    "Case", "Definite", "Degree", "VerbForm", "Mood", "Tense", "Aspect", "Voice", "Evident",
    "Polarity", "Person", "Polite"})

# The metrics: JSON key and the official script's name, in its order.
METRICS = ("tokens", "sentences", "words", "upos", "xpos", "ufeats", "alltags", "lemmas",
           "uas", "las", "clas", "mlas", "blex")
NAMES = dict(zip(METRICS, ("Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags",
                           "Lemmas", "UAS", "LAS", "CLAS", "MLAS", "BLEX")))

_ROOT = -1          # the head of a root word
_UNALIGNED = -2     # a system head whose word is aligned to no gold word


@dataclass
class _Node:
    """One syntactic word's columns as the metrics compare them."""

    lemma: str
    upos: str
    xpos: str
    feats: str          # universal features only, sorted, '|'-joined ('' for none)
    deprel: str         # without its subtype
    head: int           # index of the head word in the file's word list, _ROOT for the root
    children: list[int] = field(default_factory=list)   # functional children, in word order

    @property
    def content(self) -> bool:
        return self.deprel in CONTENT_DEPRELS


def universal_feats(feats: str) -> str:
    """The universal features of a FEATS value, sorted: 'Number=Sing|Foo=Bar|Case=Nom' ->
    'Case=Nom|Number=Sing'."""
    return "|".join(sorted(f for f in feats.split("|") if f.split("=", 1)[0] in UNIVERSAL_FEATURES))


def _nodes(seg: Segmentation) -> list[_Node]:
    """The words of ``seg`` (read with ``keep``) as nodes; every sentence must be a tree with
    one root (UserError naming the file and the sentence's first line)."""
    nodes: list[_Node] = []
    for sent in seg.read:
        heads = sent.heads
        if heads is None:
            raise UserError("no HEAD in this sentence: eval --task ud scores CoNLL-U files with "
                            "ten columns and a dependency tree", seg.path, sent.line_of(0))
        problem = check_tree(heads, single_root=True)
        if problem is not None:
            raise UserError(f"not a tree: {problem}", seg.path, sent.line_of(0))
        base = len(nodes)
        for r, h in zip(sent.rows, heads):
            nodes.append(_Node(r[2], r[3], r[4], universal_feats(r[5]), r[7].split(":")[0],
                               base + h - 1 if h else _ROOT))
        for i in range(base, len(nodes)):
            if nodes[i].head != _ROOT and nodes[i].deprel in FUNCTIONAL_DEPRELS:
                nodes[nodes[i].head].children.append(i)
    if len(nodes) != len(seg.words):  # one node per word, in the same order
        raise AssertionError("words and nodes differ")
    return nodes


def _score(gold: int, system: int, correct: int, aligned: int | None) -> dict:
    return {"precision": 100.0 * correct / system if system else 0.0,
            "recall": 100.0 * correct / gold if gold else 0.0,
            "f1": 200.0 * correct / (gold + system) if gold + system else 0.0,
            "aligned_accuracy": None if aligned is None else
            100.0 * correct / aligned if aligned else 0.0,
            "gold": gold, "system": system, "correct": correct, "aligned": aligned}


def evaluate_ud(gold_path: str, system_path: str) -> dict:
    """Every metric of the CoNLL 2018 shared task for ``system_path`` against ``gold_path``.

    Returns ``{metric: {...}}`` for the keys of :data:`METRICS`, each with ``precision``,
    ``recall``, ``f1`` and ``aligned_accuracy`` (percentages; the last None for tokens,
    sentences and words) and the counts ``gold``, ``system``, ``correct`` and ``aligned``
    (None where ``aligned_accuracy`` is). Raises UserError for a malformed file, a sentence
    that is not a one-rooted tree, or texts that differ.
    """
    gold_seg = load_segmentation(gold_path, keep=True)
    gold = _nodes(gold_seg)
    system_seg = load_segmentation(system_path, keep=True)
    system = _nodes(system_seg)
    check_characters(gold_seg, system_seg)
    pairs = align_words(gold_seg.words, system_seg.words)
    to_gold = dict((s, g) for g, s in pairs)

    def aligned(s: int) -> int:
        """The gold word a system word (a head, a child) is aligned to."""
        return s if s == _ROOT else to_gold.get(s, _UNALIGNED)

    def gold_key(g: _Node) -> tuple:
        return g.head, g.deprel

    def system_key(s: _Node) -> tuple:
        return aligned(s.head), s.deprel

    def lemma(g: _Node, s: _Node) -> bool:
        return g.lemma == "_" or g.lemma == s.lemma

    def children(g: _Node, s: _Node) -> bool:
        return ([(c, gold[c].deprel, gold[c].upos, gold[c].feats) for c in g.children]
                == [(aligned(c), system[c].deprel, system[c].upos, system[c].feats)
                    for c in s.children])

    def las(g: _Node, s: _Node) -> bool:
        return gold_key(g) == system_key(s)

    agree: dict[str, Callable[[_Node, _Node], bool]] = {
        "upos": lambda g, s: g.upos == s.upos,
        "xpos": lambda g, s: g.xpos == s.xpos,
        "ufeats": lambda g, s: g.feats == s.feats,
        "alltags": lambda g, s: (g.upos, g.xpos, g.feats) == (s.upos, s.xpos, s.feats),
        "lemmas": lemma,
        "uas": lambda g, s: g.head == aligned(s.head),
        "las": las,
        "clas": las,
        "mlas": lambda g, s: (las(g, s) and (g.upos, g.feats) == (s.upos, s.feats)
                              and children(g, s)),
        "blex": lambda g, s: las(g, s) and lemma(g, s),
    }
    result = segmentation_scores(gold_seg, system_seg, pairs)
    for name in ("tokens", "sentences", "words"):
        result[name] = _score(result[name]["gold"], result[name]["system"], result[name]["correct"], None)
    for name, same in agree.items():
        content = name in ("clas", "mlas", "blex")
        counted = [(gold[g], system[s]) for g, s in pairs if not content or gold[g].content]
        result[name] = _score(sum(1 for w in gold if not content or w.content),
                              sum(1 for w in system if not content or w.content),
                              sum(1 for g, s in counted if same(g, s)), len(counted))
    return result


def report(result: dict, metrics: Sequence[str] = METRICS) -> str:
    """The scores as the official script's table (its -v layout): Metric | Precision |
    Recall | F1 Score | AligndAcc, one row per metric."""
    lines = ["Metric     | Precision |    Recall |  F1 Score | AligndAcc",
             "-----------+-----------+-----------+-----------+-----------"]
    for name in metrics:
        s = result[name]
        acc = "" if s["aligned_accuracy"] is None else f"{s['aligned_accuracy']:10.2f}"
        lines.append(f"{NAMES[name]:11}|{s['precision']:10.2f} |{s['recall']:10.2f} |"
                     f"{s['f1']:10.2f} |{acc}")
    return "\n".join(lines)
