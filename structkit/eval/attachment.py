"""Dependency evaluation: attachment scores (UAS, LAS), root accuracy, complete match and a
per-label table, under two conventions.

**Penn Treebank convention** (the English dependency parsing literature: Yamada & Matsumoto
2003; Huang & Sagae 2010; Table 4 of the lookahead paper): punctuation tokens are left out.
On PTB-style data a token is punctuation when its GOLD part-of-speech tag is one of the Penn
Treebank punctuation tags `` '' , . : (``#``, ``$``, ``-LRB-`` and ``-RRB-`` are *not*
punctuation). On Universal Dependencies data (the gold UPOS column holds UD tags such as
PUNCT, NOUN or VERB) a token is punctuation when its gold UPOS is ``PUNCT``. LAS under this
convention compares the full DEPREL (as the CoNLL-X evaluation script does).

**CoNLL 2018 shared-task convention**: every syntactic word counts, punctuation included
(multiword ranges and empty nodes are not words); LAS compares the head and the universal
part of DEPREL (before the first ':'); ``las_full`` compares the full DEPREL.
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["PUNCT_TAGS", "UD_TAGS", "AttachmentCounter", "format_report", "is_punct",
           "scoring_tags", "universal_deprel"]

# The Penn Treebank punctuation tags excluded from UAS (gold POS, never the predicted one).
PUNCT_TAGS = {"``", "''", ",", ".", ":"}

# UPOS tags that mark a file as Universal Dependencies (SYM and X are left out: the Penn
# Treebank has a SYM tag too).
UD_TAGS = frozenset({"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART",
                     "PRON", "PROPN", "PUNCT", "SCONJ", "VERB"})

NO_LABEL = "_"


def is_punct(tag: str) -> bool:
    """True if a gold POS tag marks a punctuation token (one of ``PUNCT_TAGS``)."""
    return tag in PUNCT_TAGS


def scoring_tags(xpos: Sequence[str], upos: Sequence[str]) -> list[str]:
    """The gold tag per token used to decide punctuation: the fine PTB tag (CoNLL-X POSTAG /
    CoNLL-U XPOS), falling back to the coarse one (CPOSTAG / UPOS) where it is '_'."""
    if len(xpos) != len(upos):
        raise ValueError(f"{len(xpos)} fine tags but {len(upos)} coarse tags")
    return [u if x == "_" else x for x, u in zip(xpos, upos)]


def universal_deprel(deprel: str) -> str:
    """The universal part of a DEPREL: what comes before the first ':' (``nmod:poss`` -> ``nmod``)."""
    return deprel.split(":", 1)[0]


def _percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


class _Rule:
    """The counts of one punctuation rule (which tokens are scored)."""

    __slots__ = ("scored", "correct", "labelled", "complete")

    def __init__(self) -> None:
        self.scored = self.correct = self.labelled = self.complete = 0


class _Label:
    __slots__ = ("gold", "pred", "head", "label", "both", "pred_both")

    def __init__(self) -> None:
        self.gold = self.pred = self.head = self.label = self.both = self.pred_both = 0


class AttachmentCounter:
    """Streams sentences of (gold heads, predicted heads, gold POS) and scores them.

    Heads are 1-based, 0 = the root. ``score()`` returns, percentages in 0..100:

    - ``uas``: percent of non-punctuation tokens whose predicted head is the gold head (the
      Penn Treebank convention, see the module docstring);
    - ``uas_with_punct``: the same over all tokens;
    - ``root_accuracy``: percent of gold root tokens (gold head 0; punctuation or not) whose
      predicted head is also 0. It is recall of the root attachment: a token wrongly attached
      to the root is counted by ``uas`` but not here;
    - ``complete_match``: percent of sentences in which every non-punctuation token has the
      right head (a sentence made only of punctuation counts as a match);
    - ``complete_match_with_punct``: percent of sentences in which every token has the right
      head;
    - ``tokens``, ``scored_tokens`` (non-punctuation tokens), ``root_tokens`` (gold roots),
      ``sentences``: the counts behind them.

    ``score(full=True)`` adds the labelled scores and both conventions (see ``score``).

    Punctuation: with ``punct="auto"`` (the default) it is decided by the PTB tags in
    ``gold_pos``, unless ``upos`` is passed to ``add`` and some gold UPOS is a UD tag
    (``UD_TAGS``), in which case the whole input is scored with UPOS ``PUNCT`` as punctuation
    (both are counted as sentences stream in, and ``score`` picks one). ``punct="ptb"`` or
    ``"upos"`` forces one rule.

    A percentage whose denominator is 0 (nothing added, no scored tokens) is 0.0.
    """

    RULES = ("ptb", "upos")

    def __init__(self, punct: str = "auto") -> None:
        if punct not in ("auto", *self.RULES):
            raise ValueError(f"punct must be auto, ptb or upos, got {punct!r}")
        self.punct = punct
        self.sentences = 0
        self.tokens = 0
        self.correct = 0               # all tokens with the right head
        self.root_tokens = 0           # gold head 0
        self.root_correct = 0
        self.complete_with_punct = 0   # sentences right on every token
        self.rules = {r: _Rule() for r in self.RULES}
        self.ud_seen = False           # some gold UPOS is a UD tag
        self.deprels_given = False
        self.gold_labelled = False     # some gold DEPREL is not '_'
        self.pred_labelled = False     # some predicted DEPREL is not '_'
        self.las_correct = 0           # head and universal DEPREL right, all words
        self.las_full_correct = 0      # head and full DEPREL right, all words
        self.labels: dict[str, _Label] = {}

    # kept for code that reads the counter's attributes directly
    @property
    def scored_tokens(self) -> int:
        return self.rules[self._rule()].scored

    @property
    def scored_correct(self) -> int:
        return self.rules[self._rule()].correct

    @property
    def complete(self) -> int:
        return self.rules[self._rule()].complete

    def _rule(self) -> str:
        if self.punct != "auto":
            return self.punct
        return "upos" if self.ud_seen else "ptb"

    def add(self, gold_heads: Sequence[int], pred_heads: Sequence[int],
            gold_pos: Sequence[str], *, upos: Sequence[str] | None = None,
            gold_deprels: Sequence[str] | None = None,
            pred_deprels: Sequence[str] | None = None) -> None:
        """Count one sentence. ``gold_pos`` decides punctuation under the PTB rule, ``upos``
        (the gold UPOS, optional) under the UD rule; ``gold_deprels`` and ``pred_deprels``
        (together or not at all) give the labelled scores. Raises ValueError if the
        sequences differ in length (nothing is counted then)."""
        n = len(gold_heads)
        if len(pred_heads) != n or len(gold_pos) != n:
            raise ValueError(f"sentence {self.sentences + 1}: {n} gold heads, "
                             f"{len(pred_heads)} predicted heads and {len(gold_pos)} gold POS "
                             "tags; they must be equal")
        if upos is not None and len(upos) != n:
            raise ValueError(f"sentence {self.sentences + 1}: {len(upos)} UPOS tags for {n} tokens")
        if (gold_deprels is None) != (pred_deprels is None):
            raise ValueError("gold_deprels and pred_deprels go together")
        if gold_deprels is not None and (len(gold_deprels) != n or len(pred_deprels) != n):
            raise ValueError(f"sentence {self.sentences + 1}: {len(gold_deprels)} gold and "
                             f"{len(pred_deprels)} predicted DEPRELs for {n} tokens")
        labelled = gold_deprels is not None
        gd = gold_deprels if labelled else [NO_LABEL] * n
        pd = pred_deprels if labelled else [NO_LABEL] * n
        up = upos if upos is not None else [NO_LABEL] * n
        ptb, ud = self.rules["ptb"], self.rules["upos"]
        wrong = wrong_ptb = wrong_ud = 0
        for g, p, tag, u, gl, pl in zip(gold_heads, pred_heads, gold_pos, up, gd, pd):
            hit = g == p
            wrong += not hit
            full_hit = hit and gl == pl
            if tag not in PUNCT_TAGS:
                ptb.scored += 1
                ptb.correct += hit
                ptb.labelled += full_hit
                wrong_ptb += not hit
            if u != "PUNCT":
                ud.scored += 1
                ud.correct += hit
                ud.labelled += full_hit
                wrong_ud += not hit
            if g == 0:
                self.root_tokens += 1
                self.root_correct += hit
            if labelled:
                ug, up_ = universal_deprel(gl), universal_deprel(pl)
                self.las_correct += hit and ug == up_
                self.las_full_correct += full_hit
                lg = self._label(ug)
                lg.gold += 1
                lg.head += hit
                lg.label += ug == up_
                lg.both += hit and ug == up_
                lp = self._label(up_)
                lp.pred += 1
                lp.pred_both += hit and ug == up_
        self.sentences += 1
        self.tokens += n
        self.correct += n - wrong
        ptb.complete += wrong_ptb == 0
        ud.complete += wrong_ud == 0
        self.complete_with_punct += wrong == 0
        if upos is not None and not self.ud_seen:
            self.ud_seen = any(t in UD_TAGS for t in upos)
        if labelled:
            self.deprels_given = True
            self.gold_labelled = self.gold_labelled or any(d != NO_LABEL for d in gd)
            self.pred_labelled = self.pred_labelled or any(d != NO_LABEL for d in pd)

    def _label(self, name: str) -> _Label:
        c = self.labels.get(name)
        if c is None:
            c = self.labels[name] = _Label()
        return c

    def missing_labels(self) -> str | None:
        """Why LAS cannot be computed ('no DEPRELs given', 'no labels in the gold', 'no labels
        in the prediction'), or None when it can."""
        if not self.deprels_given:
            return "no DEPRELs given"
        if not self.gold_labelled:
            return "no labels in the gold"
        if not self.pred_labelled:
            return "no labels in the prediction"
        return None

    def score(self, full: bool = False) -> dict:
        """The scores so far (see the class docstring). With ``full``, also:

        - ``punctuation``: the rule used for the PTB convention, ``"ptb-tags"`` (gold POS in
          `` '' , . :) or ``"upos-punct"`` (gold UPOS PUNCT);
        - ``labelled``: whether LAS could be computed; ``labels_missing``: why not (or None);
        - ``ptb``: ``{uas, las, words}``: punctuation excluded, LAS on the full DEPREL;
        - ``conll18``: ``{uas, las, las_full, words}``: every word, LAS on the universal
          DEPREL, ``las_full`` on the full DEPREL;
        - ``per_label``: per universal DEPREL (of the gold or the prediction), over every word:
          ``count`` (gold tokens), ``head`` (percent with the right head), ``label`` (percent
          with the right universal label), ``las`` (both right; = recall), ``predicted``
          (tokens predicted with it), ``precision`` (percent of those with head and label
          right), ``f1``. A rate over no tokens is None (a label only predicted has no
          ``head``, ``label``, ``las``; one never predicted no ``precision``).

        LAS values and ``per_label`` are None when ``labelled`` is false.
        """
        rule = self.rules[self._rule()]
        out = {
            "uas": _percent(rule.correct, rule.scored),
            "uas_with_punct": _percent(self.correct, self.tokens),
            "root_accuracy": _percent(self.root_correct, self.root_tokens),
            "complete_match": _percent(rule.complete, self.sentences),
            "complete_match_with_punct": _percent(self.complete_with_punct, self.sentences),
            "tokens": self.tokens,
            "scored_tokens": rule.scored,
            "root_tokens": self.root_tokens,
            "sentences": self.sentences,
        }
        if not full:
            return out
        missing = self.missing_labels()
        has = missing is None
        per_label = None
        if has:
            per_label = {}
            for name, c in self.labels.items():
                precision = _percent(c.pred_both, c.pred)
                recall = _percent(c.both, c.gold)
                # a label only predicted has no head/label/LAS rate (None), one never
                # predicted no precision (None); F1 is 0 for both
                per_label[name] = {
                    "count": c.gold,
                    "head": _percent(c.head, c.gold) if c.gold else None,
                    "label": _percent(c.label, c.gold) if c.gold else None,
                    "las": recall if c.gold else None,
                    "predicted": c.pred,
                    "precision": precision if c.pred else None,
                    "f1": _f1(precision, recall)}
        out.update({
            "punctuation": "upos-punct" if self._rule() == "upos" else "ptb-tags",
            "labelled": has,
            "labels_missing": missing,
            "ptb": {"uas": out["uas"],
                    "las": _percent(rule.labelled, rule.scored) if has else None,
                    "words": rule.scored},
            "conll18": {"uas": out["uas_with_punct"],
                        "las": _percent(self.las_correct, self.tokens) if has else None,
                        "las_full": _percent(self.las_full_correct, self.tokens) if has else None,
                        "words": self.tokens},
            "per_label": per_label,
        })
        return out


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}%"


