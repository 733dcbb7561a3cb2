"""'-' in every file argument and option of every command (README: "'-' reads standard input
wherever a file is read"). The command group is walked (``list_commands``/``get_command``, so
the commands each registered task brings are included) and every file-like parameter is given
'-': an input must then read standard input and give what the same file gives (``eval`` GOLD -
after ``tag | ...`` was "the prediction file is not CoNLL-U"); where '-' cannot make sense (a
model to load, a model or metrics file to write, a folder) the command must refuse it in one
line saying so. Either way: no traceback, and no file or folder named '-' left behind.

A parameter is file-like by its name or metavar (``FILE_LIKE``); a new one must be classified
in ``ROLES``. Tasks with sample data in ``TASKS`` are run for real on the shipped sample; a
task without (or a command or parameter the tables do not know) still gets the generic check."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import click
import pytest

from clitools import sk_cmd, sk_env
from structkit.cli import cli
from structkit.tasks import explains
from structkit.datasets import sample_dir

SAMPLE = sample_dir()
RAW = "raw"  # tokenize's input: the raw text of the gold file's `# text` lines, written by the test

# task -> (training file, the command's input, gold for eval), in the shipped sample
TASKS = {
    "pos": ("ud/train.conllu", "ud/test.conllu", "ud/test.conllu"),
    "chunk": ("chunk/train.txt", "chunk/test.txt", "chunk/test.txt"),
    "ner": ("ner/train.txt", "ner/test.txt", "ner/test.txt"),
    "parse": ("ud/train.conllu", "ud/test.conllu", "ud/test.conllu"),
    "rerank": ("nbest/train.jsonl", "nbest/test.jsonl", "nbest/test.jsonl"),
    "tokenize": ("ud/train.conllu", RAW, "ud/test.conllu"),
    "pipeline": ("ud/train.conllu", RAW, "ud/test.conllu"),
}

FILE_LIKE = re.compile(r"(^|_)(path|file|files|output|dir|json|other|models|from)(_|$)")

# What '-' means for a parameter (by its name): read standard input, write standard output, or
# be refused with one line holding the text given. (command, name) overrides name.
READ, WRITE = "read", "write"
MODEL_IN = ("refuse", "standard input ('-') cannot be read as the model file")
ROLES = {
    "files": READ, "file": READ, "train_path": READ, "dev_path": READ, "test_path": READ, "config_path": READ,
    "other": READ, "output": WRITE,
    "model_path": MODEL_IN, "tokenizer_path": MODEL_IN, "tagger_path": MODEL_IN, "models": MODEL_IN,
    "tokenizers": MODEL_IN,
    "output_dir": ("refuse", "--output-dir is a folder"),
    "metrics_json": ("refuse", "--metrics-json is written to a file"),
    "from_files": ("refuse", "standard input ('-') cannot be one"),
    ("train", "model_path"): ("refuse", "--model is written to a file"),
    ("train", "vectors"): ("refuse", "--vectors is read by name, not from standard input ('-')"),
    ("plot", "output"): ("refuse", "-o must end in .png, .svg or .pdf"),
    ("models build", "output"): ("refuse", "--output is written to a file"),
    ("models build", "source"): ("refuse", "--from is a folder"),
    ("models build", "list_file"): ("refuse", "--list names a file"),
    ("models list", "built"): ("refuse", "--built is a folder"),
}


def _file_params():
    """(command words, parameter) for every file-like parameter of every command."""
    ctx = click.Context(cli)
    found = []

    def walk(cmd, words):
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), words + (name,))
            return
        for p in cmd.params:
            if getattr(p, "is_flag", False) or p.name in ("help",):
                continue
            if FILE_LIKE.search(p.name) or re.search(r"FILE|PATH|DIR", str(getattr(p, "metavar", "") or "")):
                found.append((words, p))

    walk(cli, ())
    return found


PARAMS = _file_params()


def _role(words, name):
    return ROLES.get((" ".join(words), name), ROLES.get(name))


def _opt(param) -> str:
    """How the user writes the parameter: its longest option, or '' for an argument."""
    return max(param.opts, key=len) if isinstance(param, click.Option) else ""


def test_the_walk_finds_the_file_parameters_and_each_has_a_role():
    names = {(" ".join(w), p.name) for w, p in PARAMS}
    from structkit.tasks import tasks

    for t in tasks():
        if t.command:
            assert (t.command.name, "files") in names and (t.command.name, "model_path") in names, t.command
    for need in [("eval", "files"), ("eval", "other"), ("eval", "model_path"), ("train", "train_path"),
                 ("train", "dev_path"), ("train", "config_path"), ("train", "model_path"),
                 ("dump", "model_path"), ("explain", "file"), ("data fetch", "from_files")]:
        assert need in names, need
    unknown = sorted(n for n in names if _role(n[0].split(), n[1]) is None)
    assert not unknown, f"classify these parameters in ROLES (read, write or refuse): {unknown}"


# ---- running -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A model per task of TASKS (one epoch on the sample), each command's output on the sample
    input, and tokenize's raw text."""
    import contextlib
    import io

    from structkit.cli import main
    from structkit.tasks import get_task, tasks

    d = tmp_path_factory.mktemp("stdin")
    known = {t.name: t for t in tasks() if t.name in TASKS}

    def run(*args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()) as err, \
                pytest.raises(SystemExit) as ei:
            main([str(a) for a in args])
        assert ei.value.code in (0, None), (args, err.getvalue())
        return out.getvalue()

    raw = d / "raw.txt"  # one paragraph per sentence
    raw.write_text("".join(line[len("# text = "):] + "\n\n" for line in
                           (SAMPLE / "ud" / "test.conllu").read_text().splitlines()
                           if line.startswith("# text = ")))
    w = {"dir": d, "models": {}, "inputs": {}, "outputs": {}, "gold": {}, "tasks": known, "raw": raw}
    for name, t in known.items():
        train, inp, gold = TASKS[name]
        model = d / f"{name}.model"
        run("train", "--task", name, "--train", SAMPLE / train, "--model", model, "--epochs", "1", "-q")
        w["models"][name] = model
        w["inputs"][name] = raw if inp == RAW else SAMPLE / inp
        w["gold"][name] = SAMPLE / gold
        if t.command:
            out = d / f"{name}.out"
            run(t.command.name, "-m", model, w["inputs"][name], "-o", out)
            w["outputs"][name] = out
    w["metrics"] = d / "metrics.json"
    run("train", "--task", "chunk", "--train", SAMPLE / "chunk" / "train.txt", "--model", d / "m.model",
        "--epochs", "2", "-q", "--metrics-json", w["metrics"])
    return w


