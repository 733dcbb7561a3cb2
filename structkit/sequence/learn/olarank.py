"""OLaRank: structural SVMs trained online (Bordes, Usunier & Bottou 2008), exact and greedy.

Both dual problems, (5) for exact inference and (6) for greedy inference, are instances of the
multiclass dual (4). We keep it in the per-pattern form of ``structkit.sequence.learn.smo``: for pattern
i with gold class c_i, variables b_i(c) >= 0 for c != c_i plus the slack b_i(c_i), summing to C.
This is (4) with beta_i^c = -b_i(c) for c != c_i and beta_i^{c_i} = C - b_i(c_i); a move of the
paper's pair (c, c') is the same move of (b(c'), b(c)), the paper's gold coefficient playing the
part of the slack (dF = 0, loss 0). Then

    w = sum_i sum_c b_i(c) dF_i(c),   dF_i(c) = Phi(p_i, c_i) - Phi(p_i, c),
    D = sum_i sum_c b_i(c) Delta(c_i, c) - 1/2 ||w||^2              (the dual objective)
    g_i(c) = <w, dF_i(c)> - Delta(c_i, c)                           (minus the gradient of D)

An SMO step on pattern i takes c+ = argmin g (the coefficient to raise) and c- = argmax g among
b > kappa (to lower), and does nothing unless g(c-) - g(c+) > tau (Section 5.1's two
conditions); otherwise it moves d = min(b(c-), (g(c-) - g(c+)) / ||dF(c+) - dF(c-)||^2) from c-
to c+ (the clipped analytic step; D rises by d (g(c-) - g(c+)) - d^2 ||.||^2 / 2 >= 0), and w by
d (dF(c+) - dF(c-)) = d (Phi(c-) - Phi(c+)) with Phi(slack) = Phi(gold).

The three operations (Section 4.1) differ only in where c+ is sought:
PROCESSNEW (a fresh pattern) and PROCESSOLD (a random support pattern): over all classes, i.e.
loss-augmented inference (Viterbi for exact, a scan of the labels for greedy); OPTIMIZE (a
random support pattern): only among its current support vectors and its gold/slack. Scheduling
(Section 4.2, ``structkit.sequence.learn.schedule``): each PROCESSNEW is followed by n_R
REPROCESS = one PROCESSOLD + ten OPTIMIZE.
n_R = 0 is the passive-aggressive baseline (PAExact, PAGreedy). Support patterns are those with
some non-gold b > 0; the random picks are uniform over the current support patterns (seeded
numba generator: the same seed gives the same model).

Exact (dual 5): patterns are sentences, classes label sequences; Phi = the first-order features
of ``structkit.sequence.chain.sparse_dF`` (emissions and boundary transitions), Delta = Hamming.
Each sentence keeps its support vectors as explicit sequences (flat arrays, like k-best SDM's
working sets; entries whose b fell to 0 are dropped at the next visit; a sequence that does not
fit in a full set is counted as dropped and not added).

Greedy (dual 6): patterns are tokens, classes labels, Delta = 0/1. Phi_g(x^t, y^{t-K..t-1}, y)
= the token's features and, for s = 1..K, the indicator of (s, y^{t-s}, y) -- the kernel K_g of
Section 3.4 -- with the gold history in training (y^{t-s} = "none" before the sentence start).
Weights: W[f, y] and H[s-1, h, y] (h = L for "none"). The dF of two classes of one token are
orthogonal to nothing: <dF(c), dF(c')> = q (1 + [c = c']) with q = ||x||^2 + K, so every pair
has ||dF(c+) - dF(c-)||^2 = 2q; b is a dense (tokens, L) array with the gold column the slack.
Test-time inference is greedy left to right with the predicted history (``greedy_decode``).

No averaging: the model is the dual solution w. Nothing is compiled at import.
"""
from __future__ import annotations

import numpy as np

from collections import namedtuple

from structkit.learn.pieces import sum_in_pieces
from structkit.sequence.learn.schedule import NEW, OPTIMIZE, operation, start_pass, turn_length
from structkit.sequence.learn.smo import init_working_sets, prune_working_set, stored_equals
from structkit.sequence.chain import (FirstOrder, GreedyHistory, add_features, add_sparse, corpus,
                                    hamming, smo_pair_step, sparse_dF, sparse_dot, w_dot_dF)
