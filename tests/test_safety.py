"""Regression tests for issue 16 (bounded memory, checked model files, read-only installs,
signals, option bounds, edit distance, one-line errors): one or more per numbered case."""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

import structkit.model as model_mod
from clitools import assert_one_line_error, leftovers, sk_cmd, sk_env
from structkit.errors import UserError
from structkit.vocab import pack_strings, unpack_strings
from structkit.model import load_model
from structkit.sequence.task import SequenceTagger, TaggerConfig, train_tagger

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CHUNK_TRAIN = str(FIXTURES / "chunk_train.txt")
CHUNK_TEST = str(FIXTURES / "chunk_test.txt")
NBEST = str(ROOT / "structkit" / "data" / "sample" / "nbest" / "train.jsonl")




@pytest.fixture(scope="module")
def tagger() -> SequenceTagger:
    return train_tagger(TaggerConfig(task="chunk", epochs=2), CHUNK_TRAIN)


@pytest.fixture(scope="module")
def model_file(tagger, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("safety") / "chunk.npz")
    tagger.save(path)
    return path


def raw(path: str) -> tuple[dict, dict[str, np.ndarray]]:
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(arrays.pop("__header__").tobytes().decode("utf-8")), arrays


def write_raw(path, header: dict | str, arrays: dict, checksum: bool = True) -> str:
    if checksum and isinstance(header, dict):
        header = {**header, "checksum": model_mod._checksum(arrays)}
    text = header if isinstance(header, str) else json.dumps(header)
    np.savez_compressed(str(path), __header__=np.frombuffer(text.encode("utf-8"), dtype=np.uint8),
                        **arrays)
    return str(path)


def damaged(path: str, loader=SequenceTagger.load, needle: str = "damaged model file") -> str:
    with pytest.raises(UserError) as ei:
        loader(path)
    msg = str(ei.value)
    assert msg.startswith(f"{path}: ") and "\n" not in msg, msg
    assert needle in msg, msg
    return msg


# ---- 2: vocabularies as offsets + UTF-8 bytes -------------------------------------------------
@pytest.mark.parametrize("words", [[], [""], ["a", "", "bcd"], ["ü", "日本語", "x" * 10_000]])
def test_packed_strings_round_trip(words):
    arrays = pack_strings("v", words)
    assert arrays["v__off"].dtype == np.int64 and arrays["v__utf8"].dtype == np.uint8
    assert unpack_strings("v", arrays) == words


def test_a_lone_surrogate_in_packed_strings_is_not_utf8():
    """No file and no API call puts a lone surrogate in a vocabulary (the API refuses them), so
    one in a model is a crafted or damaged file: unpacking decodes strictly (issue 30 item 6)."""
    arrays = pack_strings("v", ["ok", "\udcff"])
    with pytest.raises(ValueError, match="v is not UTF-8"):
        unpack_strings("v", arrays)


def test_packed_strings_size_is_linear_in_characters():
    words = ["w%d" % i for i in range(10_000)] + ["x" * 100_000]
    arrays = pack_strings("v", words)
    assert sum(a.nbytes for a in arrays.values()) < 300_000  # fixed-width: 10k x 400 kB = 4 GB


def test_inconsistent_packed_strings_are_refused():
    arrays = pack_strings("v", ["ab", "c"])
    arrays["v__off"] = np.array([0, 5, 3])
    with pytest.raises(ValueError):
        unpack_strings("v", arrays)


def test_model_with_a_long_token_stays_small(tmp_path):
    rows = Path(CHUNK_TRAIN).read_text().splitlines()
    rows[0] = "x" * 100_000 + " NN B-NP"
    train = tmp_path / "long.txt"
    train.write_text("\n".join(rows) + "\n")
    path = str(tmp_path / "m.npz")
    t = train_tagger(TaggerConfig(task="chunk", epochs=1), str(train))
    t.save(path)
    header, arrays = raw(path)
    assert sum(a.nbytes for a in arrays.values()) < 2_000_000
    assert all(a.dtype.kind != "U" for a in arrays.values())
    assert "x" * 100_000 in SequenceTagger.load(path).features.known_words()