@pytest.fixture
def here(tmp_path, monkeypatch):
    """Run in an empty folder, so that a file or folder named '-' would be seen."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STRUCTKIT_MIRROR", (tmp_path / "no-mirror").as_uri())
    return tmp_path


def _clean(r, folder: Path) -> None:
    assert "Traceback" not in r.err, r.err
    assert not (folder / "-").exists(), "a file or folder named '-' was written"


def _ok(r, folder: Path) -> None:
    _clean(r, folder)
    assert r.code == 0, r.err
    assert "not CoNLL-U" not in r.err


def _refused(r, folder: Path, needle: str) -> None:
    _clean(r, folder)
    assert r.code != 0, (r.out, r.err)
    lines = r.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("structkit"), r.err
    assert needle in lines[0], (needle, lines[0])


def _task_with(world, pred=lambda t: True):
    for name, t in world["tasks"].items():
        if pred(t):
            return name, t
    pytest.skip("no task of the sample table has this")


def _cases(world, words: tuple, param) -> list[tuple[list, bytes | None, list | None]]:
    """(arguments with '-' for ``param``, standard input, the same arguments with a file instead
    or None) for the known commands; [] where the tables have no invocation."""
    cmd, name, opt = " ".join(words), param.name, _opt(param)
    d, models, inputs = world["dir"], world["models"], world["inputs"]
    by_command = {t.command.name: n for n, t in world["tasks"].items() if t.command}
    if cmd in by_command:
        task = by_command[cmd]
        base = [cmd, "-m", models[task]]
        data = inputs[task].read_bytes()
        if name == "files":
            return [(base + ["-"], data, base + [inputs[task]])]
        if name == "model_path":
            return [([cmd, "-m", "-", inputs[task]], models[task].read_bytes(), None)]
        if name == "output":
            return [(base + [inputs[task], opt, "-"], None, base + [inputs[task]])]
        if name == "tokenizer_path":
            tagger = ["--tagger", models["pos"]] if cmd == "parse" else []  # raw text has no tags to parse with
            return [(base + ["--text", *tagger, opt, "-", world["raw"]], models[task].read_bytes(), None)]
        return [(base + [inputs[task], opt, "-"], models[task].read_bytes(), None)]
    if cmd == "eval":
        if name == "model_path":
            task, _ = _task_with(world, lambda t: "model_path" in t.eval_options)
            return [(["eval", "--task", task, "--model", "-", world["gold"][task], world["outputs"][task]],
                     models[task].read_bytes(), None)]
        if name == "other":
            task, _ = _task_with(world, lambda t: "other" in t.eval_options and "scheme" in t.eval_options)
            out = world["outputs"][task]
            return [(["eval", "--task", task, out, "--compare", "-"], out.read_bytes(),
                     ["eval", "--task", task, out, "--compare", out])]
        cases = []  # every task: GOLD - (the prediction piped in) and - PRED (the gold piped in)
        for task in world["outputs"]:
            gold, out = world["gold"][task], world["outputs"][task]
            files = ["eval", "--task", task, gold, out]
            cases.append((["eval", "--task", task, gold, "-"], out.read_bytes(), files))
            cases.append((["eval", "--task", task, "-", out], gold.read_bytes(), files))
        return cases
    if cmd == "train":
        if name == "train_path":
            return [(["train", "--task", task, "--train", "-", "--model", d / f"in-{task}.model",
                      "--epochs", "1", "-q"], (SAMPLE / TASKS[task][0]).read_bytes(), None)
                    for task in world["tasks"]]
        pos = ["train", "--task", "pos", "--train", SAMPLE / "pos" / "train.txt", "--epochs", "1", "-q"]
        if name == "dev_path":
            return [(pos + ["--dev", "-", "--model", d / "dev.model"], (SAMPLE / "pos" / "dev.txt").read_bytes(),
                     None)]
        if name == "test_path":
            return [(pos + ["--test", "-", "--model", d / "test.model"], (SAMPLE / "pos" / "test.txt").read_bytes(),
                     None)]
        if name == "config_path":
            return [(pos[:1] + pos[3:] + ["--config", "-", "--model", d / "cfg.model"],
                     b'task = "pos"\nepochs = 1\n', None)]
        return [(pos + ["--model", d / "x.model"] + ([opt, "-"] if name != "model_path" else ["--model", "-"]),
                 None, None)]
    if cmd == "explain":
        task, t = _task_with(world, lambda t: explains(t))
        base = ["explain", "-m", models[task], "--sentence", "1", "--token", "2"]
        if name == "file":
            return [(base + ["-"], inputs[task].read_bytes(), base + [inputs[task]])]
        return [(["explain", "-m", "-", inputs[task]], models[task].read_bytes(), None)]
    if cmd == "dump":
        task = next(iter(models))
        return [(["dump", "-m", "-"], models[task].read_bytes(), None)]
    if cmd == "plot":
        if name == "files":
            return [(["plot", "-o", d / "p.png", "-"], world["metrics"].read_bytes(), None)]
        return [(["plot", "-o", "-", world["metrics"]], None, None)]
    if cmd == "info":
        task = next(iter(models))
        return [(["info", "-"], models[task].read_bytes(), None)]
    if cmd == "models build":
        return [(["models", "build", "ud:English-ParTUT/pos", opt, "-"], None, None)]
    if cmd == "data fetch":
        return [(["data", "fetch", "conll2000", "--from", "-"], b"", None)]
    return []


@pytest.mark.parametrize("words,param", PARAMS, ids=[f"{' '.join(w)} {_opt(p) or p.name}" for w, p in PARAMS])
def test_dash_is_read_or_refused_in_one_line(world, here, sk, words, param):
    role = _role(words, param.name)
    if words == ("serve",):  # a server that wrongly started would not return: a process with a timeout
        task = next(iter(world["models"]))
        model = world["models"][task]
        args = (("-m", "-") if param.name == "models" else ("-m", str(model), _opt(param), "-"))
        p = subprocess.run(sk_cmd("serve", *args, "--port", "0"), input=model.read_bytes(),
                           capture_output=True, timeout=120, env=sk_env(), cwd=here)
        from clitools import Run
        _refused(Run(p.returncode, p.stdout.decode(), p.stderr.decode()), here, role[1])
        return
    if words == ("plot",):
        from conftest import require_extra
        require_extra("matplotlib", "test")
    cases = _cases(world, words, param)
    if not cases:  # a command or task the tables do not know: '-' alone must still end cleanly
        r = sk(*words, *([_opt(param)] if _opt(param) else []), "-", stdin=b"")
        _clean(r, here)
        assert r.code == 0 or (len(r.err.splitlines()) == 1 and r.err.startswith("structkit")), r.err
        return
    for args, stdin, same_with_files in cases:
        r = sk(*args, stdin=stdin)
        if role in (READ, WRITE):
            _ok(r, here)
            if same_with_files is not None:
                want = sk(*same_with_files)
                assert want.code == 0, want.err
                assert r.out == want.out, args
        else:
            _refused(r, here, role[1])


def test_eval_scores_the_prediction_piped_in_for_every_task(world, here, sk):
    """`structkit CMD -m M GOLD | structkit eval --task T GOLD -` for each task with a command:
    the scores the files give, also as --json."""
    assert world["outputs"], "no task with a command"
    for task, out in world["outputs"].items():
        gold = world["gold"][task]
        piped = sk("eval", "--task", task, "--json", gold, "-", stdin=out.read_bytes())
        _ok(piped, here)
        files = sk("eval", "--task", task, "--json", gold, out)
        assert files.code == 0, files.err
        assert json.loads(piped.out) == json.loads(files.out), task


def test_eval_conlleval_layout_on_stdin_and_errors_name_stdin(world, here, sk):
    spans = [n for n, t in world["tasks"].items() if "scheme" in t.eval_options and n in world["outputs"]]
    assert spans
    task = spans[0]
    out = world["outputs"][task].read_bytes()
    r = sk("eval", "--task", task, "-", stdin=out)
    _ok(r, here)
    assert "FB1" in r.out and r.out == sk("eval", "--task", task, world["outputs"][task]).out
    # A broken prediction on standard input is reported as <stdin>, not as a temporary file.
    lines = out.decode().splitlines()
    lines[0] = lines[0].rsplit(" ", 1)[0] + " NOT-A-TAG"
    bad = sk("eval", "--task", task, world["gold"][task], "-", stdin=("\n".join(lines) + "\n").encode())
    _refused(bad, here, "<stdin>:1:")
    assert "structkit-stdin-" not in bad.err
    # Standard input can be read once.
    twice = sk("eval", "--task", task, "-", "-", stdin=out)
    _refused(twice, here, "standard input ('-') can be only one of the inputs")
    also = sk("eval", "--task", task, "-", "--compare", "-", stdin=out)
    _refused(also, here, "FILES (1) and --compare")


def test_train_takes_stdin_once(world, here, sk):
    r = sk("train", "--task", "pos", "--train", "-", "--dev", "-", "--model", here / "m.model", stdin=b"")
    _refused(r, here, "given for --train and --dev")
    assert not (here / "m.model").exists()


def test_spooled_stdin_leaves_no_temporary_file(world, here, sk, monkeypatch):
    import os
    import tempfile

    made = []
    real = tempfile.mkstemp

    def mkstemp(*a, **kw):
        fd, path = real(*a, **kw)
        made.append(path)
        return fd, path

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    task = next(iter(world["outputs"]))
    r = sk("eval", "--task", task, world["gold"][task], "-", stdin=world["outputs"][task].read_bytes())
    _ok(r, here)
    spooled = [p for p in made if os.path.basename(p).startswith("structkit-stdin-")]
    assert len(spooled) == 1 and not os.path.exists(spooled[0])
    bad = sk("eval", "--task", task, world["gold"][task], "-", stdin=b"\xff\xfe not text\n")
    _refused(bad, here, "structkit: error: <stdin>: ")
    assert "structkit-stdin-" not in bad.err
    spooled = [p for p in made if os.path.basename(p).startswith("structkit-stdin-")]
    assert len(spooled) == 2 and not any(os.path.exists(p) for p in spooled)
