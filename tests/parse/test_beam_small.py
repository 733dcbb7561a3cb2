"""The beam parser's numpy search for a few sentences (structkit.parse.smallbeam) gives the
kernel's parses (structkit.parse.beam.beam_parse_corpus): random weights, ties, label sets over
63 labels, template groups, beam widths; and a one-sentence parse does not import numba."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from structkit.parse import beam as bm
from structkit.parse.smallbeam import SMALL_WORDS, beam_parse_small
from tests.clitools import sk_env

FIXTURE = str(Path(__file__).resolve().parents[1] / "fixtures" / "parse_train.conll")

BITS = 12
MASK = (1 << BITS) - 1
ALL = bm.group_mask(bm.GROUPS)


def corpus(rng, lengths, vocab):
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    cols = [rng.integers(0, vocab, size=int(offsets[-1])).astype(np.int64) for _ in range(4)]
    return offsets, cols


def both(offsets, cols, W, L, groups, B, root_label=1):
    """(heads, labels) from the kernel and from the numpy search."""
    N = int(offsets[-1])
    out = []
    for numpy_path in (False, True):
        heads = np.full(N, -7, dtype=np.int64)
        labels = np.full(N, -7, dtype=np.int64)
        if numpy_path:
            beam_parse_small(offsets, *cols, W, MASK, L, groups, B, root_label, heads, labels)
        else:
            bm.beam_parse_corpus(bm.Corpus(offsets, *cols), bm.Model(W, W[:0], MASK, L, groups),
                                 bm.Search(B, 0, 2 * B), root_label, heads, labels)
        out.append((heads.tolist(), labels.tolist()))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_numpy_beam_is_the_kernels_on_random_weights(seed):
    rng = np.random.default_rng(seed)
    L = int(rng.integers(1, 6))
    W = rng.normal(size=MASK + 1 + 2 * L + 1).astype(np.float32)
    offsets, cols = corpus(rng, rng.integers(1, 12, size=8), 9)
    for B in (1, 3, 8):
        kernel, small = both(offsets, cols, W, L, ALL, B)
        assert small == kernel
        assert all(h >= 0 for h in small[0])   # every token written


@pytest.mark.parametrize("seed", range(4))
def test_ties_keep_the_kernels_order(seed):
    """Small integer weights (many equal scores, as early in training): ties are broken as the
    kernel breaks them (the earlier candidate of (item, action) order first)."""
    rng = np.random.default_rng(100 + seed)
    L = 3
    W = rng.integers(-1, 2, size=MASK + 1 + 2 * L + 1).astype(np.float32)
    offsets, cols = corpus(rng, rng.integers(2, 10, size=10), 4)
    for B in (2, 4, 16):
        kernel, small = both(offsets, cols, W, L, ALL, B)
        assert small == kernel
    zero = np.zeros_like(W)   # every candidate ties
    kernel, small = both(offsets, cols, zero, L, ALL, 4)
    assert small == kernel


def test_over_63_labels_wrap_the_label_set_bits_as_the_kernel():
    """Label l sets bit l & 63 of a label set: label 63 sets the sign bit, 64 bit 0."""
    rng = np.random.default_rng(3)
    L = 70
    W = rng.normal(size=MASK + 1 + 2 * L + 1).astype(np.float32)
    # weights that favour arcs with the labels 63, 64 and 70
    for lab in (63, 64, 70):
        W[lab::97] += 3.0
        W[L + lab::89] += 3.0
    offsets, cols = corpus(rng, [6, 9, 12], 7)
    kernel, small = both(offsets, cols, W, L, ALL, 4)
    assert small == kernel
    assert {63, 64, 70} & set(small[1])


@pytest.mark.parametrize("group", bm.GROUPS)
def test_each_template_group_alone(group):
    rng = np.random.default_rng(len(group))
    L = 4
    W = rng.normal(size=MASK + 1 + 2 * L + 1).astype(np.float32)
    offsets, cols = corpus(rng, [5, 8, 11], 8)
    kernel, small = both(offsets, cols, W, L, bm.group_mask(["base", group]), 4)
    assert small == kernel


def test_empty_sentence_and_one_word():
    rng = np.random.default_rng(9)
    L = 2
    W = rng.normal(size=MASK + 1 + 2 * L + 1).astype(np.float32)
    offsets = np.array([0, 1, 1, 4], dtype=np.int64)
    cols = [rng.integers(0, 5, size=4).astype(np.int64) for _ in range(4)]
    kernel, small = both(offsets, cols, W, L, ALL, 8, root_label=2)
    assert small == kernel
    assert small[0][0] == 0 and small[1][0] == 2    # a one-word sentence: the root


def test_one_sentence_parse_does_not_import_numba(tmp_path):
    """The numpy search serves a one-sentence ``parse_sentences`` in a fresh process (no numba
    import), and a longer input goes to the kernel; both give the kernel's parse."""
    from tests.clitools import sk_cmd

    model = tmp_path / "m.model"
    subprocess.run(sk_cmd("train", "--task", "parse", "--epochs", "1", "--train",
                          FIXTURE, "-m", str(model), "-q"),
                   check=True, env=sk_env())
    code = f"""
import json, sys
from structkit.parse.parser import DependencyParser, read_treebank
p = DependencyParser.load({str(model)!r})
s = read_treebank({FIXTURE!r})
small = p.parse_sentences(s[:1])
no_numba = "numba" not in sys.modules
many = s * (1 + {SMALL_WORDS} // max(1, sum(len(x.words) for x in s)))
assert sum(len(x.words) for x in many) > {SMALL_WORDS}
big = p.parse_sentences(many)
print(json.dumps([no_numba, "numba" in sys.modules, small[0][0] == big[0][0], small[1][0] == big[1][0]]))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=sk_env(), check=True)
    assert r.stdout.strip() == "[true, true, true, true]", r.stderr


def test_after_load_numba_a_small_parse_takes_the_kernel(tmp_path):
    """A long-running process (the server's warm-up calls ``load_numba``) parses even one
    sentence with the kernel, not with the numpy search of one-shot commands."""
    from tests.clitools import sk_cmd

    model = tmp_path / "m.model"
    subprocess.run(sk_cmd("train", "--task", "parse", "--epochs", "1", "--train", FIXTURE, "-m", str(model), "-q"),
                   check=True, env=sk_env())
    code = f"""
import json
from structkit.jit import load_numba
from structkit.parse import beam, smallbeam
from structkit.parse.parser import DependencyParser, read_treebank
used = []
real = smallbeam.beam_parse_small
smallbeam.beam_parse_small = lambda *a: used.append(1) or real(*a)
p = DependencyParser.load({str(model)!r})
s = read_treebank({FIXTURE!r})[:1]
first = p.parse_sentences(s)        # numba not loaded: numpy
load_numba()
second = p.parse_sentences(s)       # the kernel
print(json.dumps([len(used), beam.beam_parse_corpus._dispatcher is not None, first == second]))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=sk_env(), check=True)
    assert r.stdout.strip() == "[1, true, true]", r.stderr
