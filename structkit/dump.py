"""What ``structkit dump`` shows of a model file: the lines its task gives (``Task.dump_lines``;
taggers: ``structkit.sequence.dump``, parsers: ``structkit.parse.dump``, rerankers:
``structkit.rerank.dump``), the task read from the file's header. How the model was made (data,
options, scores, time) is its card, which ``structkit info`` shows (``structkit.card``)."""
from __future__ import annotations

from structkit.errors import UserError
from structkit.tasks import task_of_model


def dump_lines(path: str, top: int, pattern: str | None) -> list[str]:
    """The lines ``structkit dump`` prints for the model file ``path``: its task's."""

    task = task_of_model(path, "dump")
    model = task.load(path, "dump")
    try:
        return task.dump_lines(model, top, pattern)
    except NotImplementedError:   # a task whose weights have no names to show (was a traceback)
        raise UserError(f"`structkit dump` does not show {task.name} models' weights; `structkit info "
                        f"{path}` shows how the model was made", path) from None
