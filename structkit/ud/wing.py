"""The ud task as the front-ends see it, registered in ``structkit.tasks``: `structkit eval
--task ud GOLD SYSTEM`, every metric of the CoNLL 2018 shared task (``structkit.eval.ud``). It
has no model, no command and no endpoint; `train --task ud` is a one-line error. Light: the
metric code is imported when a file is scored."""
from __future__ import annotations

from dataclasses import dataclass

from structkit.errors import UserError
from structkit.config import two_files
from structkit.tasks import Task, Training, register

NOTHING_TO_TRAIN = ("--task ud only scores parsed CoNLL-U against gold (structkit eval --task ud "
                    "GOLD.conllu SYSTEM.conllu): it has no model to train")


@dataclass
class UDEvalConfig:
    """The ud task's config: it takes no option, since there is nothing to train
    (:meth:`validate` says so)."""

    task: str = "ud"
    algo: str = "none"

    def validate(self) -> None:
        raise UserError(NOTHING_TO_TRAIN)


class NoTraining(Training):
    """The ud task trains nothing: `train --task ud` is the one line that says so."""

    def setup(self) -> tuple:
        return UDEvalConfig, None

    def train_function(self):
        raise UserError(NOTHING_TO_TRAIN)

    def choose_algo(self, train_path: str | None) -> str | None:
        # `train` asks this first, before it checks the options against the task: the one
        # line that says there is nothing to train, whatever else was given.
        raise UserError(NOTHING_TO_TRAIN)


class UDTask(Task):
    """Scoring a CoNLL-U file's segmentation, tags, lemmas and tree against gold."""

    def load(self, path: str, command: str | None = None, tasks: tuple[str, ...] | None = None):
        raise UserError("--task ud has no models", path)

    def evaluate(self, files: tuple[str, ...], model_path: str | None = None, other: str | None = None,
                 **options) -> tuple[dict, str]:
        """GOLD SYSTEM (CoNLL-U): the CoNLL 2018 shared task's metrics."""
        from structkit.eval.ud import evaluate_ud, report

        result = evaluate_ud(*two_files(self.name, files, model_path, other, "GOLD SYSTEM"))
        return result, report(result)


register(UDTask("ud", NoTraining("none", trains=False)))