from structkit.sequence.search.greedy import greedy_decode, history, token_scores  # noqa: F401 (greedy_decode: re-exported)
from structkit.jit import njit
from structkit.sequence.search.kbest import decode_buffers, decode_kbest

N_OPTIMIZE = 10  # OPTIMIZE steps per REPROCESS (Section 4.2)

SupportSet = namedtuple("SupportSet", ["patterns", "pos"])
SupportSet.__doc__ = """The support patterns: patterns[:n] (n kept by the caller) and each
pattern's index in it, pos[p] (-1 when p is not a support pattern)."""

TokenPatterns = namedtuple("TokenPatterns", ["hist", "B"])
TokenPatterns.__doc__ = """The greedy dual's token patterns: the gold history hist[N, K]
(``gold_history``) and the coefficients B[N, L] (the gold column is the slack)."""


# ---- support-pattern bookkeeping (a set with O(1) add, remove and uniform pick) ---------------
@njit
def _sp_update(p, is_sv, sp, n_sp):
    """Add p to / remove p from the support-pattern set; returns the new size."""
    sp_list, sp_pos = sp
    if is_sv and sp_pos[p] < 0:
        sp_pos[p] = n_sp
        sp_list[n_sp] = p
        return n_sp + 1
    if not is_sv and sp_pos[p] >= 0:
        i = sp_pos[p]
        last = sp_list[n_sp - 1]
        sp_list[i] = last
        sp_pos[last] = i
        sp_pos[p] = -1
        return n_sp - 1
    return n_sp


@njit
def _pattern(kind, new, sp, n_sp):
    """The pattern an operation of a turn works on (``structkit.sequence.learn.schedule``):
    PROCESSNEW the turn's ``new`` one, the others a support pattern drawn uniformly (-1: there is
    none, and so none for the rest of the turn)."""
    if kind == NEW:
        return new
    if n_sp == 0:
        return -1
    return sp.patterns[np.random.randint(0, n_sp)]


# ---- greedy (token patterns) --------------------------------------------------------------
@njit
def gold_history(offsets, y, K, L):
    """hist[j, s-1] = gold label s positions before token j in its sentence, L before the start."""
    N = offsets[-1]
    hist = np.empty((N, max(K, 1)), dtype=np.int32)
    for i in range(offsets.shape[0] - 1):
        a = offsets[i]
        b = offsets[i + 1]
        for j in range(a, b):
            history(y, a, j, K, L, hist[j])
    return hist


@njit
def greedy_step(X, w, P, j, tau, kappa, support_only, sc):
    """One SMO step on token pattern j (PROCESSNEW / PROCESSOLD, or OPTIMIZE when
    ``support_only``) of the ``TokenPatterns`` P, with the ``GreedyHistory`` weights w (scratch
    sc[L]). Returns the dual increase (0.0 when no step was taken)."""
    indptr, indices, hist, B = X.indptr, X.indices, P.hist, P.B
    W, H = w.W, w.H
    L = W.shape[1]
    K = H.shape[0]
    gold = X.y[j]
    token_scores(indptr, indices, W, H, j, hist[j], sc)
    sg = sc[gold]
    lo = -1
    glo = 0.0
    hi = -1
    ghi = 0.0
    for c in range(L):
        g = 0.0 if c == gold else sg - sc[c] - 1.0
        if (not support_only or c == gold or B[j, c] > 0.0) and (lo < 0 or g < glo):
            lo = c
            glo = g
        if B[j, c] > kappa and (hi < 0 or g > ghi):
            hi = c
            ghi = g
    if hi < 0 or lo == hi or not ghi - glo > tau:
        return 0.0
    # every pair has ||dF(lo) - dF(hi)||^2 = 2q (module docstring)
    q = float(indptr[j + 1] - indptr[j] + K)
    den = 2.0 * q
    d = smo_pair_step(B[j], lo, hi, ghi - glo, den)
    # w += d (Phi(hi) - Phi(lo)), Phi(slack) = Phi(gold)
    for p in range(indptr[j], indptr[j + 1]):
        f = indices[p]
        W[f, hi] += d
        W[f, lo] -= d
    for s in range(K):
        h = hist[j, s]
        H[s, h, hi] += d
        H[s, h, lo] -= d
    return d * (ghi - glo) - 0.5 * d * d * den


@njit
def _token_is_sv(B, y, j):
    L = B.shape[1]
    for c in range(L):
        if c != y[j] and B[j, c] > 0.0:
            return True
    return False