def test_old_model_files_with_fixed_width_strings_still_load(tagger, model_file, tmp_path):
    header, arrays = raw(model_file)
    old = {}
    for name, a in arrays.items():
        if name.endswith("__off"):
            base = name[:-5]
            old[base] = np.array(unpack_strings(base, arrays), dtype=str)
        elif not name.endswith("__utf8"):
            old[name] = a
    path = write_raw(tmp_path / "old.npz", header, old)
    loaded = SequenceTagger.load(path)
    assert loaded.labels == tagger.labels
    assert loaded.features.known_words() == tagger.features.known_words()


# ---- 3: the model loader checks before it allocates ------------------------------------------
def _crafted_huge(path: Path, elements: int = 10 ** 12) -> str:
    """A small archive whose one array's .npy header declares ``elements`` float64s."""
    header = {"format": "structkit-model", "format_version": 1, "task": "chunk", "checksum": "0" * 64}
    hblob = json.dumps(header).encode()
    from numpy.lib import format as npf

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("__header__.npy", "w") as f:
            npf.write_array(f, np.frombuffer(hblob, dtype=np.uint8))
        with z.open("W_vals.npy", "w") as f:
            npf.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (elements,)})
            f.write(b"\0" * 4096)
    return str(path)


def test_declared_1e12_elements_refused_fast_in_little_memory(tmp_path):
    path = _crafted_huge(tmp_path / "huge.npz")
    tracemalloc.start()
    try:
        msg = damaged(path, lambda p: load_model(p))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "1000000000000 elements" in msg
    assert peak < 100 * 2 ** 20


def test_declared_total_size_over_the_limit(model_file, monkeypatch):
    monkeypatch.setenv("STRUCTKIT_MAX_MODEL_BYTES", "1000")
    assert "STRUCTKIT_MAX_MODEL_BYTES" in damaged(model_file)


@pytest.mark.parametrize("text, needle", [
    ("[" * 200_000 + "]" * 200_000, "nested"),
    ('{"format": "structkit-model", "n": ' + "9" * 100_000 + "}", "digits"),
    ('{"format": "structkit-model", "x": NaN}', "NaN"),
    ('{"format": "structkit-model", "x": Infinity}', "Infinity"),
])
def test_hostile_headers(tmp_path, text, needle):
    path = write_raw(tmp_path / "h.npz", text, {"a": np.zeros(2)}, checksum=False)
    assert needle in damaged(path, lambda p: load_model(p))


@pytest.mark.parametrize("descr", ["|V16", "<c16", "|S8", "O", [("a", "<f8")]])
def test_dtypes_other_than_numbers_and_strings_are_refused(model_file, tmp_path, descr):
    header, arrays = raw(model_file)
    dtype = np.dtype(descr) if descr != "O" else object
    arrays["extra"] = np.zeros(3, dtype=dtype) if descr != "O" else np.array([None] * 3, dtype=object)
    path = tmp_path / "d.npz"
    write_raw(path, header, arrays, checksum=False)
    msg = damaged(str(path), lambda p: load_model(p), needle="")
    assert "dtype" in msg or "damaged" in msg


def _altered(model_file, tmp_path, change) -> str:
    header, arrays = raw(model_file)
    change(header, arrays)
    return write_raw(tmp_path / "altered.npz", header, arrays)


@pytest.mark.parametrize("name, change", [
    ("unknown algo", lambda h, a: h["config"].update(algo="quantum")),
    ("negative depth", lambda h, a: h["config"].update(algo="lookahead", depth=-1)),
    ("brute depth 12", lambda h, a: h["config"].update(algo="lookahead", depth=12, search="brute")),
    ("huge depth", lambda h, a: h["config"].update(algo="lookahead", depth=10 ** 9)),
    ("epochs a string", lambda h, a: h["config"].update(epochs="x")),
    ("NaN weight", lambda h, a: a["W_vals"].__setitem__(0, np.nan)),
    ("inf transition", lambda h, a: a.__setitem__("T", np.full_like(a["T"], np.inf))),
    ("negative row", lambda h, a: a.__setitem__("W_rows", a["W_rows"] - 10 ** 6)),
    ("columns.word -1", lambda h, a: h["columns"].update(word=-1)),
    ("columns.label 99", lambda h, a: h["columns"].update(label=99)),
    ("n_features huge", lambda h, a: h.update(n_features=2 ** 40)),
    ("n_features negative", lambda h, a: h.update(n_features=-5)),
])
def test_header_fields_validated_as_train_does(model_file, tmp_path, name, change):
    damaged(_altered(model_file, tmp_path, change))


