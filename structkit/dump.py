"""What ``structkit dump`` shows of a model file: the lines its task gives (``Task.dump_lines``;
taggers: ``structkit.sequence.dump``, parsers: ``structkit.parse.dump``, rerankers:
``structkit.rerank.dump``), the task read from the file's header."""
from __future__ import annotations


def dump_lines(path: str, top: int, pattern: str | None) -> list[str]:
    """The lines ``structkit dump`` prints for the model file ``path``: its task's."""
    from structkit.tasks import task_of_model

    task = task_of_model(path, "dump")
    return task.dump_lines(task.load(path, "dump"), top, pattern)
