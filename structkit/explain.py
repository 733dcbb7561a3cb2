"""Why a token got its label (``structkit explain``, the server's ``explain``): each token's label,
the runner-up and the margin between them, and what pushes towards each, with their weights.
The explanations are the task's (``Task.explanations``; taggers: ``structkit.sequence.explain``);
this module asks for them and words them."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator

from structkit.errors import UserError

if TYPE_CHECKING:
    from structkit.sequence.explain import TokenExplanation


def explain_sentence(model, sentence, path: str = "<input>", columns: str | None = None,
                     text: bool = False, depth: int | None = None) -> list:
    """Explain each token of one sentence (a ``structkit.io.conll.Sentence``); ``depth``: a
    history-based model's lookahead depth (default: the depth trained with)."""
    return list(iter_explanations(model, sentence, path, columns, text, depth))


def iter_explanations(model, sentence, path: str = "<input>", columns: str | None = None,
                      text: bool = False, depth: int | None = None, only: int | None = None) -> Iterator:
    """``explain_sentence``'s explanations one token at a time, in token order (``only``: just
    the token of that 1-based index), from the model's task."""
    from structkit.tasks import get_task, tasks

    task = get_task(model.config.task)
    got = task.explanations(model, sentence, path, columns, text, depth, only)
    if got is None:
        which = [t.name for t in tasks() if t.explains]
        raise UserError(f"explain covers {', '.join(which)} models; this one is a {task.name} model")
    return got


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