def test_parser_header_validation(tmp_path):
    from structkit.parse.parser import DependencyParser, ParserConfig, train_parser

    p = train_parser(ParserConfig(algo="lookahead", depth=0, epochs=1), str(FIXTURES / "parse_train.conll"))
    good = str(tmp_path / "p.npz")
    p.save(good)
    for change in (lambda h, a: h["config"].update(hash_bits=40),
                   lambda h, a: h["config"].update(depth=50),
                   lambda h, a: h["config"].update(depth=-1),
                   lambda h, a: a["W_vals"].__setitem__(0, np.inf),
                   lambda h, a: a.__setitem__("W_rows", a["W_rows"] - 2 ** 40)):
        damaged(_altered(good, tmp_path, change), DependencyParser.load)


def test_reranker_header_validation(tmp_path):
    from structkit.rerank.task import Reranker, RerankConfig, train_reranker

    r = train_reranker(RerankConfig(epochs=1), NBEST)
    good = str(tmp_path / "r.npz")
    r.save(good)
    for change in (lambda h, a: h["features"].update(bins="x"),
                   lambda h, a: h["features"].update(score_scale=-1),
                   lambda h, a: h["config"].update(seed=-1),
                   lambda h, a: h["config"].update(algo="nope"),
                   lambda h, a: a["w_value"].__setitem__(0, np.nan),
                   lambda h, a: a.__setitem__("w_index", a["w_index"] - 10 ** 6)):
        damaged(_altered(good, tmp_path, change), Reranker.load)


def test_unreadable_model_is_permission_denied_not_damaged(model_file, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", model_file)

    monkeypatch.setattr(model_mod, "open", refuse, raising=False)
    msg = damaged(model_file, needle="permission denied")
    assert "damaged" not in msg


# ---- 4: a read-only install -----------------------------------------------------------------
def test_numba_cache_falls_back_with_one_notice(monkeypatch, capsys):
    from structkit import jit

    calls = []

    def fake_njit(**kwargs):
        calls.append(kwargs["cache"])
        if kwargs["cache"]:
            raise RuntimeError("cannot cache function 'f': no locator available for file 'x.py'")
        return lambda f: f

    monkeypatch.setattr(jit, "_njit", fake_njit)
    monkeypatch.setattr(jit, "CACHE", True)
    f = jit.njit(lambda x: x + 1)
    g = jit.njit(cache=jit.CACHE)(lambda x: x * 2)
    assert f(1) == 2 and g(2) == 4
    err = capsys.readouterr().err
    assert err.count("numba cannot write its cache") == 1 and len(err.splitlines()) == 1
    assert jit.CACHE is False and calls == [True, False, False]


# ---- 5: SIGTERM and SIGHUP clean up ---------------------------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signals_remove_temporary_files(model_file, tmp_path, sig):
    out = tmp_path / "out.txt"
    # the command takes over a signal only where it has the default handler (a SIGHUP that
    # nohup told it to ignore stays ignored): give it the default, whatever ran the tests
    p = subprocess.Popen(sk_cmd("chunk", "--model", model_file, "-", "-o", out), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=sk_env(),
                         preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
    p.stdin.write(Path(CHUNK_TEST).read_bytes())
    p.stdin.flush()  # and left open: the command waits for more input, its output open
    deadline = time.monotonic() + 60
    while not leftovers(tmp_path) and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert leftovers(tmp_path), p.communicate()
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig
    assert err.decode().strip() == f"structkit: stopped by {signal.Signals(sig).name}"
    assert not leftovers(tmp_path) and not out.exists()


# ---- 6: a failed train leaves the model alone -------------------------------------------------
def test_metrics_failure_leaves_the_old_model(sk, tmp_path, monkeypatch):
    import structkit.commands.train as cli

    model = tmp_path / "m.npz"
    model.write_bytes(b"old model")

    def full(obj):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cli, "finite", full)
    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", model, "--epochs", "1",
           "--metrics-json", tmp_path / "metrics.json", "-q")
    assert_one_line_error(r, "metrics.json", "disk full")
    assert model.read_bytes() == b"old model"
    assert not (tmp_path / "metrics.json").exists() and not leftovers(tmp_path)


