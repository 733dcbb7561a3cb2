"""The labelled beam parser's kernels (structkit.parse.beam) against plain-Python references:
the transition system, the labelled oracle, beam search (a wide beam is exhaustive search, a
beam of 1 is greedy search) and the max-violation update."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from structkit.parse import beam as bm
from structkit.parse.labelled import label_oracle

BITS = 12
MASK = (1 << BITS) - 1
ALL = bm.group_mask(bm.GROUPS)


def model(W, L, U=None):
    """The kernels' Model of weights W over L labels (U: the accumulator; none when parsing)."""
    return bm.Model(W, W[:0] if U is None else U, MASK, L, ALL)


# ---- plain-Python references -----------------------------------------------------------------
class RefState:
    def __init__(self, n):
        self.n = n
        self.stack: list[int] = []
        self.b = 1
        self.heads = [-1] * (n + 2)
        self.labels = [0] * (n + 2)
        self.children: list[list[int]] = [[] for _ in range(n + 2)]

    def copy(self):
        c = RefState(self.n)
        c.stack, c.b, c.heads, c.labels = list(self.stack), self.b, list(self.heads), list(self.labels)
        c.children = [list(x) for x in self.children]
        return c

    def legal(self, a):
        return self.b <= self.n if a == 0 else len(self.stack) >= 2

    def final(self):
        return self.b > self.n and len(self.stack) == 1

    def apply(self, a, L):
        if a == 0:
            self.stack.append(self.b)
            self.b += 1
            return
        s0, s1 = self.stack[-1], self.stack[-2]
        if a <= L:
            self.heads[s1], self.labels[s1] = s0, a
            self.children[s0].append(s1)
            del self.stack[-2]
        else:
            self.heads[s0], self.labels[s0] = s1, a - L
            self.children[s1].append(s0)
            self.stack.pop()

    def rows(self):
        """The kernel's state rows, computed from scratch."""
        S = np.zeros((bm.N_ROWS, self.n + 2), dtype=np.int64)
        S[bm.HD, :] = -1
        for i, t in enumerate(self.stack):
            S[bm.ST, i] = t
        for t in range(1, self.n + 1):
            S[bm.HD, t] = self.heads[t]
            S[bm.LB, t] = self.labels[t]
            left = sorted(c for c in self.children[t] if c < t)
            right = sorted((c for c in self.children[t] if c > t), reverse=True)
            S[bm.LC1, t] = left[0] if left else 0
            S[bm.LC2, t] = left[1] if len(left) > 1 else 0
            S[bm.RC1, t] = right[0] if right else 0
            S[bm.RC2, t] = right[1] if len(right) > 1 else 0
            S[bm.NL, t], S[bm.NR, t] = len(left), len(right)
            S[bm.SL, t] = sum({1 << (self.labels[c] & 63) for c in left})
            S[bm.SR, t] = sum({1 << (self.labels[c] & 63) for c in right})
        return S


def phi(ref: RefState, sent, groups=ALL):
    words, tags, lemmas, morph = sent
    out = np.zeros(bm.MAX_FEATS, dtype=np.int64)
    k = bm.extract(ref.rows(), len(ref.stack), ref.b, bm.Sentence(words, tags, lemmas, morph, 0, ref.n), groups, out)
    return [int(f) & MASK for f in out[:k]]


def step_score(ref, a, sent, W):
    return sum(float(W[f + a]) for f in phi(ref, sent))


def ref_beam(sent, n, W, L, B, gold=None):
    """Beam search as the kernel documents it: candidates in (item, action) order, the B best
    kept by a stable sort; with gold, the max-violation step (last of ties) and its top path."""
    beam = [(0.0, RefState(n), [], True)]
    g = RefState(n)
    gscore = 0.0
    tmax, vmax, top_path = -1, -np.inf, None
    for t in range(2 * n - 1):
        cands = []
        for score, st, path, isg in beam:
            for a in range(2 * L + 1):
                if st.legal(a):
                    cands.append((score + step_score(st, a, sent, W), st, path, isg, a))
        cands.sort(key=lambda c: -c[0])
        beam = []
        for v, st, path, isg, a in cands[:B]:
            s2 = st.copy()
            s2.apply(a, L)
            beam.append((v, s2, path + [a], isg and gold is not None and a == gold[t]))
        if gold is not None:
            gscore += step_score(g, gold[t], sent, W)
            g.apply(gold[t], L)
            if not beam[0][3] and beam[0][0] - gscore >= vmax:
                vmax, tmax, top_path = beam[0][0] - gscore, t, beam[0][2]
    return beam, tmax, top_path


