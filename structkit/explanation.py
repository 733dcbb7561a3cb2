"""What an explanation of a label is (``structkit explain``, the server's ``explain``): for each
token its label, the runner-up and the margin between them, and what pushes towards each, with
their weights; and how it is worded. Every task that explains its decisions (taggers, the morph
tagger, the tokenizer) makes these records; ``structkit.explain`` asks a task for them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


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
    # history-based lookahead models: the best continuation the search found after the label
    # (and after the runner-up), the next labels in decoding order; None for Viterbi models
    continuation: list[str] | None = None
    runner_up_continuation: list[str] | None = None
    right_to_left: bool = False


def report(expl: Iterable[TokenExplanation], top: int = 5, token: int | None = None) -> str:
    """The text ``structkit explain`` prints."""
    return "\n".join(line for e in expl for line in report_lines(e, top, token))


def report_lines(e: TokenExplanation, top: int = 5, token: int | None = None) -> list[str]:
    """The lines of ``report`` for one token's explanation (none if ``token`` is another)."""
    if token is not None and e.index != token:
        return []
    if e.runner_up is None:
        return [f"{e.index:>3} {e.word}: {e.label} (the only label)"]
    lines = [f"{e.index:>3} {e.word}: {e.label}, runner-up {e.runner_up}, margin {e.margin:.3f}"]
    if e.continuation:
        way = " (right to left)" if e.right_to_left else ""
        lines.append(f"      continuation{way}: {' '.join(e.continuation)}"
                     + (f" (after {e.runner_up}: {' '.join(e.runner_up_continuation)})"
                        if e.runner_up_continuation else ""))
    towards = [p for p in e.pushes if p.weight > 0][:top]
    against = [p for p in e.pushes if p.weight < 0][:top]
    for what, ps in ((f"for {e.label}", towards), (f"for {e.runner_up}", against)):
        if ps:
            lines.append(f"      {what}: " + ", ".join(f"{p.name} {p.weight:+.3f}" for p in ps))
    return lines


def transition_pushes(T, prev: int, y: int, r: int, nxt: int, name) -> list[Push]:
    """What the first-order transitions push for label ``y`` over the runner-up ``r`` at a
    token between labels ``prev`` and ``nxt`` (``T[a, b]``: the weight of a -> b; ``name``
    gives a label's name)."""
    out = []
    d = float(T[prev, y] - T[prev, r])
    if d:
        out.append(Push(f"transition {name(prev)} -> {name(y)} (not -> {name(r)})", d))
    d = float(T[y, nxt] - T[r, nxt])
    if d:
        out.append(Push(f"transition {name(y)} -> {name(nxt)} (not {name(r)} -> {name(nxt)})", d))
    return out