def test_model_write_failure_is_one_line_and_leaves_the_old_model(sk, tmp_path, monkeypatch):
    model = tmp_path / "m.npz"
    model.write_bytes(b"old model")

    def full(self, path):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(SequenceTagger, "save", full)
    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", model, "--epochs", "1",
           "--metrics-json", tmp_path / "metrics.json", "-q")
    assert_one_line_error(r, str(model), "disk full")
    assert model.read_bytes() == b"old model"
    assert not (tmp_path / "metrics.json").exists() and not leftovers(tmp_path)


def test_unwritable_outputs_refused_before_training(sk, tmp_path, monkeypatch):
    import structkit.sequence.task as seq

    monkeypatch.setattr(seq, "train_tagger_on", lambda *a, **k: pytest.fail("trained"), raising=False)
    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", tmp_path / "m.npz",
           "--metrics-json", tmp_path / "no" / "such" / "m.json")
    assert_one_line_error(r, "m.json")
    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", "/dev/null")
    assert_one_line_error(r, "/dev/null", "not a regular file")
    assert not (tmp_path / "m.npz").exists()


# ---- 7: bounds on options --------------------------------------------------------------------
@pytest.mark.parametrize("args, needle", [
    (["--algo", "kbest-larank", "--nr", str(2 ** 63)], "--nr must be at most 1,000"),
    (["--algo", "kbest-pa", "--k", "100000"], "--k must be at most 1,000"),
    (["--algo", "lookahead", "--depth", "1000000000"], "--depth must be at most 64"),
    (["--epochs", str(2 ** 64)], "--epochs must be at most"),
    (["--seed", str(2 ** 63)], "--seed must be at most"),
    (["--algo", "lookahead", "--search", "brute", "--depth", "8"], "use --search dp"),
])
def test_option_upper_bounds(sk, tmp_path, args, needle):
    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", tmp_path / "m.npz", *args)
    assert_one_line_error(r, needle, code=1)
    assert not (tmp_path / "m.npz").exists()


def test_brute_depth_checked_at_tag_time(sk, tmp_path):
    model = tmp_path / "brute.npz"
    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", model, "--algo", "lookahead",
           "--search", "brute", "--depth", "1", "--epochs", "1", "-q")
    assert r.code == 0, r
    assert_one_line_error(sk("chunk", "--model", model, "--depth", "12", CHUNK_TEST), "use --search dp")
    assert_one_line_error(sk("chunk", "--model", model, "--depth", str(2 ** 64), CHUNK_TEST), "--depth")


def test_same_bounds_through_config_and_api(tmp_path):
    from structkit.tasks import make_config

    with pytest.raises(UserError, match="--k must be at most"):
        make_config({"task": "chunk", "algo": "kbest-pa", "k": 10 ** 6})


# ---- 8: word edit distance -------------------------------------------------------------------
def _dp(a, b) -> int:
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j - 1] + (a[i - 1] != b[j - 1]), prev[j] + 1, cur[j - 1] + 1)
        prev = cur
    return prev[-1]


@pytest.mark.parametrize("dp_cells", [0, -1, 4096])
def test_edit_distance_matches_the_dp_reference_on_random_inputs(dp_cells):
    from structkit.rerank.loss import edit_distances

    rng = np.random.default_rng(16)
    hyps, refs = [], []
    for _ in range(1500):
        n, m = rng.integers(0, 40, 2)
        v = int(rng.integers(1, 6))
        hyps.append([str(x) for x in rng.integers(0, v, n)])
        refs.append([str(x) for x in rng.integers(0, v, m)])
    assert edit_distances(hyps, refs, dp_cells=dp_cells).tolist() == [_dp(a, b) for a, b in zip(hyps, refs)]