def exhaustive(sent, n, W, L):
    best = (-np.inf, None)

    def go(st, score):
        nonlocal best
        if st.final():
            if score > best[0]:
                best = (score, st)
            return
        for a in range(2 * L + 1):
            if st.legal(a):
                s2 = st.copy()
                v = score + step_score(st, a, sent, W)
                s2.apply(a, L)
                go(s2, v)

    go(RefState(n), 0.0)
    return best


def random_sentence(rng, n, vocab=6):
    return tuple(rng.integers(2, vocab, size=n).astype(np.int64) for _ in range(4))


def random_tree(rng, n, projective=True):
    """A random single-rooted tree; projective by recursive splitting of spans."""
    heads = [0] * n
    if not projective:
        order = rng.permutation(n) + 1
        for i, t in enumerate(order[1:], 1):
            heads[t - 1] = int(order[rng.integers(0, i)])
        return heads

    def span(lo, hi, head):  # tokens lo..hi (inclusive) hang from head
        if lo > hi:
            return
        r = int(rng.integers(lo, hi + 1))
        heads[r - 1] = head
        span(lo, r - 1, r)
        span(r + 1, hi, r)

    span(1, n, 0)
    return heads


def parse_one(sent, n, W, L, B):
    offsets = np.array([0, n], dtype=np.int64)
    heads = np.zeros(n, dtype=np.int64)
    labels = np.zeros(n, dtype=np.int64)
    bm.beam_parse_corpus(bm.Corpus(offsets, *sent), model(W, L), bm.Search(B, 0, 0), 1, heads, labels)
    return heads.tolist(), labels.tolist()


# ---- tests -----------------------------------------------------------------------------------
def test_apply_matches_reference_on_random_action_sequences():
    rng = np.random.default_rng(0)
    L = 3
    for _ in range(30):
        n = int(rng.integers(1, 8))
        ref = RefState(n)
        S = np.zeros((bm.N_ROWS, n + 2), dtype=np.int64)
        bm.reset(S, n)
        sp, b = 0, 1
        while not ref.final():
            a = int(rng.choice([a for a in range(2 * L + 1) if ref.legal(a)]))
            assert bm.legal(a, sp, b, n)
            ref.apply(a, L)
            sp, b = bm.apply(S, sp, b, a, L)
            assert (sp, b) == (len(ref.stack), ref.b)
            np.testing.assert_array_equal(S[1:, 1:n + 1], ref.rows()[1:, 1:n + 1])  # the stack beyond sp is stale
            np.testing.assert_array_equal(S[bm.ST, :sp], ref.rows()[bm.ST, :sp])