@njit
def greedy_dual(X, w, P):
    """The dual objective D = sum b Delta - 1/2 ||w||^2, from scratch."""
    B, y = P.B, X.y
    lin = 0.0
    for j in range(B.shape[0]):
        for c in range(B.shape[1]):
            if c != y[j]:
                lin += B[j, c]
    return lin - 0.5 * (np.sum(w.W * w.W) + np.sum(w.H * w.H))


@njit
def olarank_greedy_pass(X, order, w, P, sp, n_sp, tau, kappa, n_reprocess, seed, trace):
    """One pass of OLaRankGreedy over the sentences of X in ``order`` (their tokens left to
    right): per token one PROCESSNEW, then n_reprocess x (PROCESSOLD + ten OPTIMIZE), on the
    ``TokenPatterns`` P and ``SupportSet`` sp of size n_sp.

    If trace.shape[0] > 0, trace[0] gets the dual on entry and trace[1 + i] the dual recomputed
    from scratch (``greedy_dual``) after the i-th operation (for tests; slow). Returns
    (n_sp, steps taken, dual increase, steps taken by PROCESSNEW)."""
    rec = start_pass(seed, trace)
    sc = np.empty(w.W.shape[1])
    steps = 0
    gain = 0.0
    new_steps = 0
    done = 0  # operations traced
    if rec:
        trace[0] = greedy_dual(X, w, P)
    for s in order:
        for j in range(X.offsets[s], X.offsets[s + 1]):
            for op in range(turn_length(n_reprocess, N_OPTIMIZE)):
                kind = operation(op, N_OPTIMIZE)
                p = _pattern(kind, j, sp, n_sp)
                if p < 0:
                    break
                dg = greedy_step(X, w, P, p, tau, kappa, kind == OPTIMIZE, sc)
                if dg != 0.0:  # a step was taken
                    steps += 1
                    gain += dg
                    if kind == NEW:
                        new_steps += 1
                if dg != 0.0 or kind == NEW:  # p may have joined or left the support set
                    n_sp = _sp_update(p, _token_is_sv(P.B, X.y, p), sp, n_sp)
                if rec:
                    done += 1
                    trace[done] = greedy_dual(X, w, P)
    return n_sp, steps, gain, new_steps


@njit
def greedy_max_violation(X, w, P, kappa):
    """max over token patterns of g(c-) - g(c+) (the KKT violation; <= tau at a tau-optimum)."""
    B, hist, y = P.B, P.hist, X.y
    L = w.W.shape[1]
    sc = np.empty(L)
    worst = 0.0
    for j in range(B.shape[0]):
        token_scores(X.indptr, X.indices, w.W, w.H, j, hist[j], sc)
        sg = sc[y[j]]
        glo = np.inf
        ghi = -np.inf
        for c in range(L):
            g = 0.0 if c == y[j] else sg - sc[c] - 1.0
            if g < glo:
                glo = g
            if B[j, c] > kappa and g > ghi:
                ghi = g
        if ghi - glo > worst:
            worst = ghi - glo
    return worst


@njit
def greedy_perceptron_pass(X, order, w, u, c, hist):
    """One pass of the averaged greedy perceptron on the token patterns (gold history hist) of
    the sentences of X in ``order``: if the best label is not the gold one,
    w += Phi(gold) - Phi(best) (``GreedyHistory`` w and accumulators u). Returns (c, mistakes)."""
    W, H, U, HU = w.W, w.H, u.W, u.H
    L = W.shape[1]
    K = H.shape[0]
    sc = np.empty(L)
    mistakes = 0
    for s in order:
        for j in range(X.offsets[s], X.offsets[s + 1]):
            token_scores(X.indptr, X.indices, W, H, j, hist[j], sc)
            best = 0
            for k in range(1, L):
                if sc[k] > sc[best]:
                    best = k
            g = X.y[j]
            if best != g:
                mistakes += 1
                add_features(X, j, W, U, g, 1.0, c)
                add_features(X, j, W, U, best, -1.0, -c)
                for r in range(K):
                    h = hist[j, r]
                    H[r, h, g] += 1.0
                    HU[r, h, g] += c
                    H[r, h, best] -= 1.0
                    HU[r, h, best] -= c
            c += 1.0
    return c, mistakes


