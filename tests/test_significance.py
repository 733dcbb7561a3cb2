import math

import pytest
from conftest import require_extra

stats = require_extra("scipy.stats", "test", module_level=True)

from structkit.eval.significance import _binom_two_sided, mcnemar, sign_test


def _sents_for_counts(both, a_only, b_only, neither):
    """One sentence whose tokens give exactly these McNemar cells."""
    gold, a, b = [], [], []
    for _ in range(both):
        gold.append("N"); a.append("N"); b.append("N")
    for _ in range(a_only):
        gold.append("V"); a.append("V"); b.append("N")
    for _ in range(b_only):
        gold.append("D"); a.append("N"); b.append("D")
    for _ in range(neither):
        gold.append("A"); a.append("N"); b.append("V")
    return [gold], [a], [b]


GRID = [(0, 0), (0, 1), (1, 0), (1, 1), (0, 5), (3, 7), (7, 3), (10, 10), (12, 30),
        (50, 51), (100, 140), (1, 40), (5000, 5200), (5200, 5000), (5000, 5000),
        (20000, 20450), (0, 200)]


@pytest.mark.parametrize("n01,n10", GRID)
def test_exact_p_matches_scipy(n01, n10):
    n = n01 + n10
    got = _binom_two_sided(n01, n)
    if n == 0:
        assert got == 1.0
        return
    want = stats.binomtest(n01, n, 0.5, alternative="two-sided").pvalue
    assert got == pytest.approx(want, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("n01,n10", [(n01, n10) for n01, n10 in GRID if n01 + n10 <= 500])
def test_mcnemar_from_tags_matches_scipy(n01, n10):
    gold, a, b = _sents_for_counts(4, n01, n10, 2)
    r = mcnemar(gold, a, b)
    assert r["a_only"] == n01 and r["b_only"] == n10
    assert r["tokens"] == 6 + n01 + n10
    assert r["a_correct"] == 4 + n01 and r["b_correct"] == 4 + n10
    n = n01 + n10
    if n == 0:
        assert r["exact_p"] == 1.0 and r["chi2"] == 0.0 and r["chi2_p"] == 1.0
        return
    assert r["exact_p"] == pytest.approx(stats.binomtest(n01, n, 0.5).pvalue, rel=1e-9)
    x = max(abs(n01 - n10) - 1, 0) ** 2 / n  # continuity-corrected, clipped at 0
    assert r["chi2"] == pytest.approx(x)
    assert r["chi2_p"] == pytest.approx(stats.chi2.sf(x, 1), rel=1e-9)


@pytest.mark.parametrize("x", [0.0, 1e-6, 0.5, 1.0, 3.841458820694124, 10.0, 50.0, 200.0])
def test_chi2_p_matches_scipy(x):
    # Pick counts whose corrected statistic is arbitrary by going through the formula.
    from structkit.eval.significance import _chi2_sf_1dof
    assert _chi2_sf_1dof(x) == pytest.approx(stats.chi2.sf(x, 1), rel=1e-9, abs=1e-300)


def test_chi2_large_counts():
    gold, a, b = _sents_for_counts(100, 5000, 5200, 10)
    r = mcnemar(gold, a, b)
    x = (200 - 1) ** 2 / 10200
    assert r["chi2"] == pytest.approx(x)
    assert r["chi2_p"] == pytest.approx(stats.chi2.sf(x, 1), rel=1e-9)
    assert r["exact_p"] == pytest.approx(stats.binomtest(5000, 10200).pvalue, rel=1e-9)
    assert r["better"] == "b"


def test_hand_made_sentences():
    gold = [["D", "N", "V", "D", "N"], ["P", "N", "."]]
    a = [["D", "N", "V", "D", "V"], ["P", "V", "."]]   # wrong at (0,4), (1,1)
    b = [["D", "V", "V", "N", "N"], ["P", "N", "N"]]   # wrong at (0,1), (0,3), (1,2)
    r = mcnemar(gold, a, b)
    assert r["tokens"] == 8
    assert r["a_correct"] == 6 and r["b_correct"] == 5
    # A right, B wrong: (0,1), (0,3), (1,2); A wrong, B right: (0,4), (1,1)
    assert r["a_only"] == 3 and r["b_only"] == 2
    assert r["better"] == "a"
    assert r["exact_p"] == pytest.approx(1.0)  # 2 * P(X <= 2 | n=5) = 2 * 16/32
    assert r["chi2"] == 0.0
    assert r["chi2_p"] == 1.0


def test_known_small_p():
    # 0 vs 6: p = 2 / 2**6 exactly
    gold, a, b = _sents_for_counts(3, 0, 6, 0)
    r = mcnemar(gold, a, b)
    assert r["exact_p"] == pytest.approx(2 / 64, rel=1e-12)
    assert r["chi2"] == pytest.approx(25 / 6)
    assert r["better"] == "b"


def test_identical_systems_tie():
    gold = [["A", "B"], ["C"]]
    pred = [["A", "X"], ["C"]]
    r = mcnemar(gold, pred, pred)
    assert r["a_only"] == r["b_only"] == 0
    assert r["exact_p"] == 1.0 and r["chi2_p"] == 1.0 and r["chi2"] == 0.0
    assert r["better"] == "tie"


def test_empty_input():
    r = mcnemar([], [], [])
    assert r["tokens"] == 0 and r["exact_p"] == 1.0 and r["better"] == "tie"


def test_accepts_generators():
    gold, a, b = _sents_for_counts(2, 3, 1, 1)
    r = mcnemar(iter(gold), (s for s in a), iter(b))
    assert (r["a_only"], r["b_only"]) == (3, 1)


@pytest.mark.parametrize("n01,n10", [(3, 7), (12, 30), (0, 5), (4, 4)])
def test_symmetry(n01, n10):
    gold, a, b = _sents_for_counts(5, n01, n10, 3)
    ab = mcnemar(gold, a, b)
    ba = mcnemar(gold, b, a)
    assert (ba["a_only"], ba["b_only"]) == (ab["b_only"], ab["a_only"])
    assert (ba["a_correct"], ba["b_correct"]) == (ab["b_correct"], ab["a_correct"])
    assert ba["exact_p"] == ab["exact_p"]
    assert ba["chi2"] == ab["chi2"] and ba["chi2_p"] == ab["chi2_p"]
    flip = {"a": "b", "b": "a", "tie": "tie"}
    assert ba["better"] == flip[ab["better"]]


@pytest.mark.parametrize("gold,a,b", [
    ([["A", "B"]], [["A"]], [["A", "B"]]),
    ([["A", "B"]], [["A", "B"]], [["A", "B", "C"]]),
    ([["A"], ["B"]], [["A"]], [["A"], ["B"]]),
    ([["A"]], [["A"], ["B"]], [["A"]]),
    ([["A"]], [["A"]], [["A"], ["B"]]),
    ([["A"], ["B"]], [["A"], ["B"]], [["A"]]),
])
def test_length_mismatch_raises(gold, a, b):
    with pytest.raises(ValueError):
        mcnemar(gold, a, b)


@pytest.mark.parametrize("wa,wb", [(1, 0), (0, 1), (3, 3), (2, 9), (9, 2), (15, 40),
                                   (120, 95), (5000, 5200), (0, 60)])
def test_sign_test_matches_scipy(wa, wb):
    want = stats.binomtest(wa, wa + wb, 0.5, alternative="two-sided").pvalue
    assert sign_test(wa, wb) == pytest.approx(want, rel=1e-9, abs=1e-300)
    assert sign_test(wb, wa) == sign_test(wa, wb)


def test_sign_test_no_wins():
    assert sign_test(0, 0) == 1.0


@pytest.mark.parametrize("wa,wb", [(-1, 3), (3, -1), (2.5, 1), (True, 1)])
def test_sign_test_bad_counts(wa, wb):
    with pytest.raises(ValueError):
        sign_test(wa, wb)


def test_millions_do_not_overflow():
    # Far beyond float range for factorials; the tail must stay finite and in [0, 1].
    p_close = sign_test(2_000_000, 2_001_000)
    want = stats.binomtest(2_000_000, 4_001_000).pvalue
    assert p_close == pytest.approx(want, rel=1e-6)
    p_far = sign_test(1_000_000, 3_000_000)
    assert p_far == 0.0 or 0.0 < p_far < 1e-300
    assert sign_test(3_000_000, 3_000_000) == 1.0
    assert math.isfinite(sign_test(1_500_000, 1_510_000))
