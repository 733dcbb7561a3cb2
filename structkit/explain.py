"""Why a token got its label (``structkit explain``, the server's ``explain``): each token's label,
the runner-up and the margin between them, and what pushes towards each, with their weights.
The explanations are the task's (``Task.explanations``; taggers: ``structkit.sequence.explain``);
this module asks for them; ``structkit.explanation`` holds their records and words them."""
from __future__ import annotations

from typing import Iterator

from structkit.errors import UserError
from structkit.explanation import report, report_lines  # noqa: F401 (words them; read from here too)
from structkit.tasks import explains, get_task, tasks


def explain_sentence(model, sentence, path: str = "<input>", columns: str | None = None,
                     text: bool = False, depth: int | None = None) -> list:
    """Explain each token of one sentence (a ``structkit.io.document.Sentence``); ``depth``: a
    history-based model's lookahead depth (default: the depth trained with)."""
    return list(iter_explanations(model, sentence, path, columns, text, depth))


def iter_explanations(model, sentence, path: str = "<input>", columns: str | None = None,
                      text: bool = False, depth: int | None = None, only: int | None = None) -> Iterator:
    """``explain_sentence``'s explanations one token at a time, in token order (``only``: just
    the token of that 1-based index), from the model's task."""

    task = get_task(model.config.task)
    got = task.explanations(model, sentence, path, columns, text, depth, only)
    if got is None:
        which = [t.name for t in tasks() if explains(t)]
        raise UserError(f"explain covers {', '.join(which)} models; this one is a {task.name} model")
    return got