# ---- exact (sentence patterns) ------------------------------------------------------------
@njit
def exact_step(X, w, ws, s, tau, kappa, mode, E, seq, score):
    """One SMO step on sentence s with the ``FirstOrder`` weights w and the ``WorkingSets``
    ws: mode 0 PROCESSNEW / 1 PROCESSOLD (c+ from loss-augmented Viterbi over all sequences),
    2 OPTIMIZE (c+ among the support vectors and the gold) -- the operations' numbers in
    ``structkit.sequence.learn.schedule``; scratch E, seq, score from
    ``decode_buffers``. Returns (dual increase, dropped: 1 if the Viterbi sequence did not fit,
    loss of that sequence (modes 0/1) or -1)."""
    NF = w.W.shape[0]
    L = w.W.shape[1]
    cap = ws.seq.shape[1]
    a = X.offsets[s]
    n = X.offsets[s + 1] - a
    # drop the non-gold entries whose coefficient fell to 0 (keeps the set = support vectors)
    m = prune_working_set(ws, s, n)
    dropped = 0
    vloss = -1
    cand = -1  # index of the Viterbi sequence in the set
    if mode < 2:
        _, vloss = decode_kbest(X, w, a, n, 1, E, seq, score)
        if vloss == 0:
            cand = 0
        else:
            for j in range(1, m):
                if stored_equals(ws, s, j, seq[0], n):
                    cand = j
                    break
            if cand < 0:
                if m < cap:
                    ws.seq[s, m, :n] = seq[0, :n]
                    ws.beta[s, m] = 0.0
                    cand = m
                    m += 1
                    ws.m[s] = m
                else:
                    dropped = 1
    # gradients g_j = w . dF_j - Delta_j of the whole set (dF itself only for the chosen pair)
    beta = ws.beta[s]
    g = np.empty(m)
    for j in range(m):
        g[j] = w_dot_dF(X, a, n, ws.seq[s, j], w) - hamming(X.y, a, n, ws.seq[s, j])
    lo = -1
    hi = -1
    for j in range(m):
        # c+: all sequences (Viterbi's candidate, in the set) or, for OPTIMIZE, the support
        # vectors and the gold; the Viterbi argmin is the global one, the rest changes nothing
        if (mode < 2 or j == 0 or beta[j] > 0.0) and (lo < 0 or g[j] < g[lo]):
            lo = j
        if beta[j] > kappa and (hi < 0 or g[j] > g[hi]):
            hi = j
    if hi < 0 or lo == hi or not g[hi] - g[lo] > tau:
        return 0.0, dropped, vloss
    klo, vlo = sparse_dF(X, a, n, ws.seq[s, lo], NF, L)
    khi, vhi = sparse_dF(X, a, n, ws.seq[s, hi], NF, L)
    den = sparse_dot(klo, vlo, klo, vlo) + sparse_dot(khi, vhi, khi, vhi) - 2.0 * sparse_dot(klo, vlo, khi, vhi)
    gap = g[hi] - g[lo]
    d = smo_pair_step(beta, lo, hi, gap, den)
    add_sparse(klo, vlo, w, d)
    add_sparse(khi, vhi, w, -d)
    return d * gap - 0.5 * d * d * den, dropped, vloss


@njit
def _sentence_is_sv(ws, s):
    for j in range(1, ws.m[s]):
        if ws.beta[s, j] > 0.0:
            return True
    return False


@njit
def exact_dual(X, w, ws):
    """The dual objective D = sum b Delta - 1/2 ||w||^2, from scratch."""
    lin = 0.0
    for s in range(ws.m.shape[0]):
        a = X.offsets[s]
        n = X.offsets[s + 1] - a
        for j in range(1, ws.m[s]):
            if ws.beta[s, j] != 0.0:
                lin += ws.beta[s, j] * hamming(X.y, a, n, ws.seq[s, j])
    return lin - 0.5 * (np.sum(w.W * w.W) + np.sum(w.T * w.T))


