"""What ``structkit dump`` shows of a tokenizer model: its facts, the label transitions, how its
hashed weights are spread over the labels, and the multiword tokens it splits (remembered
splits, the learnt suffix rules for unseen tokens, and the left-to-right segmenter where
dev kept one). Its character features are hashed: a
weight has no feature name (``structkit explain -m MODEL TEXT`` names those that fire at a
character)."""
from __future__ import annotations

import numpy as np

MEANING = {"N": "inside a token", "T": "ends a token", "S": "ends a token and a sentence",
           "W": "whitespace between tokens"}


def tokenizer_lines(model, top: int, pattern: str | None) -> list[str]:
    """The lines of ``structkit dump`` for a ``structkit.tokenizer.task.TokenizerModel``:
    ``top`` rows of each list (multiword tokens whose text contains ``pattern``)."""
    tok, info, config = model.tokenizer, model.info, model.config
    labels = list(model.labels)
    W = np.asarray(tok.W, dtype=np.float64)
    used = int(np.count_nonzero(np.any(W != 0, axis=1)))
    known = int(np.count_nonzero(tok.known))
    lines = [f"task tokenize, algo {config.algo}, {config.epochs} epochs"
             + (f" (epoch {info['selected_epoch']} kept)" if info.get("selected_epoch") else ""),
             f"trained on {info.get('train_file')} ({info.get('train_chars')} characters, "
             f"{info.get('train_sentences')} sentences)",
             f"character features hashed into 2^{tok.bits} rows x {len(labels)} labels, {used} rows "
             f"non-zero; {known} known token forms",
             "labels: " + ", ".join(f"{x} ({MEANING.get(x, '?')})" for x in labels)]
    T = np.asarray(tok.T, dtype=np.float64)
    if T.shape == (len(labels) + 1, len(labels) + 1):
        names = labels + ["<s>"]   # the start state last (structkit's chain models' layout)
        lines.append("label transitions (row: previous, column: next):")
        lines.append("  " + " " * 6 + "".join(f"{x:>9}" for x in labels))
        for i, prev in enumerate(names):
            lines.append(f"  {prev:<6}" + "".join(f"{T[i, j]:>9.3f}" for j in range(len(labels))))
    if tok.sentence_bias:   # where dev kept one (structkit.tokenizer.task, SENTENCE_BIASES)
        lines.append(f"bias on sentence ends (kept on dev): {tok.sentence_bias:+g}, added to the score of S "
                     "wherever it is allowed")
    lines.append("weight mass per label (sum of |w|): "
                 + ", ".join(f"{x} {float(np.abs(W[:, j]).sum()):.1f}" for j, x in enumerate(labels)))
    mwt = tok.mwt
    if mwt is None:
        lines.append("multiword tokens: none (the treebank has none)")
        return lines
    seen = sorted((f, w) for f, w in mwt.seen.items() if len(w) > 1 and (pattern is None or pattern in f))
    lines.append(f"multiword tokens remembered from training: {sum(len(w) > 1 for w in mwt.seen.values())}"
                 + (f" (showing {min(top, len(seen))})" if seen else ""))
    lines += [f"  {f} -> {' '.join(w)}" for f, w in seen[:top]]
    rules = sorted((x, r) for rs in mwt.rules.values() for x, r in rs if pattern is None or pattern in x)
    lines.append(f"suffix rules for unseen tokens ({'used' if mwt.use_rules else 'not used: dev preferred none'}): "
                 f"{len(rules)}")
    lines += [f"  -{x} -> {' '.join(('STEM' + r[0],) + tuple(r[1:]))}" for x, r in rules[:top]]
    strongest = sorted(((w, f) for f, w in mwt.weights.items() if pattern is None or pattern in f),
                       key=lambda x: (-abs(x[0]), x[1]))
    lines.append(f"strongest splitter features (of {len(mwt.weights)}):")
    lines += [f"  {f} {w:+.3f}" for w, f in strongest[:top]]
    seg = mwt.segmenter
    if seg is not None:   # a model trained before segmenters existed, or where dev chose none, has none
        lines.append(f"left-to-right segmenter for unseen tokens (before the suffix rules): "
                     f"{len(seg.weights)} features, {len(seg.lexicon)} known words")
        strongest = sorted(((w, f) for f, w in seg.weights.items() if pattern is None or pattern in f),
                           key=lambda x: (-abs(x[0]), x[1]))
        lines += [f"  {f} {w:+.3f}" for w, f in strongest[:top]]
    return lines