def test_labelled_oracle_rebuilds_projective_trees_and_refuses_others():
    rng = np.random.default_rng(1)
    L = 4
    refused = 0
    for trial in range(60):
        n = int(rng.integers(1, 10))
        heads = random_tree(rng, n, projective=trial % 2 == 0)
        labels = [int(x) for x in rng.integers(1, L + 1, size=n)]
        acts = label_oracle(heads, labels, L)
        from structkit.io.conllx import is_projective
        if not is_projective(heads):
            assert acts is None
            refused += 1
            continue
        assert acts is not None and len(acts) == 2 * n - 1
        S = np.zeros((bm.N_ROWS, n + 2), dtype=np.int64)
        bm.reset(S, n)
        sp, b = 0, 1
        for a in acts:
            assert bm.legal(a, sp, b, n)
            sp, b = bm.apply(S, sp, b, a, L)
        assert bm.is_final(sp, b, n)
        root = S[bm.ST, 0]
        assert heads[root - 1] == 0
        got = [int(S[bm.HD, i]) if i != root else 0 for i in range(1, n + 1)]
        assert got == heads
        assert [int(S[bm.LB, i]) for i in range(1, n + 1) if i != root] == \
               [labels[i - 1] for i in range(1, n + 1) if i != root]
    assert refused > 0
    assert label_oracle([0, 0], [1, 1], 2) is None  # two roots


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_wide_beam_is_exhaustive_search(seed):
    rng = np.random.default_rng(seed)
    L = 2
    W = rng.normal(size=MASK + 1 + 2 * L + 1).astype(np.float32)
    for n in (1, 2, 3, 4):
        sent = random_sentence(rng, n)
        score, best = exhaustive(sent, n, W, L)
        heads, labels = parse_one(sent, n, W, L, 500)
        want_heads = [best.heads[i] if best.heads[i] > 0 else 0 for i in range(1, n + 1)]
        root = best.stack[0]
        want_labels = [best.labels[i] if i != root else 1 for i in range(1, n + 1)]
        assert heads == want_heads
        assert labels == want_labels


def test_narrow_beams_match_the_reference_beam():
    rng = np.random.default_rng(5)
    L = 3
    W = rng.normal(size=MASK + 1 + 2 * L + 1).astype(np.float32)
    for B in (1, 2, 4):
        for n in (3, 6):
            sent = random_sentence(rng, n)
            beam, _, _ = ref_beam(sent, n, W, L, B)
            top = beam[0][1]
            heads, labels = parse_one(sent, n, W, L, B)
            assert heads == [top.heads[i] if top.heads[i] > 0 else 0 for i in range(1, n + 1)]


def test_max_violation_update_is_gold_minus_top_prefix_features():
    rng = np.random.default_rng(7)
    L = 2
    checked = 0
    for trial in range(20):
        n = int(rng.integers(3, 7))
        heads = random_tree(rng, n)
        labels = [int(x) for x in rng.integers(1, L + 1, size=n)]
        gold = label_oracle(heads, labels, L)
        sent = random_sentence(rng, n)
        W0 = rng.normal(size=MASK + 1 + 2 * L + 1).astype(np.float32)
        B = 2
        _, tmax, top_path = ref_beam(sent, n, W0, L, B, gold)
        W = W0.copy()
        U = np.zeros_like(W)
        offsets = np.array([0, n], dtype=np.int64)
        c, updates = bm.beam_epoch(bm.Corpus(offsets, *sent), np.array(gold, dtype=np.int64), np.array([0]),
                                   np.array([True]), model(W, L, U), bm.Search(B, 0, 0), 3.0)
        assert c == 4.0
        want = np.zeros(len(W), dtype=np.float64)
        if tmax >= 0:
            for acts, sign in ((gold, 1.0), (top_path, -1.0)):
                st = RefState(n)
                for a in acts[:tmax + 1]:
                    for f in phi(st, sent):
                        want[f + a] += sign
                    st.apply(a, L)
            checked += 1
        assert updates == (tmax >= 0)
        np.testing.assert_allclose(W.astype(np.float64) - W0, want, atol=1e-4)
        np.testing.assert_allclose(U, 3.0 * want, atol=1e-3)
    assert checked > 5


def test_template_groups_switch_features_off():
    rng = np.random.default_rng(3)
    sent = random_sentence(rng, 5)
    st = RefState(5)
    for a in (0, 0, 0, 1, 0):
        st.apply(a, 2)
    counts = {}
    for g in bm.GROUPS:
        counts[g] = len(phi(st, sent, bm.group_mask([g])))
        assert counts[g] > 0
    assert len(phi(st, sent, ALL)) == sum(counts.values()) <= bm.MAX_FEATS
    with pytest.raises(ValueError):
        bm.group_mask(["nope"])