@njit
def olarank_exact_pass(X, order, w, ws, sp, n_sp, tau, kappa, n_reprocess, seed, trace):
    """One pass of OLaRankExact over the sentences of X in ``order``: per sentence one
    PROCESSNEW, then n_reprocess x (one PROCESSOLD + ten OPTIMIZE), on the ``WorkingSets`` ws
    and ``SupportSet`` sp of size n_sp. ``trace`` as in ``olarank_greedy_pass``. Returns
    (n_sp, steps, dual increase, token errors of the loss-augmented Viterbi sequences at
    PROCESSNEW, dropped)."""
    rec = start_pass(seed, trace)
    _, E, seq, score = decode_buffers(X.offsets, w.W.shape[1], 1)  # 1-best loss-augmented Viterbi
    steps = 0
    gain = 0.0
    errors = 0
    dropped = 0
    done = 0  # operations traced
    if rec:
        trace[0] = exact_dual(X, w, ws)
    for s in order:
        if X.offsets[s + 1] == X.offsets[s]:
            continue
        for op in range(turn_length(n_reprocess, N_OPTIMIZE)):
            kind = operation(op, N_OPTIMIZE)
            p = _pattern(kind, s, sp, n_sp)
            if p < 0:
                break
            dg, dr, vl = exact_step(X, w, ws, p, tau, kappa, kind, E, seq, score)
            dropped += dr
            if kind == NEW:
                errors += vl
            if dg != 0.0:  # a step was taken
                steps += 1
                gain += dg
            if dg != 0.0 or kind == NEW:  # p may have joined or left the support set
                n_sp = _sp_update(p, _sentence_is_sv(ws, p), sp, n_sp)
            if rec:
                done += 1
                trace[done] = exact_dual(X, w, ws)
    return n_sp, steps, gain, errors, dropped


