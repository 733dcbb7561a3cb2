"""The n-best reranking task (rerank) as the front-ends see it, registered in
``structkit.tasks``. Light: the methods import the wing's code when called."""
from __future__ import annotations

import json

from structkit.errors import UserError
from structkit.tasks import Command, CommandOption, Task, Training, register

_HELP = """Rerank n-best lists (HyPoradise JSON, JSON lines, or a Kaldi-style directory): writes the
chosen hypothesis of each utterance, one per line."""

_OPTIONS = (
    CommandOption(("-o", "--output"), "Write here instead of standard output."),
    CommandOption(("--json", "as_json"), "One JSON object per utterance: id, group, index (0-based), "
                  "score, text.", bool),
)


class RerankTraining(Training):
    """How a reranker trains, and what `train` prints of it."""

    def setup(self) -> tuple:
        from structkit.rerank.task import RerankConfig, train_reranker

        return RerankConfig, train_reranker

    def main_score(self) -> str:
        return "wer"

    def epoch_line(self, config, stats: dict) -> str:
        return f"updates {stats['train_updates']}, mistakes {stats['train_mistakes']}"

    def dev_line(self, config, dev: dict) -> str:
        return f"dev WER {dev['wer']:.2f}%"

    def summary(self, config, model) -> str:
        info = model.info
        return (f"{info['n_features']} features, {info['train_utterances']} training utterances, "
                f"epoch {info['chosen_epoch']} kept"
                + (f" of {info['epochs_run']} (best dev WER {info['selected_dev']['wer']:.2f}%)"
                   if "selected_dev" in info else "")
                + (f", then {info['refit_epochs']} epochs on all {info['train_utterances']} utterances"
                   if info.get("refit") else "") + f", {info['train_seconds']:.1f} s")

    def metrics(self, config, model, history: list[dict]) -> dict:
        info = model.info
        return {"config": {k: v for k, v in info.items() if k != "epochs"}
                | {"config": {**vars(config), "features": list(config.features),
                              "topic_levels": list(config.topic_levels)}},
                "epochs": info["epochs"]}


class RerankCommand(Command):
    """`structkit rerank`: n-best lists in, the chosen hypotheses out (not a batch job)."""

    def run(self, task: Task, model_path: str, files: tuple[str, ...], output: str | None = None,
            as_json: bool = False) -> None:
        """Choose a hypothesis per utterance of each n-best file; write them in order."""
        from structkit.config import resolve_data_path
        from structkit.io.files import atomic_output, check_outputs

        model = task.load(model_path, self.name)
        paths = [resolve_data_path(f, must_exist=True) for f in files] or ["-"]
        check_outputs([output], paths + [model_path])
        results = []
        for path in paths:
            ns = model.read(path)
            idx, score = model.rerank(ns)
            results.append((ns, idx, score))
        with atomic_output(output) as out:
            for ns, idx, score in results:
                for u, g, k, s in zip(ns.utterances, ns.groups, idx, score):
                    text = u.hypotheses[int(k)]
                    if as_json:
                        out.write(json.dumps({"id": u.id, "group": g, "index": int(k),
                                              "score": float(s), "text": text}) + "\n")
                    else:
                        out.write(text + "\n")


class RerankTask(Task):
    """Reranking the n-best lists of a speech recogniser: one hypothesis chosen per utterance."""

    def load(self, path: str, command: str | None = None, tasks: tuple[str, ...] | None = None):
        from structkit.rerank.task import Reranker

        return Reranker.load(path, command=command)

    def dump_lines(self, model, top: int, pattern: str | None) -> list[str]:
        from structkit.rerank.dump import reranker_lines

        return reranker_lines(model, top, pattern)

    def evaluate(self, files: tuple[str, ...], model_path: str | None = None, other: str | None = None,
                 **options) -> tuple[dict, str]:
        """WER of the 1-best, the chosen hypotheses (CHOSEN) and the oracle of NBEST; with
        ``other``, the sign test between two systems' choices."""
        from structkit.config import resolve_data_path
        from structkit.io.nbest import read_chosen, read_nbest
        from structkit.rerank.task import evaluate_nbest, wer_report

        if model_path:
            raise UserError(f"--model does not apply to eval --task {self.name}")
        if len(files) not in (1, 2):
            raise UserError(f"eval --task {self.name} takes NBEST [CHOSEN], got {len(files)} file(s)")
        if other is not None and len(files) != 2:
            raise UserError("--compare needs a CHOSEN file to compare with")
        ns = read_nbest(resolve_data_path(files[0], must_exist=True))
        ns.require_references("eval")
        chosen = read_chosen(resolve_data_path(files[1], must_exist=True), len(ns)) if len(files) == 2 else None
        oth = read_chosen(resolve_data_path(other, must_exist=True), len(ns)) if other is not None else None
        res = evaluate_nbest(ns, chosen, oth)
        return res, wer_report(res)


register(RerankTask("rerank", RerankTraining("loss-perceptron", (("lambda", "lam"),)),
                    RerankCommand("rerank", "Choose one hypothesis per utterance from n-best lists with a "
                                  "trained reranker.", _HELP, _OPTIONS, "a reranker", batched=False)))
