"""The task extension point: a toy task defined only here (each word's most frequent tag in the
training data, the overall most frequent for an unseen word), registered, then trained, run,
evaluated, batched and served through the command line and the server's application, with no
package file naming it (as tests/test_registry.py does for a learner)."""
from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from structkit import tasks
from structkit.components import Component
from structkit.errors import UserError
from structkit.io.batchjob import Job
from structkit.serving import Serving, serves
from structkit.tasks import Command, CommandOption, Task, Training

ROOT = Path(__file__).resolve().parents[1]
CHUNK = ROOT / "structkit" / "data" / "sample" / "chunk"   # word POS chunk rows: the toy learns word -> POS


# ---- the toy task, defined only here -------------------------------------------------------
def read_rows(path) -> list[list[list[str]]]:
    """Sentences of whitespace-separated columns (blank lines between sentences)."""
    sents, cur = [], []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            cur.append(line.split())
        elif cur:
            sents.append(cur)
            cur = []
    if cur:
        sents.append(cur)
    return sents


@dataclass
class ToyConfig:
    task: str = "toy"
    algo: str = "counts"
    epochs: int = 1

    def validate(self) -> None:
        if self.epochs != 1:
            raise UserError(f"--epochs of the toy task is 1, got {self.epochs}")


class ToyModel:
    def __init__(self, config: ToyConfig, table: dict[str, str], default: str, info: dict):
        self.config, self.table, self.default, self.info = config, table, default, info
        self.labels = sorted(set(table.values()) | {default})

    def tag(self, words: list[str]) -> list[str]:
        return [self.table.get(w, self.default) for w in words]

    def output_column(self) -> tuple[int, str]:
        return 9, "Toy"   # CoNLL-U: MISC, Toy=TAG

    def save(self, path: str) -> None:
        from structkit.model import save_model

        words = sorted(self.table)
        save_model(path, {"task": "toy", "config": vars(self.config), "default": self.default,
                          "info": self.info},
                   {"words": np.array(words, dtype=str), "tags": np.array([self.table[w] for w in words], dtype=str)})