# ---- the learner ----------------------------------------------------------------------------
class OLaRankLearner:
    """OLaRank and its baselines behind the ``epoch`` / ``averaged`` interface of the other
    learners (``structkit.sequence.learn.perceptron``). ``algo``:

    * 'olarank-exact', 'pa-exact' (n_R = 0): dual (5), Viterbi; one pass per epoch.
    * 'olarank-greedy', 'pa-greedy' (n_R = 0), 'larank-greedy-batch' (passes until the KKT
      conditions hold to tau, at most ``max_passes`` per ``epoch`` call): dual (6), Markov
      order ``order``.
    * 'perceptron-greedy': the averaged greedy perceptron on the same token patterns.
    (PerceptronExact is the averaged structured perceptron of ``structkit.sequence.learn.perceptron``.)
    """

    GREEDY = ("olarank-greedy", "pa-greedy", "larank-greedy-batch", "perceptron-greedy")
    EXACT = ("olarank-exact", "pa-exact")

    def __init__(self, n_features: int, n_labels: int, algo: str, C: float = 0.1, nr: int = 1,
                 order: int = 1, tau: float = 1e-3, kappa: float = 1e-8, cap: int = 32,
                 max_passes: int = 100, trace: bool = False):
        if algo not in self.GREEDY + self.EXACT:
            raise ValueError(algo)
        if algo in ("pa-exact", "pa-greedy"):
            nr = 0
        self.algo = algo
        self.C, self.nr, self.order = float(C), int(nr), int(order)
        self.tau, self.kappa, self.cap, self.max_passes = float(tau), float(kappa), int(cap), int(max_passes)
        self.greedy = algo in self.GREEDY
        L = n_labels
        self.W = np.zeros((n_features, L))
        self.T = np.zeros((L + 1, L + 1))
        self.H = np.zeros((self.order, L + 1, L)) if self.greedy else np.zeros((0, 1, 1))
        self.U = np.zeros_like(self.W) if algo == "perceptron-greedy" else None
        self.HU = np.zeros_like(self.H) if algo == "perceptron-greedy" else None
        self.c = 1.0
        self.state = None
        self.trace = [] if trace else None
        self.passes = 0

    @property
    def w(self) -> FirstOrder | GreedyHistory:
        """The weights as the kernels take them (views of W, T or W, H)."""
        return GreedyHistory(self.W, self.H) if self.greedy else FirstOrder(self.W, self.T)

    def _init_state(self, data, y):
        N = data.n_tokens if self.greedy else data.n_sentences
        sp = SupportSet(np.zeros(N, dtype=np.int64), np.full(N, -1, dtype=np.int64))
        if self.greedy:
            B = np.zeros((data.n_tokens, self.W.shape[1]))
            B[np.arange(data.n_tokens), y] = self.C
            hist = gold_history(data.offsets, y, self.order, self.W.shape[1])
            return {"B": B, "hist": hist, "sp": sp, "n_sp": 0}
        ws = init_working_sets(data.offsets, y, self.C, self.cap)
        return {"ws": ws, "sp": sp, "n_sp": 0}

    def epoch(self, data, rng: np.random.Generator, shuffle: bool = True) -> dict:
        order = rng.permutation(data.n_sentences) if shuffle else np.arange(data.n_sentences)
        X = corpus(data)
        if self.state is None:
            self.state = self._init_state(data, X.y)
        st = self.state
        w = self.w
        if self.algo == "perceptron-greedy":
            def one(part: np.ndarray) -> tuple:  # the kernel on a slice of the order (learn.pieces)
                self.c, m = greedy_perceptron_pass(X, part, w, GreedyHistory(self.U, self.HU),
                                                   self.c, st["hist"])
                return (m,)

            mistakes, = sum_in_pieces(order, one, 1)
            return {"train_updates": int(mistakes),
                    "train_accuracy": 100.0 * (1 - mistakes / max(data.n_tokens, 1))}
        out: dict = {}
        passes = self.max_passes if self.algo == "larank-greedy-batch" else 1
        steps = 0
        gain = 0.0
        for _ in range(passes):
            seed = int(rng.integers(2 ** 31))
            n_ops = 0
            if self.trace is not None:
                per = turn_length(self.nr, N_OPTIMIZE)
                n_ops = (data.n_tokens if self.greedy else data.n_sentences) * per + 1
            tr = np.full(n_ops, np.nan)
            next_seed = [seed]

            def piece(part: np.ndarray) -> tuple:
                # A pass over a slice of the order: the pass's state (weights, patterns,
                # support set) is carried, and numba's generator, seeded by the first piece,
                # continues in the next (seed -1), so the pieces make the same pass as one call.
                seed_now, next_seed[0] = next_seed[0], -1
                if self.greedy:
                    st["n_sp"], s_, g_, _ = olarank_greedy_pass(
                        X, part, w, TokenPatterns(st["hist"], st["B"]), st["sp"], st["n_sp"],
                        self.tau, self.kappa, self.nr, seed_now, tr)
                    return s_, g_, 0, 0
                st["n_sp"], s_, g_, errors, dropped = olarank_exact_pass(
                    X, part, w, st["ws"], st["sp"], st["n_sp"], self.tau, self.kappa, self.nr,
                    seed_now, tr)
                return s_, g_, errors, dropped

            # the trace counts operations from the pass's start: one call then
            s_, g_, errors, dropped = (piece(order) if self.trace is not None
                                       else sum_in_pieces(order, piece, 4))
            if not self.greedy:
                out["train_token_errors"] = int(errors)
                out["dropped"] = out.get("dropped", 0) + int(dropped)
            if self.trace is not None:
                self.trace.append(tr[~np.isnan(tr)])
            steps += s_
            gain += g_
            self.passes += 1
            if self.algo == "larank-greedy-batch":
                viol = greedy_max_violation(X, w, TokenPatterns(st["hist"], st["B"]),
                                            self.kappa)
                out["max_violation"] = float(viol)
                out["passes"] = self.passes
                if viol <= self.tau:
                    break
                order = rng.permutation(data.n_sentences) if shuffle else order
        out.update({"train_updates": int(steps), **self.diagnostics(data, X.y)})
        return out

    def diagnostics(self, data, y) -> dict:
        """Dual objective, support patterns and support vectors (non-gold b > 0)."""
        st = self.state
        if self.greedy:
            B = st["B"]
            mask = B > 0
            mask[np.arange(B.shape[0]), y] = False
            dual = greedy_dual(corpus(data), self.w, TokenPatterns(st["hist"], B))
            sv = int(mask.sum())
            spn = int(mask.any(axis=1).sum())
        else:
            ws_seq, ws_beta, ws_m = st["ws"]
            dual = exact_dual(corpus(data), self.w, st["ws"])
            nz = ws_beta[:, 1:] > 0
            sv = int(nz.sum())
            spn = int(nz.any(axis=1).sum())
        return {"dual": float(dual), "support_patterns": spn, "support_vectors": sv}

    def averaged(self) -> FirstOrder | GreedyHistory:
        """The model's weights (OLaRank/PA: the dual solution w, not averaged; the greedy
        perceptron: its average)."""
        if not self.greedy:
            return FirstOrder(self.W.copy(), self.T.copy())
        W, H = self.W, self.H
        if self.U is not None:
            W = self.W - self.U / self.c
            H = self.H - self.HU / self.c
        return GreedyHistory(W.copy(), H.copy())
