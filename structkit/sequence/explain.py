"""Why a token got its label (``structkit explain``): each token's label, the runner-up and the
margin between them, and the features, transitions and history weights that push towards each,
with their weights.

* Viterbi models: the margin is between max-marginals (the best sequence with the label at the
  token against the best with the runner-up there).
* History-based models (greedy, lookahead, OLaRank greedy): the decision margin, at each token
  in the order the decoder decides (left to right, or right to left) with the labels it already
  chose as the history: the chosen label's score with its best lookahead continuation (the
  search's, to the model's depth) minus the runner-up's with its own best continuation. The
  contributions then add up to the margin exactly: the token's features, the transition and
  label-trigram weights from the labels already decided (H, the history weights, for OLaRank
  greedy models), and the difference between the two best continuations' scores, which are
  shown too.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from structkit.errors import UserError
from structkit.explanation import Push, TokenExplanation, transition_pushes
from structkit.io.conll import Columns
from structkit.lattice import kernels as K
from structkit.lattice.margins import lattice_margins
from structkit.morph.names import feature_names
from structkit.sequence.search.decoders import history_values, margins_from_values
from structkit.sequence.search.viterbi import max_marginals
from structkit.sequence.task import column_values, columns_from


def iter_explanations(tagger, sentence, path: str = "<input>", columns: str | None = None,
                      text: bool = False, depth: int | None = None,
                      only: int | None = None) -> Iterator[TokenExplanation]:
    """A tagger's explanations of one sentence (a ``structkit.io.document.Sentence``), one token at
    a time, in token order (``only``: just the token of that 1-based index); ``depth``: a
    history-based model's lookahead depth (default: the depth trained with). Memory is a few numbers per token and label (the scores
    and max-marginals) plus one token's explanation: a sentence of any length is explained in
    bounded memory per token, and the caller may print each as it comes."""

    decoder = tagger.config.spec.decoder
    if decoder not in ("viterbi", "lookahead", "greedy-history"):
        raise UserError(f"explain covers tagging models (Viterbi and history-based); this one "
                        f"decodes with {decoder}")
    # the layout as tagging decides it, from this sentence
    cols = (tagger.text_columns(sentence, path) if text else None)
    if cols is None:
        try:
            cols, _ = tagger.input_columns(len(sentence.rows[0]), columns, sentence.lines is not None)
        except ValueError as e:
            raise UserError(str(e), path, sentence.first_line) from None

    rows_cols = Columns(cols.word, cols.pos, None, cols.names, conllu=cols.conllu)
    words, pos, _, offsets = columns_from([sentence], rows_cols)
    if tagger.features.uses_pos and pos is None:
        raise UserError("this model's features need a POS column and the input has none", path)
    extra = column_values([sentence], cols, tagger.features.column_attrs, path)
    enc = tagger.encode(words, pos, offsets, extra)
    if decoder != "viterbi":
        yield from _explain_history(tagger, enc, words, depth, only)
        return
    W, T = tagger.weights.W, tagger.weights.T
    L = W.shape[1]
    n = enc.n_tokens
    E = np.zeros((n, L))
    for t in range(n):
        E[t] = W[enc.indices[enc.indptr[t]:enc.indptr[t + 1]]].sum(axis=0)
    M = np.empty((n, L))
    max_marginals(E, n, T, M)
    ids = tagger.predict_ids(enc)
    for t in range(n):
        if only is not None and t + 1 != only:
            continue
        y = int(ids[t])
        others = [z for z in range(L) if z != y]
        r = max(others, key=lambda z: (M[t, z], -z)) if others else None
        pushes: list[Push] = []
        if r is not None:
            for f in enc.indices[enc.indptr[t]:enc.indptr[t + 1]]:
                d = float(W[f, y] - W[f, r])
                if d != 0.0:
                    pushes.append(Push(tagger.features.feature_name(int(f)), d))
            prev = int(ids[t - 1]) if t else L
            nxt = int(ids[t + 1]) if t + 1 < n else L
            pushes += transition_pushes(T, prev, y, r, nxt, lambda k: "<S>" if k == L else tagger.labels[k])
        pushes.sort(key=lambda p: -abs(p.weight))
        yield TokenExplanation(t + 1, words[t], tagger.labels[y],
                               tagger.labels[r] if r is not None else None,
                               float(M[t, y] - M[t, r]) if r is not None else float("inf"), pushes)


def _explain_history(tagger, enc, words: list[str], depth: int | None,
                     only: int | None = None) -> Iterator[TokenExplanation]:
    """The decision margins of a history-based model (``structkit.sequence.search.decoders.history_values``)
    and what makes them up."""

    c = tagger.config
    decoder = c.spec.decoder
    w = tagger.weights
    W = w.W
    L = W.shape[1]
    n = enc.n_tokens
    ids = tagger.predict_ids(enc, depth=depth)
    V, cont = history_values(decoder, enc, w, c, ids, depth, continuations=True)
    margins, runner = margins_from_values(V, ids)
    _, cont_r = history_values(decoder, enc, w, c, ids, depth, continuations=True,
                               continuation_of=np.where(runner >= 0, runner, ids))
    rtl = decoder == "lookahead" and c.direction == "rtl"
    second = decoder == "lookahead" and c.label_order == 2
    name = lambda k: "<S>" if k == L else tagger.labels[k]  # noqa: E731
    for t in range(n):
        if only is not None and t + 1 != only:
            continue
        y, r = int(ids[t]), int(runner[t])
        # the labels decided before this one, in decoding order (right to left: from the end)
        step = 1 if rtl else -1
        k = n - 1 - t if rtl else t
        p1 = int(ids[t + step]) if k >= 1 else L
        p2 = int(ids[t + 2 * step]) if k >= 2 else L
        feats = enc.indices[enc.indptr[t]:enc.indptr[t + 1]]
        follow = [tagger.labels[z] for z in cont[t] if z >= 0] if decoder == "lookahead" else None
        if r < 0:
            yield TokenExplanation(t + 1, words[t], tagger.labels[y], None, float("inf"), [], follow,
                                   None, rtl)
            continue
        pushes: list[Push] = []
        own = {y: 0.0, r: 0.0}  # each label's own step score, to split off the continuation
        for f in feats:
            for z in own:
                own[z] += float(W[f, z])
            d = float(W[f, y] - W[f, r])
            if d != 0.0:
                pushes.append(Push(tagger.features.feature_name(int(f)), d))
        if decoder == "greedy-history":
            for s_ in range(w.H.shape[0]):
                h = int(ids[t - s_ - 1]) if t - s_ - 1 >= int(enc.offsets[_sentence_of(enc, t)]) else L
                for z in own:
                    own[z] += float(w.H[s_, h, z])
                d = float(w.H[s_, h, y] - w.H[s_, h, r])
                if d:
                    pushes.append(Push(f"history {s_ + 1} back {name(h)} -> {name(y)} (not -> {name(r)})", d))
        else:
            T = w.T
            for z in own:
                own[z] += float(T[p1, z])
            d = float(T[p1, y] - T[p1, r])
            way = ", right to left" if rtl else ""
            if d:
                pushes.append(Push(f"transition {name(p1)} -> {name(y)}{way} (not -> {name(r)})", d))
            if second:
                T2 = w.T2
                for z in own:
                    own[z] += float(T2[p2, p1, z])
                d = float(T2[p2, p1, y] - T2[p2, p1, r])
                if d:
                    pushes.append(Push(f"trigram {name(p2)} {name(p1)} -> {name(y)}{way} (not -> {name(r)})", d))
            if follow:
                alt = [tagger.labels[z] for z in cont_r[t] if z >= 0]
                d = float((V[t, y] - own[y]) - (V[t, r] - own[r]))
                if d:
                    pushes.append(Push(f"continuation: {' '.join(follow)} after {name(y)} "
                                       f"(not {' '.join(alt)} after {name(r)})", d))
        pushes.sort(key=lambda p: -abs(p.weight))
        yield TokenExplanation(
            t + 1, words[t], tagger.labels[y], tagger.labels[r], float(margins[t]), pushes, follow,
            [tagger.labels[z] for z in cont_r[t] if z >= 0] if follow is not None else None, rtl)


def _sentence_of(enc, t: int) -> int:
    return int(np.searchsorted(enc.offsets, t, side="right")) - 1


def lattice_explanations(tagger, words: list[str], only: int | None = None):
    """The explanations of a sentence's words by a tagger over hashed candidate lattices
    (``tagger``: a ``structkit.sequence.lattice.Lattice`` tagger, a large label set): the label, the
    runner-up (of the best sequence with another class at the word: max-marginals), the
    margin and the feature columns that push each way (named as the morph tagger names
    them); what is left of the margin is the transitions and the other words' labels."""

    if not words:
        return
    offsets = np.array([0, len(words)], dtype=np.int64)
    feats, cand_ptr, cands = tagger.encode_words(words, offsets)
    ids = tagger.decode(feats, offsets, cand_ptr, cands)
    margin, runner = np.zeros(len(words)), np.zeros(len(words), dtype=np.int64)
    lattice_margins(tagger.W, feats, offsets, cand_ptr, cands, tagger.parts_ptr, tagger.parts, ids, margin, runner)
    mask = tagger.W.shape[0] - 1
    for i, w in enumerate(words):
        if only is not None and i + 1 != only:
            continue
        c, r = int(ids[i]), int(runner[i])
        label = tagger.label_of(c, w)
        if r < 0:
            yield TokenExplanation(i + 1, w, label, None, float("inf"), [])
            continue
        mine = cands[cand_ptr[i]:cand_ptr[i + 1]].tolist()
        amb = "/".join(tagger.label_of(x, w) for x in mine[:3]) + ("/..." if len(mine) > 3 else "")
        _, known = tagger.candidates(w)
        names = feature_names(words, i, known, amb)
        pushes = []
        for k in range(feats.shape[1]):
            d = float(tagger.W[K.slot(feats[i, k], c, mask)]) - float(tagger.W[K.slot(feats[i, k], r, mask)])
            if d:
                pushes.append(Push(names[k] if k < len(names) else f"feature {k}", d))
        rest = float(margin[i]) - sum(p.weight for p in pushes)
        if abs(rest) > 1e-9:
            pushes.append(Push("transitions and the other words' labels", rest))
        pushes.sort(key=lambda p: -abs(p.weight))
        yield TokenExplanation(i + 1, w, label, tagger.label_of(r, w), float(margin[i]), pushes)
