"""Significance tests for comparing two systems: McNemar's test and the sign test.

McNemar's test (as used by Mančev & Todorović to compare k-best taggers against the
single-best ones) looks only at the tokens on which exactly one of the two systems is
right. Under the null hypothesis each such discordant token is equally likely to favour
either system, so the count of one kind is Binomial(n01 + n10, 1/2).

Everything is computed with the standard library (``math.lgamma``/``math.erfc``); the
binomial tail is summed in log space so counts in the millions neither overflow nor take
one loop step per possible outcome.
"""
from __future__ import annotations

import itertools
import math
from typing import Iterable, Sequence

__all__ = ["mcnemar", "sign_test"]

_MISSING = object()
_LOG2 = math.log(2.0)


def _binom_half_log_tail(m: int, n: int) -> float:
    """Natural log of P(X <= m) for X ~ Binomial(n, 1/2), with 0 <= m <= n // 2.

    The pmf increases up to the mode, so the terms are summed from ``m`` downwards using
    the exact ratio pmf(i-1)/pmf(i) = i / (n - i + 1) and the sum stops once the remaining
    terms cannot change it at double precision.
    """
    log_pm = math.lgamma(n + 1) - math.lgamma(m + 1) - math.lgamma(n - m + 1) - n * _LOG2
    total = term = 1.0
    i = m
    while i > 0:
        term *= i / (n - i + 1)
        total += term
        if term < total * 1e-17:
            break
        i -= 1
    return log_pm + math.log(total)


def _binom_two_sided(k: int, n: int) -> float:
    """Exact two-sided p-value for ``k`` successes in ``n`` fair-coin trials.

    Sums the probabilities of every outcome at least as unlikely as ``k``; since
    Binomial(n, 1/2) is symmetric this is 2 * P(X <= min(k, n - k)), capped at 1.
    Returns 1.0 when ``n == 0``.
    """
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 1.0
    m = min(k, n - k)
    if 2 * m == n:
        return 1.0
    log_p = _LOG2 + _binom_half_log_tail(m, n)
    return 1.0 if log_p >= 0.0 else math.exp(log_p)


def _check_count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def sign_test(wins_a: int, wins_b: int) -> float:
    """Exact two-sided sign test p-value for ``wins_a`` against ``wins_b`` (ties excluded).

    Returns 1.0 when there are no wins at all. Raises ValueError on negative or
    non-integer counts.
    """
    _check_count("wins_a", wins_a)
    _check_count("wins_b", wins_b)
    return _binom_two_sided(wins_a, wins_a + wins_b)


def _chi2_sf_1dof(x: float) -> float:
    """Survival function of the chi-square distribution with one degree of freedom."""
    return math.erfc(math.sqrt(x / 2.0))


def mcnemar(gold: Iterable[Sequence[str]], pred_a: Iterable[Sequence[str]],
            pred_b: Iterable[Sequence[str]]) -> dict:
    """McNemar's test on the token-level correctness of systems A and B.

    ``gold``, ``pred_a`` and ``pred_b`` are parallel sentences of tags. Returns
    ``{"tokens", "a_correct", "b_correct", "a_only", "b_only", "exact_p", "chi2",
    "chi2_p", "better"}`` where ``a_only`` (n01) counts tokens A gets right and B wrong,
    ``b_only`` (n10) the reverse; ``exact_p`` is the exact two-sided binomial p-value,
    ``chi2`` the continuity-corrected statistic (|n01 - n10| - 1)^2 / (n01 + n10) and
    ``chi2_p`` its p-value under chi-square with 1 dof. With no discordant tokens both
    p-values are 1.0 and ``chi2`` is 0.0. ``better`` is ``"a"``, ``"b"`` or ``"tie"``
    by which system is right on more tokens. Raises ValueError (naming the 0-based
    sentence index) on any length mismatch.
    """
    tokens = a_correct = b_correct = a_only = b_only = 0
    names = ("gold", "predicted A", "predicted B")
    for i, sents in enumerate(itertools.zip_longest(gold, pred_a, pred_b, fillvalue=_MISSING)):
        if any(s is _MISSING for s in sents):
            ended = [n for n, s in zip(names, sents) if s is _MISSING]
            raise ValueError(f"{' and '.join(ended)} input ends after {i} sentences, "
                             f"the other has more")
        g, a, b = sents
        if not len(g) == len(a) == len(b):
            raise ValueError(f"sentence {i}: gold has {len(g)} tags, predicted A has "
                             f"{len(a)}, predicted B has {len(b)}")
        for gt, at, bt in zip(g, a, b):
            a_hit = at == gt
            b_hit = bt == gt
            tokens += 1
            a_correct += a_hit
            b_correct += b_hit
            if a_hit and not b_hit:
                a_only += 1
            elif b_hit and not a_hit:
                b_only += 1

    discordant = a_only + b_only
    if discordant:
        # continuity correction, clipped at 0 so equal counts give 0, not 1/n
        chi2 = max(abs(a_only - b_only) - 1, 0) ** 2 / discordant
        chi2_p = _chi2_sf_1dof(chi2)
    else:
        chi2, chi2_p = 0.0, 1.0
    better = "a" if a_only > b_only else "b" if b_only > a_only else "tie"
    return {
        "tokens": tokens,
        "a_correct": a_correct,
        "b_correct": b_correct,
        "a_only": a_only,
        "b_only": b_only,
        "exact_p": _binom_two_sided(a_only, discordant),
        "chi2": chi2,
        "chi2_p": chi2_p,
        "better": better,
    }