def format_report(scores: dict, max_labels: int | None = None) -> str:
    """The text report of ``AttachmentCounter.score(full=True)``: the historical first line
    (UAS without and with punctuation, root, complete match), one line per convention, and the
    per-label table sorted by gold frequency (at most ``max_labels`` rows; None: all)."""
    s = scores
    lines = [f"UAS {s['uas']:.2f}% (punctuation excluded, {s['scored_tokens']} "
             f"tokens); with punctuation {s['uas_with_punct']:.2f}% "
             f"({s['tokens']} tokens); root {s['root_accuracy']:.2f}%; "
             f"complete match {s['complete_match']:.2f}% "
             f"(with punctuation {s['complete_match_with_punct']:.2f}%; "
             f"{s['sentences']} sentences)"]
    rule = ("gold UPOS PUNCT, UD data" if s["punctuation"] == "upos-punct"
            else "gold POS `` '' , . :")
    ptb, c18 = s["ptb"], s["conll18"]
    lines.append(f"Penn Treebank convention (punctuation excluded by {rule}; LAS on the full "
                 f"DEPREL): UAS {_pct(ptb['uas'])}  LAS {_pct(ptb['las'])}  ({ptb['words']} words)")
    lines.append(f"CoNLL 2018 convention (every word, punctuation included; LAS on the universal "
                 f"DEPREL): UAS {_pct(c18['uas'])}  LAS {_pct(c18['las'])}  (with subtypes "
                 f"{_pct(c18['las_full'])}; {c18['words']} words)")
    if not s["labelled"]:
        lines.append(f"LAS not available: {s['labels_missing']}")
        return "\n".join(lines)
    rows = sorted(s["per_label"].items(), key=lambda kv: (-kv[1]["count"], -kv[1]["predicted"], kv[0]))
    shown = rows if max_labels is None else rows[:max_labels]
    width = max([5] + [len(name) for name, _ in shown])
    lines.append("")
    lines.append("per label (CoNLL 2018: every word, universal DEPREL; by gold frequency):")
    lines.append(f"{'label':<{width}}  {'gold':>6}  {'head%':>6}  {'label%':>6}  {'LAS%':>6}  "
                 f"{'pred':>6}  {'prec%':>6}  {'F1':>6}")
    for name, r in shown:
        cell = lambda v: f"{'-':>6}" if v is None else f"{v:>6.2f}"  # noqa: E731
        lines.append(f"{name:<{width}}  {r['count']:>6}  {cell(r['head'])}  {cell(r['label'])}  "
                     f"{cell(r['las'])}  {r['predicted']:>6}  {cell(r['precision'])}  {cell(r['f1'])}")
    if len(shown) < len(rows):
        lines.append(f"({len(rows) - len(shown)} more labels in --json)")
    return "\n".join(lines)
