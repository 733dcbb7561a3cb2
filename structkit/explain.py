"""Why a token got its label (``structkit explain``): for a Viterbi model, each token's label,
the runner-up and the margin between them (max-marginals: the best sequence with the label
against the best with the runner-up there), and the features and transitions that push
towards each, with their weights."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from structkit.errors import UserError


@dataclass
class Push:
    name: str      # feature name, or "transition A -> B"
    weight: float  # its weight for the label minus its weight for the runner-up


@dataclass
class TokenExplanation:
    index: int           # 1-based
    word: str
    label: str
    runner_up: str | None
    margin: float        # best score with label minus best score with the runner-up at this token
    pushes: list[Push]   # every contribution, strongest first (positive: towards the label)


def explain_sentence(tagger, sentence, path: str = "<input>", columns: str | None = None,
                     text: bool = False) -> list[TokenExplanation]:
    """Explain each token of one sentence (a ``structkit.io.conll.Sentence``)."""
    from structkit.search.viterbi import max_marginals
    from structkit.tasks.sequence import column_values, columns_from

    if tagger.config.spec.decoder != "viterbi":
        raise UserError(f"explain covers Viterbi models (perceptron, k-best learners, ...); this "
                        f"one decodes with {tagger.config.spec.decoder}")
    # the layout as tagging decides it, from this sentence
    cols = (tagger.text_columns(sentence, path) if text else None)
    if cols is None:
        try:
            cols, _ = tagger.input_columns(len(sentence.rows[0]), columns, sentence.lines is not None)
        except ValueError as e:
            raise UserError(str(e), path, sentence.first_line) from None
    from structkit.io.conll import Columns

    rows_cols = Columns(cols.word, cols.pos, None, cols.names, conllu=cols.conllu)
    words, pos, _, offsets = columns_from([sentence], rows_cols)
    if tagger.features.uses_pos and pos is None:
        raise UserError("this model's features need a POS column and the input has none", path)
    extra = column_values([sentence], cols, tagger.features.column_attrs, path)
    enc = tagger.encode(words, pos, offsets, extra)
    W, T = tagger.weights.W, tagger.weights.T
    L = W.shape[1]
    n = enc.n_tokens
    E = np.zeros((n, L))
    for t in range(n):
        E[t] = W[enc.indices[enc.indptr[t]:enc.indptr[t + 1]]].sum(axis=0)
    M = np.empty((n, L))
    max_marginals(E, n, T, M)
    ids = tagger.predict_ids(enc)
    out = []
    for t in range(n):
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
            name = lambda k: "<S>" if k == L else tagger.labels[k]  # noqa: E731
            for a, b_y, b_r in ((prev, y, r),):
                d = float(T[a, b_y] - T[a, b_r])
                if d:
                    pushes.append(Push(f"transition {name(a)} -> {name(b_y)} (not -> {name(b_r)})", d))
            d = float(T[y, nxt] - T[r, nxt])
            if d:
                pushes.append(Push(f"transition {name(y)} -> {name(nxt)} (not {name(r)} -> {name(nxt)})", d))
        pushes.sort(key=lambda p: -abs(p.weight))
        out.append(TokenExplanation(t + 1, words[t], tagger.labels[y],
                                    tagger.labels[r] if r is not None else None,
                                    float(M[t, y] - M[t, r]) if r is not None else float("inf"), pushes))
    return out


def report(expl: list[TokenExplanation], top: int = 5, token: int | None = None) -> str:
    """The text ``structkit explain`` prints."""
    lines = []
    for e in expl:
        if token is not None and e.index != token:
            continue
        if e.runner_up is None:
            lines.append(f"{e.index:>3} {e.word}: {e.label} (the only label)")
            continue
        lines.append(f"{e.index:>3} {e.word}: {e.label}, runner-up {e.runner_up}, margin {e.margin:.3f}")
        towards = [p for p in e.pushes if p.weight > 0][:top]
        against = [p for p in e.pushes if p.weight < 0][:top]
        for what, ps in ((f"for {e.label}", towards), (f"for {e.runner_up}", against)):
            if ps:
                lines.append(f"      {what}: " + ", ".join(f"{p.name} {p.weight:+.3f}" for p in ps))
    return "\n".join(lines)