def test_cli_beam_train_parse_writes_labels_and_model_round_trips(tmp_path):
    """The default parse learner on a small CoNLL-U slice: the model file keeps the labels,
    `structkit parse` writes predicted DEPREL values from the training label set, and a
    reloaded model parses as the trained one."""
    import os

    from click.testing import CliRunner

    from structkit.cli import cli
    from structkit.io.conllx import read_conllx
    from structkit.parse.parser import DependencyParser

    src = os.path.join(os.environ.get("STRUCTKIT_DATA", "data"), "ud-english-partut", "en_partut-ud-dev.conllu")
    if not os.path.exists(src):
        pytest.skip("ud-english-partut not available")
    sents = list(read_conllx(src))[:60]
    from structkit.io.conllx import write_conllx
    small = tmp_path / "small.conllu"
    with open(small, "w") as f:
        write_conllx(sents, f)
    m, out = tmp_path / "m.npz", tmp_path / "out.conllu"
    r = CliRunner().invoke(cli, ["train", "--task", "parse", "--train", str(small), "--model", str(m),
                                 "--epochs", "2", "--beam", "2", "--hash-bits", "18", "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["parse", "--model", str(m), str(small), "-o", str(out)])
    assert r.exit_code == 0, r.output
    parser = DependencyParser.load(str(m))
    assert parser.config.algo == "beam" and parser.config.beam == 2
    labels = set(parser.labels)
    pred = list(read_conllx(str(out)))
    assert all(d in labels for s in pred for d in s.deprels)
    assert sum(s.deprels.count("root") for s in pred) == len(pred)
    H, D = parser.parse_sentences(sents)
    assert [s.heads for s in pred] == H and [s.deprels for s in pred] == D


# ---- lookahead inside the beam (--algo beam --depth D) ---------------------------------------
def ref_lookahead(st, D, sent, W, L):
    """max over legal action sequences of length D (cut short only by a final state) of the sum
    of their scores; 0 for D = 0 or a final state."""
    if D == 0 or st.final():
        return 0.0
    best = -np.inf
    for a in range(2 * L + 1):
        if st.legal(a):
            s2 = st.copy()
            s2.apply(a, L)
            best = max(best, step_score(st, a, sent, W) + ref_lookahead(s2, D - 1, sent, W, L))
    return best


def ref_beam_lookahead(sent, n, W, L, B, K, D):
    """The K best candidates by path score, re-ranked by path score + depth-D lookahead (stable
    sorts), the B best kept with their plain path scores; returns each step's item paths."""
    beam = [(0.0, RefState(n), [])]
    steps = []
    for t in range(2 * n - 1):
        cands = []
        for score, st, path in beam:
            for a in range(2 * L + 1):
                if st.legal(a):
                    cands.append((score + step_score(st, a, sent, W), st, path, a))
        cands.sort(key=lambda c: -c[0])
        ranked = []
        for v, st, path, a in cands[:K]:
            s2 = st.copy()
            s2.apply(a, L)
            ranked.append((v + ref_lookahead(s2, D, sent, W, L), v, s2, path + [a]))
        ranked.sort(key=lambda c: -c[0])
        beam = [(v, s2, path) for _, v, s2, path in ranked[:B]]
        steps.append([path for _, _, path in beam])
    return steps, beam


def kernel_steps(sent, n, W, L, B, K, D):
    maxlen = n
    cur = np.zeros((B, bm.N_ROWS, maxlen + 2), dtype=np.int64)
    nxt = np.zeros_like(cur)
    hist_p = np.zeros((2 * maxlen, B), dtype=np.int64)
    hist_a = np.zeros((2 * maxlen, B), dtype=np.int64)
    bm.beam_search(bm.Sentence(*sent, 0, n), model(W, L), bm.Search(B, D, K),
                   bm.Beams(cur, nxt, hist_p, hist_a, np.zeros(2 * maxlen)),
                   np.zeros(2 * maxlen, dtype=np.int64), False)
    out = np.zeros(2 * maxlen, dtype=np.int64)

    def path(t, j):
        bm._path(hist_p, hist_a, t, j, out)
        return out[:t + 1].tolist()
    return path, cur


@pytest.mark.parametrize("D", [1, 2, 3])
def test_lookahead_value_matches_brute_force(D):
    rng = np.random.default_rng(20 + D)
    L = 2
    W = rng.normal(size=MASK + 1 + 2 * L + 1).astype(np.float32)
    for n in (1, 2, 3, 5):
        sent = random_sentence(rng, n)
        st = RefState(n)
        for _ in range(int(rng.integers(0, 2 * n - 1))):  # a random reachable state
            st.apply(int(rng.choice([a for a in range(2 * L + 1) if st.legal(a)])), L)
        look = np.zeros((D + 1, bm.N_ROWS, n + 2), dtype=np.int64)
        look[0] = st.rows()
        got = bm.lookahead_value(look, np.zeros((D + 1, 2 * L + 1), dtype=np.float32),
                                 np.zeros(bm.MAX_FEATS, dtype=np.int64), len(st.stack), st.b,
                                 bm.Sentence(*sent, 0, n), model(W, L), D)
        assert got == pytest.approx(ref_lookahead(st, D, sent, W, L), rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("D", [1, 2, 3])
def test_wide_beam_lookahead_ranks_all_candidates_as_the_reference(D):
    """A beam as wide as all candidates: every step's items come in the reference's order of
    path score + depth-D lookahead."""
    rng = np.random.default_rng(30 + D)
    L = 2
    W = rng.normal(size=MASK + 1 + 2 * L + 1).astype(np.float32)
    for n in (1, 2, 3, 4):
        sent = random_sentence(rng, n)
        B = 400
        steps, _ = ref_beam_lookahead(sent, n, W, L, B, 2 * B, D)
        assert max(len(s) for s in steps) < B  # really all candidates
        path, _ = kernel_steps(sent, n, W, L, B, 2 * B, D)
        for t, items in enumerate(steps):
            assert [path(t, j) for j in range(len(items))] == items


@pytest.mark.parametrize("D,B,K", [(1, 1, 2), (1, 2, 4), (2, 2, 4), (2, 3, 3), (3, 2, 6), (0, 2, 4)])
def test_narrow_beam_lookahead_matches_the_reference(D, B, K):
    """Top K by path score, re-ranked by lookahead, best B kept: the same items at every step;
    D = 0 is the plain beam (K unused)."""
    rng = np.random.default_rng(40 + 10 * D + B)
    L = 3
    W = rng.normal(size=MASK + 1 + 2 * L + 1).astype(np.float32)
    for n in (3, 6, 8):
        sent = random_sentence(rng, n)
        steps, beam = ref_beam_lookahead(sent, n, W, L, B, K if D else B, D)
        path, _ = kernel_steps(sent, n, W, L, B, K, D)
        for t, items in enumerate(steps):
            assert [path(t, j) for j in range(len(items))] == items
        if D == 0:
            plain, _, _ = ref_beam(sent, n, W, L, B)
            assert [p for _, _, p, _ in plain] == steps[-1]


def test_cli_beam_depth_train_and_parse(tmp_path):
    """--depth with a beam parser: trained with lookahead, parsed with another depth; depth
    out of 0..3 refused."""
    import os

    from click.testing import CliRunner

    from structkit.cli import cli
    from structkit.io.conllx import read_conllx, write_conllx
    from structkit.parse.parser import DependencyParser

    src = os.path.join(os.environ.get("STRUCTKIT_DATA", "data"), "ud-english-partut", "en_partut-ud-dev.conllu")
    if not os.path.exists(src):
        pytest.skip("ud-english-partut not available")
    sents = list(read_conllx(src))[:30]
    small = tmp_path / "small.conllu"
    with open(small, "w") as f:
        write_conllx(sents, f)
    m, out = tmp_path / "m.npz", tmp_path / "out.conllu"
    r = CliRunner().invoke(cli, ["train", "--task", "parse", "--train", str(small), "--model", str(m),
                                 "--epochs", "1", "--beam", "2", "--depth", "1", "--hash-bits", "18", "-q"])
    assert r.exit_code == 0, r.output
    parser = DependencyParser.load(str(m))
    assert parser.config.algo == "beam" and parser.config.depth == 1
    for d in ("0", "2"):
        r = CliRunner().invoke(cli, ["parse", "--model", str(m), "--depth", d, str(small), "-o", str(out)])
        assert r.exit_code == 0, r.output
        H, D = parser.parse_sentences(sents, depth=int(d))
        assert [s.heads for s in read_conllx(str(out))] == H
    r = CliRunner().invoke(cli, ["parse", "--model", str(m), "--depth", "4", str(small)])
    assert r.exit_code != 0 and "0..3" in r.output + str(r.exception)
    r = CliRunner().invoke(cli, ["train", "--task", "parse", "--train", str(small), "--model", str(m),
                                 "--epochs", "1", "--depth", "4", "-q"])
    assert r.exit_code != 0 and "0..3" in r.output + str(r.exception)


# ---- max-violation ties (training starts from zero weights) ----------------------------------
@pytest.mark.parametrize("B", [1, 2, 4])
def test_max_violation_ties_from_zero_weights_take_the_last_step(B):
    """Training starts from zero weights, where every candidate scores 0 and so every violation
    (the top item's score minus the gold prefix's) is 0. The rule among equal violations:
    the LATEST step wins (``v >= vmax``), so the first update of a sentence covers its whole
    action sequence, not the prefix up to the first mistake. With ties the beam keeps the
    earlier candidate, so the top item shifts while it can and then reduces with LEFT(1): for
    the tree 1 <- 2 -> 3 the gold actions S S L S R leave the top at step 2 (S S S), and the
    violations at steps 2, 3, 4 all tie; step 4 = 2n - 2 is taken."""
    L, n = 2, 3
    heads, labels = [2, 0, 2], [1, 2, 2]
    gold = label_oracle(heads, labels, L)
    assert gold == [0, 0, 1, 0, L + 2]
    top = [0, 0, 0, 1, 1]
    sent = random_sentence(np.random.default_rng(0), n)
    W = np.zeros(MASK + 1 + 2 * L + 1, dtype=np.float32)
    cur = np.zeros((B, bm.N_ROWS, n + 2), dtype=np.int64)
    nxt = np.zeros_like(cur)
    hist_p = np.zeros((2 * n, B), dtype=np.int64)
    hist_a = np.zeros((2 * n, B), dtype=np.int64)
    gscores = np.zeros(2 * n)
    tmax, _ = bm.beam_search(bm.Sentence(*sent, 0, n), model(W, L), bm.Search(B, 0, 0),
                             bm.Beams(cur, nxt, hist_p, hist_a, gscores), np.array(gold, dtype=np.int64), True)
    assert tmax == 2 * n - 2
    path = np.zeros(2 * n, dtype=np.int64)
    bm._path(hist_p, hist_a, tmax, 0, path)
    assert path[:2 * n - 1].tolist() == top
    # the update: the whole gold sequence's features minus the whole top path's
    U = np.zeros_like(W)
    c, updates = bm.beam_epoch(bm.Corpus(np.array([0, n], dtype=np.int64), *sent), np.array(gold, dtype=np.int64),
                               np.array([0]), np.array([True]), model(W, L, U), bm.Search(B, 0, 0), 1.0)
    assert updates == 1
    def diff(T):
        d = np.zeros(len(W))
        for acts, sign in ((gold, 1.0), (top, -1.0)):
            st = RefState(n)
            for a in acts[:T]:
                for f in phi(st, sent):
                    d[f + a] += sign
                st.apply(a, L)
        return d

    np.testing.assert_array_equal(W, diff(2 * n - 1))
    np.testing.assert_array_equal(U, diff(2 * n - 1))   # c = 1 at the update
    assert not np.array_equal(diff(2 * n - 1), diff(3))  # the first-mistake rule would update less
    assert gold[:2] == top[:2]   # the two share two steps, which the kernel skips (they cancel)


# ---- an accuracy floor for the default parser -------------------------------------------------
def _trivial_baselines(train, test):
    """LAS of attaching every word to its previous (or next) word, the first (last) to the root,
    with the label its UPOS most often has in training (root for the root)."""
    from collections import Counter, defaultdict

    from structkit.parse.labelled import label_scores

    by_pos = defaultdict(Counter)
    for s in train:
        for u, d in zip(s.upos, s.deprels):
            by_pos[u][d] += 1
    out = {}
    for name, head in (("previous", lambda i, n: i), ("next", lambda i, n: i + 2 if i + 1 < n else 0)):
        H = [[head(i, len(s.words)) for i in range(len(s.words))] for s in test]
        D = [["root" if h == 0 else (by_pos[u].most_common(1)[0][0] if by_pos[u] else "dep")
              for h, u in zip(hs, s.upos)] for hs, s in zip(H, test)]
        out[name] = label_scores(test, H, D)["las"]
    return out


@pytest.mark.corpus
def test_default_parser_las_floor_on_partut(corpus):
    """The default labelled beam parser (every default: beam 8, all template groups, 8 epochs),
    trained on the first 250 sentences of UD English ParTUT train, parses the first 100 of dev
    at LAS >= 70 (76.7 when this was written; the parser is deterministic, the margin is for
    deliberate changes of defaults, not for noise) and at least 40 points above the trivial
    baselines (attach to the previous / next word: both under 30)."""
    from structkit.parse.labelled import label_scores
    from structkit.parse.parser import ParserConfig, read_treebank, train_parser_on

    train = read_treebank(str(corpus("ud-english-partut/en_partut-ud-train.conllu")))[:250]
    test = read_treebank(str(corpus("ud-english-partut/en_partut-ud-dev.conllu")))[:100]
    config = ParserConfig()
    config.validate()
    assert (config.algo, config.beam, config.epochs) == ("beam", 8, 8)
    parser = train_parser_on(config, train)
    heads, deprels = parser.parse_sentences(test)
    las = label_scores(test, heads, deprels)["las"]
    base = _trivial_baselines(train, test)
    assert max(base.values()) < 30, base
    assert las >= 70.0 and las >= max(base.values()) + 40, (las, base)


# ---- the scoring and table kernels against plain Python/numpy ----------------------------------
def ref_action_scores(feats, k, W, mask, sp, b, n, n_actions):
    """The scores in float32, feature by feature in order (the sums the kernels must give
    bit for bit); -inf for illegal actions."""
    out = np.zeros(n_actions, dtype=np.float32)
    for a in range(n_actions):
        if (a == 0 and b > n) or (a > 0 and sp < 2):
            out[a] = -np.inf
            continue
        s = np.float32(0.0)
        for f in feats[:k]:
            s = np.float32(s + W[(int(f) & mask) + a])
        out[a] = s
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_action_and_items_scores_are_the_in_order_float32_sums(seed):
    """action_scores and items_scores (several items, template-major, twins skipped) give the
    reference's float32 sums exactly, for every legality case (can shift / can arc or not) and
    feature counts around the eight-feature batches."""
    rng = np.random.default_rng(seed)
    for L in (1, 3, 50):
        A = 2 * L + 1
        W = (rng.normal(size=MASK + 1 + A) * rng.choice([1e-3, 1.0, 1e3], size=MASK + 1 + A)).astype(np.float32)
        W[rng.random(len(W)) < 0.3] = 0.0
        B = 6
        for k in (1, 7, 8, 9, 16, 105):
            feats = rng.integers(-2**62, 2**62, size=(B, bm.MAX_FEATS))
            sps = rng.integers(0, 4, size=B)
            bs = rng.integers(1, 6, size=B)
            n = 4
            lo = np.array([0 if bs[i] <= n else 1 for i in range(B)], dtype=np.int64)
            hi = np.array([A if sps[i] >= 2 else 1 for i in range(B)], dtype=np.int64)
            who = np.array([i for i in range(B) if i != 2], dtype=np.int64)  # item 2: a twin, not scored
            out = np.full((B, A), 7.0, dtype=np.float32)
            bm.items_scores(feats, k, W, MASK, lo, hi, who, len(who), out)
            for i in range(B):
                want = ref_action_scores(feats[i], k, W, MASK, sps[i], bs[i], n, A)
                got1 = np.zeros(A, dtype=np.float32)
                bm.action_scores(feats[i], k, W, MASK, sps[i], bs[i], n, A, got1)
                np.testing.assert_array_equal(got1, want)
                if i == 2:
                    assert (out[i] == 7.0).all()  # untouched
                else:
                    np.testing.assert_array_equal(out[i], want)


def test_table_kernels_match_numpy():
    """average_in_place gives numpy's float32 W - U / c; nonzero_cells and scatter_cells take a
    table apart into its nonzero cells (-0.0 included) and put it back bit for bit."""
    rng = np.random.default_rng(4)
    W = rng.integers(-5, 6, size=5000).astype(np.float32)
    U = (rng.integers(-10**7, 10**7, size=5000) * rng.random(5000)).astype(np.float32)
    U[rng.random(5000) < 0.5] = 0.0
    for c in (1.0, 3.0, 1781.0, 14248.0):
        want = np.subtract(W, np.divide(U, np.float32(c)))
        got = W.copy()
        bm.average_in_place(got, U, np.float32(c))
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    W[rng.random(5000) < 0.6] = 0.0
    W[:3] = -0.0
    k = int(np.count_nonzero(W.view(np.int32)))
    idx, vals = np.zeros(k, dtype=np.int32), np.zeros(k, dtype=np.float32)
    assert bm.nonzero_cells(W, idx, vals) == k
    np.testing.assert_array_equal(idx, np.flatnonzero(W.view(np.int32)))
    back = np.full_like(W, 9.0)
    back.fill(0)
    bm.scatter_cells(back, idx, vals)
    np.testing.assert_array_equal(back.view(np.int32), W.view(np.int32))


def ref_beam_float32(sent, n, W, L, B):
    """The plain beam with the kernel's arithmetic: each state's action scores are float32 sums
    in feature order (``ref_action_scores``), path scores float64; candidates in (item, action)
    order, the B best kept by a stable sort. Returns each step's item paths."""
    beam = [(0.0, RefState(n), [])]
    steps = []
    for t in range(2 * n - 1):
        cands = []
        for score, st, path in beam:
            feats = np.array(phi(st, sent), dtype=np.int64)
            sc = ref_action_scores(feats, len(feats), W, MASK, len(st.stack), st.b, n, 2 * L + 1)
            for a in range(2 * L + 1):
                if st.legal(a):
                    cands.append((score + float(sc[a]), st, path, a))
        cands.sort(key=lambda c: -c[0])
        beam = []
        for v, st, path, a in cands[:B]:
            s2 = st.copy()
            s2.apply(a, L)
            beam.append((v, s2, path + [a]))
        steps.append([p for _, _, p in beam])
    return steps


def test_beam_items_with_equal_features_share_scores_without_changing_the_search():
    """Sentences of one repeated word make many beam items with equal features (the kernel
    scores such twins once and gives each its twin's scores, ties included); the kernel's items
    at every step are those of the reference beam with the kernel's float32 arithmetic."""
    rng = np.random.default_rng(11)
    L = 2
    twins = 0
    for n in (4, 7, 9):
        W = rng.normal(size=MASK + 1 + 2 * L + 1).astype(np.float32)
        sent = tuple(np.full(n, 2, dtype=np.int64) for _ in range(4))  # every word the same
        B = 6
        steps = ref_beam_float32(sent, n, W, L, B)
        path, _ = kernel_steps(sent, n, W, L, B, B, 0)
        for t, items in enumerate(steps):
            assert [path(t, j) for j in range(len(items))] == items
        # the reference's states with equal features at one step (what the kernel shares)
        for t, items in enumerate(steps):
            seen = set()
            for p in items:
                st = RefState(n)
                for a in p:
                    st.apply(a, L)
                key = (st.b, tuple(phi(st, sent)))
                twins += key in seen
                seen.add(key)
    assert twins > 0
