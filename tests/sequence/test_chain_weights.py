"""The chain model's weight variants (structkit.sequence.chain) and the model-file arrays."""
import numpy as np
import pytest

from structkit.sequence.chain import (FirstOrder, GreedyHistory, SecondOrder, Weights, smo_pair_step,
                                    zeros)


def test_variants_round_trip_through_the_file_arrays():
    rng = np.random.default_rng(0)
    L = 3
    W, T = rng.normal(size=(5, L)), rng.normal(size=(L + 1, L + 1))
    T2, H = rng.normal(size=(L + 1, L + 1, L)), rng.normal(size=(2, L + 1, L))
    for w in (FirstOrder(W, T), SecondOrder(W, T, T2), GreedyHistory(W, H)):
        back = Weights(w.W, w.T, w.T2, w.H)  # what SequenceTagger.load does with the arrays
        assert type(back) is type(w)
        for a, b in zip(back, w):
            assert np.array_equal(a, b)
    # the placeholders the files have always held
    assert FirstOrder(W, T).T2.shape == (1, 1, 1) and FirstOrder(W, T).H.shape == (0, 1, 1)
    g = GreedyHistory(W, H)
    assert g.T.shape == (L + 1, L + 1) and not g.T.any() and g.T2.shape == (1, 1, 1)
    assert isinstance(zeros(5, L), FirstOrder) and isinstance(Weights.zeros(5, L, True), SecondOrder)
    with pytest.raises(ValueError):
        Weights(W, T, np.zeros((1, 1, 1)), H)  # a history model with transitions: damaged


def ref_pair_step(beta, lo, hi, gap, den):
    d = min(beta[hi], gap / den) if den > 0 else beta[hi]
    beta[lo] += d
    beta[hi] = 0.0 if d == beta[hi] else beta[hi] - d
    return d


@pytest.mark.parametrize("seed", range(4))
def test_smo_pair_step_vs_reference(seed):
    rng = np.random.default_rng(seed)
    for _ in range(50):
        beta = rng.random(4) * (rng.random(4) < 0.7)
        lo, hi = rng.choice(4, size=2, replace=False)
        gap, den = rng.random() * 3, rng.choice([0.0, rng.random() * 2])
        a, b = beta.copy(), beta.copy()
        assert smo_pair_step(a, lo, hi, gap, den) == ref_pair_step(b, lo, hi, gap, den)
        assert np.array_equal(a, b)