def test_edit_distance_on_long_inputs_is_not_quadratic():
    from structkit.rerank.loss import edit_distances

    long = [str(i % 997) for i in range(1_000_000)]
    other = list(long)
    other[500_000] = "x"
    del other[10]
    other.append("y")
    # 10^12 DP cells each; the diagonal algorithm does O((n + m) D)
    assert edit_distances([long, long], [other, ["a", "b"]]).tolist() == [3, 1_000_000]


# ---- 9: tracebacks -> one line ---------------------------------------------------------------
def test_stdout_to_dev_full(model_file):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        p = subprocess.run(sk_cmd("chunk", "--model", model_file, CHUNK_TEST), stdout=full,
                           stderr=subprocess.PIPE, env=sk_env(), timeout=120)
    assert p.returncode == 1
    assert p.stderr.decode() == "structkit: error: standard output: no space left on the device (disk full)\n"


@pytest.mark.parametrize("redirect", ["<&-", ">&-"])
def test_closed_standard_streams(model_file, redirect):
    cmd = " ".join(f"'{a}'" for a in sk_cmd("chunk", "--model", model_file, *(() if redirect == "<&-" else (CHUNK_TEST,))))
    p = subprocess.run(["sh", "-c", f"exec {cmd} {redirect}"], capture_output=True, env=sk_env(), timeout=120)
    assert "Traceback" not in p.stderr.decode()
    assert len(p.stderr.decode().splitlines()) <= 1
    if redirect == "<&-":
        assert p.returncode == 1 and "no sentences" in p.stderr.decode()
    else:
        assert p.returncode == 1 and "standard output: closed" in p.stderr.decode()


def test_closed_stdout_is_fine_for_a_command_that_prints_nothing(tmp_path):
    cmd = " ".join(f"'{a}'" for a in sk_cmd("train", "--task", "chunk", "--train", CHUNK_TRAIN,
                                              "--model", tmp_path / "m.npz", "--epochs", "1"))
    p = subprocess.run(["sh", "-c", f"exec {cmd} >&-"], capture_output=True, env=sk_env(), timeout=300)
    assert p.returncode == 0 and p.stderr == b"" and (tmp_path / "m.npz").exists()


def test_broken_pipe_ends_quietly_with_success(model_file, tmp_path):
    big = tmp_path / "big.txt"
    big.write_text((Path(CHUNK_TEST).read_text().rstrip("\n") + "\n\n") * 3000)
    cmd = " ".join(f"'{a}'" for a in sk_cmd("chunk", "--model", model_file, big))
    p = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd} | head -1"], capture_output=True,
                       env=sk_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stderr == b"" and len(p.stdout.splitlines()) == 1