def train_toy(config: ToyConfig, train_path: str, dev_path: str | None = None, on_epoch=None, **kw) -> ToyModel:
    t0 = time.perf_counter()
    counts: dict[str, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    sents = read_rows(train_path)
    for s in sents:
        for row in s:
            counts[row[0]][row[1]] += 1
            overall[row[1]] += 1
    table = {w: max(sorted(c), key=lambda t: c[t]) for w, c in counts.items()}
    default = max(sorted(overall), key=lambda t: overall[t])
    n = sum(len(s) for s in sents)
    model = ToyModel(config, table, default, {"train_tokens": n, "train_seconds": time.perf_counter() - t0})
    if on_epoch is not None:
        on_epoch(1, {"train_updates": n, "epoch_seconds": 0.0})
    return model


def load_toy(path: str, command: str | None = None, tasks_=None) -> ToyModel:
    from structkit.model import load_model

    header, arrays = load_model(path, tasks_ or ("toy",), command)
    return ToyModel(ToyConfig(**header["config"]), dict(zip(arrays["words"].tolist(), arrays["tags"].tolist())),
                    header["default"], header["info"])


class ToyJob(Job):
    """Rows in (the word first), `word TAG` rows out."""

    def __init__(self, model: ToyModel):
        self.model = model

    def output_format(self, inp, ctx) -> str:
        return "conll"

    def process(self, ctx, name: str, data: bytes, first: bool) -> tuple[bytes, int, int]:
        out, tokens, sentences = [], 0, 0
        for block in data.decode("utf-8").split("\n\n"):
            words = [line.split()[0] for line in block.splitlines() if line.strip()]
            if not words:
                continue
            out.append("".join(f"{w}\t{t}\n" for w, t in zip(words, self.model.tag(words))) + "\n")
            tokens += len(words)
            sentences += 1
        return "".join(out).encode("utf-8"), tokens, sentences


@serves("toy")
class ToyEstimator:
    """What the server runs: ``load(path)``, ``predict(X)`` and the model."""

    def __init__(self, model: ToyModel):
        self.model = model

    @classmethod
    def load(cls, path) -> ToyEstimator:
        return cls(load_toy(str(path)))

    @property
    def model_(self) -> ToyModel:
        return self.model

    def predict(self, X, scores: bool = False) -> list:
        return [self.model.tag([w if isinstance(w, str) else w[0] for w in s]) for s in X]


class ToyComponent(Component):
    """The toy in a pipeline (`annotate -m`, ``structkit.load([...])``): its tag as XPOS."""

    kind, noun = "toy", "a toy tagger"
    requires, provides = frozenset({"words"}), frozenset({"xpos"})

    def process(self, sents, name: str = "-") -> None:
        for s in sents:
            for k, tag in enumerate(self.model.tag([r[1] for r in s.rows])):
                s.set_columns(k, {4: tag})


@dataclass(frozen=True)
class ToyTraining(Training):
    def setup(self):
        return ToyConfig, train_toy

    def main_score(self) -> str:
        return "accuracy"

    def trained(self, config, model) -> str:
        return f"{len(model.table)} words, {len(model.labels)} tags"


@dataclass(frozen=True)
class ToyCommand(Command):
    def batch_job(self, task, model_path, command, lower=False):
        model = task.load(model_path, command)
        if lower:
            model.table = {w.lower(): t for w, t in model.table.items()}
        return ToyJob(model), [model_path]


@dataclass(frozen=True)
class ToyTask(Task):
    def load(self, path, command=None, tasks=None):
        return load_toy(path, command, tasks)

    def components(self, model, path=None, **options):
        return [ToyComponent(model, path)]

    def evaluate(self, files, **options):
        gold, pred = (read_rows(f) for f in files)
        pairs = [(g[-1], p[-1]) for gs, ps in zip(gold, pred) for g, p in zip(gs, ps)]
        acc = 100.0 * sum(g == p for g, p in pairs) / len(pairs)
        return {"task": self.name, "accuracy": acc, "tokens": len(pairs)}, f"accuracy {acc:.2f} ({len(pairs)} tokens)"


TOY = ToyTask("toy", ToyTraining("counts"),
              ToyCommand("toytag", "Tag each word with its most frequent training tag (a toy task).",
                         options=(CommandOption(("--lower",), "Tag each word's lower-case form.", bool),)),
              Serving("toy"))


@pytest.fixture
def toy():
    tasks.register(TOY)
    yield TOY
    tasks.unregister(TOY.name)


def cli(*args):
    from structkit.cli import cli as group

    return CliRunner().invoke(group, [str(a) for a in args])


def expected(model_rows, words: list[str]) -> list[str]:
    """The toy's predictions, computed here from the training rows."""
    counts: dict[str, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    for s in model_rows:
        for row in s:
            counts[row[0]][row[1]] += 1
            overall[row[1]] += 1
    best = {w: c.most_common(1)[0][1] for w, c in counts.items()}
    out = []
    for w in words:
        if w in counts:
            tags = [t for t, n in counts[w].items() if n == best[w]]
            out.append(min(tags))
        else:
            top = max(overall.values())
            out.append(min(t for t, n in overall.items() if n == top))
    return out


# ---- the tests ---------------------------------------------------------------------------------
def test_the_toy_task_is_unknown_until_registered():
    assert "toy" not in tasks.names()
    assert "toytag" not in cli("--help").output
    r = cli("train", "--task", "toy", "--train", CHUNK / "train.txt", "--model", "m.npz")
    from structkit.learn.spec import alternatives

    names = tasks.names()   # the built-in tasks (the list grows with the wings)
    assert names[:6] == ("pos", "chunk", "ner", "parse", "rerank", "tokenize") and "morph" in names
    trained = [t.name for t in tasks.tasks() if t.training.trains]   # train offers these (not ud)
    assert r.exit_code != 0 and f"--task must be {alternatives(trained)}, got 'toy'" in str(r.exception)


def test_toy_task_trains_runs_evaluates_batches_through_the_cli(toy, tmp_path):
    m = tmp_path / "toy.npz"
    r = cli("train", "--task", "toy", "--train", CHUNK / "train.txt", "--model", m, "-v")
    assert r.exit_code == 0, (r.output, r.exception)
    assert m.exists()
    train_rows = read_rows(CHUNK / "train.txt")
    n_words = len({row[0] for s in train_rows for row in s})
    assert f"{n_words} words" in r.output and "training tokens" in r.output   # its summary

    # listed and run as its own command
    assert "toytag" in cli("--help").output
    assert "--lower" in cli("toytag", "--help").output
    out = tmp_path / "out.txt"
    r = cli("toytag", "--model", m, CHUNK / "test.txt", "-o", out)
    assert r.exit_code == 0, (r.output, r.exception)
    test_rows = read_rows(CHUNK / "test.txt")
    got = read_rows(out)
    assert [[row[0] for row in s] for s in got] == [[row[0] for row in s] for s in test_rows]
    assert [row[1] for s in got for row in s] == expected(train_rows, [row[0] for s in test_rows for row in s])

    # evaluated: the gold POS column of the test file against the output
    gold = tmp_path / "gold.txt"
    gold.write_text("\n\n".join("\n".join(f"{r_[0]} {r_[1]}" for r_ in s) for s in test_rows) + "\n")
    r = cli("eval", "--task", "toy", gold, out, "--json")
    assert r.exit_code == 0, (r.output, r.exception)
    res = json.loads(r.output)
    pairs = [(g[1], p[1]) for gs, ps in zip(test_rows, got) for g, p in zip(gs, ps)]
    assert res["task"] == "toy" and res["tokens"] == len(pairs)
    assert res["accuracy"] == pytest.approx(100.0 * sum(a == b for a, b in pairs) / len(pairs))
    assert 50 < res["accuracy"] < 100

    # batched: two files into a folder, one worker
    a, b = tmp_path / "in" / "a.txt", tmp_path / "in" / "b.txt"
    a.parent.mkdir()
    a.write_text("the cat\n\nsaid no\n")
    b.write_text("Confidence\nin\n")
    r = cli("toytag", "--model", m, a, b, "--output-dir", tmp_path / "outs", "--jobs", "1")
    assert r.exit_code == 0, (r.output, r.exception)
    for src, words in ((a, ["the", "said"]), (b, ["Confidence", "in"])):
        rows = read_rows(tmp_path / "outs" / (src.stem + ".conll"))
        assert [row[0] for s in rows for row in s] == words
        assert [row[1] for s in rows for row in s] == expected(train_rows, words)


def test_toy_task_is_a_component_of_a_chain(toy, tmp_path):
    """`annotate -m toy` (the English rules, then the toy) and ``structkit.load([toy])`` put
    the toy's tags in XPOS; a parser cannot come after it (it gives no UPOS)."""
    import structkit

    m = tmp_path / "toy.npz"
    assert cli("train", "--task", "toy", "--train", CHUNK / "train.txt", "--model", m).exit_code == 0
    raw = tmp_path / "in.txt"
    raw.write_text("The economy grew zzzunseen .\n", encoding="utf-8")
    r = cli("annotate", "-m", m, raw)
    assert r.exit_code == 0, (r.output, r.exception)
    rows = [ln.split("\t") for ln in r.output.splitlines() if ln and not ln.startswith("#")]
    words = ["The", "economy", "grew", "zzzunseen", "."]
    want = expected(read_rows(CHUNK / "train.txt"), words)
    assert [(x[1], x[3], x[4]) for x in rows] == [(w, "_", t) for w, t in zip(words, want)]
    doc = structkit.load([m])("The economy grew zzzunseen .")
    assert [w.xpos for w in doc.words] == want
    parser = tmp_path / "parser.skm"
    ud = ROOT / "structkit" / "data" / "sample" / "ud"
    assert cli("train", "--task", "parse", "--train", ud / "train.conllu", "--epochs", "1", "--model",
               parser, "-q").exit_code == 0
    r = cli("annotate", "-m", m, "-m", parser, raw)
    assert r.exit_code != 0 and "reads UPOS, which no model before it" in str(r.exception or r.output)


def test_toy_task_is_served(toy, tmp_path):
    pytest.importorskip("starlette")
    from structkit import serve

    m = tmp_path / "toy.npz"
    assert cli("train", "--task", "toy", "--train", CHUNK / "train.txt", "--model", m).exit_code == 0
    served = serve.load_models([f"toy={m}"])
    serve.warm_up(served)
    app = serve.create_app(served)
    try:
        status, body = _post(app, "/toy", {"tokens": [["The", "economy", "grew"], ["zzz-unseen"]]})
        assert status == 200, body
        doc = json.loads(body)
        train_rows = read_rows(CHUNK / "train.txt")
        got = [[t["labels"]["toy"] for t in s["tokens"]] for s in doc["sentences"]]
        assert got == [expected(train_rows, ["The", "economy", "grew"]), expected(train_rows, ["zzz-unseen"])]
        assert doc["models"] == [{"name": "toy", "task": "toy"}]
        status, body = _post(app, "/toy", {"tokens": [["The", "economy"]], "format": "conllu"})
        assert status == 200 and "Toy=" + expected(train_rows, ["The"])[0] in body.decode()
        status, body = _post(app, "/tag", {"tokens": [["The"]]})
        assert status == 404 and b"no pos model is loaded" in body
    finally:
        app.state.pool.shutdown(wait=False)
        app.state.big.shutdown(wait=False)


def _post(app, path: str, doc: dict) -> tuple[int, bytes]:
    """One POST through the ASGI application (no server, no HTTP client library)."""
    body = json.dumps(doc).encode()
    sent = []

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
             "root_path": "", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
             "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                         (b"content-length", str(len(body)).encode())]}
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
