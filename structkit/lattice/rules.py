"""Lemma edit rules: how a form becomes its lemma, as a class a classifier can choose.

A rule is ``(lower, cut_front, add_front, cut_end, add_end)``: lower-case the form (or not),
strip ``cut_front`` characters from its start and ``cut_end`` from its end, then put
``add_front`` before and ``add_end`` after what is left. It is computed from the longest
common substring of the form (or its lower-cased form, whichever shares more) and the lemma,
so that the rule of (form, lemma) applied to form gives lemma back, and the same rule serves
other forms with the same ending (``walked``/``walk`` and ``talked``/``talk``: cut 2).
Rules are written as strings (``rule_text``) in the model file.
"""
from __future__ import annotations

Rule = tuple[bool, int, str, int, str]
IDENTITY: Rule = (False, 0, "", 0, "")
LOWER: Rule = (True, 0, "", 0, "")


def _longest_common(a: str, b: str) -> tuple[int, int, int]:
    """(start in a, start in b, length) of the longest common substring (the first, leftmost
    in ``a``, of the longest)."""
    best = (0, 0, 0)
    prev = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        cur = [0] * (len(b) + 1)
        ai = a[i - 1]
        for j in range(1, len(b) + 1):
            if ai == b[j - 1]:
                k = prev[j - 1] + 1
                cur[j] = k
                if k > best[2]:
                    best = (i - k, j - k, k)
        prev = cur
    return best


MAX_LCS_CELLS = 64 * 64   # beyond this many (form, lemma) character pairs, the rule keeps the
                          # longest common prefix instead (the search is quadratic; words are short)


def _common_prefix(a: str, b: str) -> int:
    k = 0
    for x, y in zip(a, b):
        if x != y:
            break
        k += 1
    return k


def _rule_on(f: str, lemma: str, lower: bool) -> tuple[int, Rule]:
    if len(f) * len(lemma) > MAX_LCS_CELLS:   # a long token: linear, not quadratic
        k = _common_prefix(f, lemma)
        return k, (lower, 0, "", len(f) - k, lemma[k:])
    i, j, k = _longest_common(f, lemma)
    if k == 0:   # nothing shared: replace the whole form
        return 0, (lower, 0, "", len(f), lemma)
    return k, (lower, i, lemma[:j], len(f) - i - k, lemma[j + k:])


def make_rule(form: str, lemma: str) -> Rule:
    """The rule that turns ``form`` into ``lemma`` (``apply_rule(rule, form) == lemma``)."""
    if form == lemma:
        return IDENTITY
    k0, r0 = _rule_on(form, lemma, False)
    low = form.lower()
    if low != form and len(low) == len(form):   # lower-casing that keeps the length only
        k1, r1 = _rule_on(low, lemma, True)
        if k1 > k0:
            return r1
    return r0


def applies(rule: Rule, form: str) -> bool:
    """Whether ``rule`` can be applied to ``form``: what it cuts is there, and it leaves a lemma
    (a rule that cuts the whole form and adds nothing, learnt from ``renklerden`` -> ``renk``
    as a suffix rule, would make ``lerden``'s lemma empty, which no CoNLL-U column can hold)."""
    lower, cut_front, add_front, cut_end, add_end = rule
    if lower and len(form.lower()) != len(form):
        return False
    cut = cut_front + cut_end
    return cut < len(form) or (cut == len(form) and bool(add_front or add_end))


def apply_rule(rule: Rule, form: str) -> str:
    """``form`` edited by ``rule`` (``applies(rule, form)`` must hold)."""
    lower, cut_front, add_front, cut_end, add_end = rule
    f = form.lower() if lower else form
    core = f[cut_front:len(f) - cut_end]
    return add_front + core + add_end


def rule_text(rule: Rule) -> str:
    """A rule as one string (the model file's form), its five fields tab-separated."""
    lower, cut_front, add_front, cut_end, add_end = rule
    return f"{'L' if lower else 'K'}\t{cut_front}\t{add_front}\t{cut_end}\t{add_end}"


def parse_rule(text: str) -> Rule:
    """The rule written by :func:`rule_text` (ValueError for anything else)."""
    parts = text.split("\t")
    if len(parts) != 5 or parts[0] not in ("L", "K"):
        raise ValueError(f"bad lemma rule {text[:40]!r}")
    cut_front, cut_end = int(parts[1]), int(parts[3])
    if cut_front < 0 or cut_end < 0:
        raise ValueError(f"bad lemma rule {text[:40]!r}")
    return (parts[0] == "L", cut_front, parts[2], cut_end, parts[4])