def test_deeply_nested_inputs(sk, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert_one_line_error(sk("train", "--task", "rerank", "--train", deep, "--model", tmp_path / "m"),
                          str(deep), "nested too deeply")
    lines = tmp_path / "deep.jsonl"
    lines.write_text('{"id": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    assert_one_line_error(sk("eval", "--task", "rerank", lines), f"{lines}:1", "nested too deeply")
    toml = tmp_path / "deep.toml"
    toml.write_text('task = "chunk"\nx = ' + "[" * 100_000 + "]" * 100_000 + "\n")
    assert_one_line_error(sk("train", "--config", toml, "--model", tmp_path / "m"), str(toml), "nested")


def test_reranker_negative_seed(sk, tmp_path):
    assert_one_line_error(sk("train", "--task", "rerank", "--train", NBEST, "--model", tmp_path / "m",
                             "--seed", "-1"), "--seed must be a non-negative integer")


def test_os_error_names_the_file():
    from structkit.cli import _os_error_line

    assert _os_error_line(OSError(errno.EACCES, "Permission denied", "/x/y")) == \
        "structkit: error: /x/y: Permission denied"
    assert "standard output" in _os_error_line(OSError(errno.ENOSPC, "No space left on device"))


# ---- 10: smaller faults ----------------------------------------------------------------------
def test_dump_escapes_terminal_control_characters(sk, tmp_path):
    train = tmp_path / "esc.txt"
    train.write_text("The DT B-NP\n\x1b[31mred\x07 NN I-NP\n\nA DT B-NP\n")
    model = tmp_path / "esc.npz"
    assert sk("train", "--task", "chunk", "--train", train, "--model", model, "-q", "--epochs", "1").code == 0
    r = sk("dump", "--model", model, "--top", "100")
    assert r.code == 0 and "\x1b" not in r.out and "\x07" not in r.out
    assert "\\x1b[31mred\\x07" in r.out


@pytest.mark.parametrize("task, text", [
    ("chunk", "The DT B-NP\rcat NN I-NP\r\rA DT B-NP\r"),
    ("parse", "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\r2\tcat\tcat\tNOUN\tNN\t_\t0\troot\t_\t_\r\r"),
])
def test_cr_only_line_endings(sk, tmp_path, task, text):
    train = tmp_path / "cr.txt"
    train.write_bytes(text.encode())
    assert_one_line_error(sk("train", "--task", task, "--train", train, "--model", tmp_path / "m"),
                          f"{train}:1", "line endings are CR only", "convert with")


def test_cutoff_that_keeps_no_features(sk, tmp_path):
    assert_one_line_error(sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", tmp_path / "m",
                             "--cutoff", "1000000000"), "--cutoff 1000000000 keeps no features")


def test_infinite_score_scale_is_refused(sk, tmp_path):
    nb = tmp_path / "inf.jsonl"
    rows = [{"id": f"u{i}", "group": "g", "reference": "a b",
             "hypotheses": [{"text": "a b", "score": 1e308}, {"text": "a c", "score": -1e308}]}
            for i in range(3)]
    nb.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = sk("train", "--task", "rerank", "--train", nb, "--model", tmp_path / "m", "--features", "ngram")
    assert_one_line_error(r, "span more than a float")


def test_json_outputs_are_standard_json():
    from structkit.commands._util import finite

    assert json.dumps(finite({"a": [float("inf"), 1.0, {"b": float("nan")}]}), allow_nan=False) == \
        '{"a": [null, 1.0, {"b": null}]}'


def test_eval_compare_streams(tmp_path):
    from structkit.eval.files import compare_files

    block = Path(CHUNK_TEST).read_text().rstrip("\n") + "\n\n"
    rows = [line.split() for line in block.splitlines() if line]
    sent = "\n".join(f"{r[0]} {r[1]} {r[-1]} {r[-1]}" for r in rows) + "\n\n"
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(sent * 1500)
    b.write_text(sent * 1500)
    size = a.stat().st_size
    tracemalloc.start()
    try:
        result, _ = compare_files("chunk", (str(a),), str(b))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result["tokens"] == 1500 * len(rows)
    assert peak < size  # the two files (and their parsed rows) are never held


def test_read_only_model_folder_refused_before_training(sk, tmp_path, monkeypatch):
    # As root a folder cannot be made unwritable: the refusal mkstemp gives is simulated.
    import tempfile

    import structkit.sequence.task as seq

    ro = tmp_path / "ro"
    ro.mkdir()
    real = tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and os.path.samefile(dir, ro):
            raise PermissionError(errno.EACCES, "Permission denied", str(ro))
        return real(*args, dir=dir, **kwargs)

    def trained(*args, **kwargs):
        raise AssertionError("training ran")

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(seq, "train_tagger", trained)
    r = sk("train", "--task", "chunk", "--train", CHUNK_TRAIN, "--model", ro / "m.npz")
    assert_one_line_error(r, str(ro / "m.npz"), "cannot write: Permission denied")


@pytest.mark.parametrize("name, command, data", [
    ("chunk", "chunk", CHUNK_TEST),
    ("parse", "parse", str(FIXTURES / "parse_train.conll")),
    ("beam", "parse", str(FIXTURES / "parse_train.conll")),
])
def test_model_files_written_before_packed_strings_still_load(sk, name, command, data):
    # Written by structkit before vocabularies were stored as offsets + UTF-8 bytes (fixed-width
    # numpy string arrays), with the output that structkit gave on them.
    old = FIXTURES / "old_models"
    with np.load(old / f"{name}-fixed-width.npz", allow_pickle=False) as z:
        assert any(z[k].dtype.kind == "U" for k in z.files)
    r = sk(command, "--model", old / f"{name}-fixed-width.npz", data)
    assert r.code == 0, r
    assert r.out == (old / f"{name}-fixed-width.out").read_text()
