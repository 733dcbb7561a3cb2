"""Property-based fuzzing (hypothesis) of everything that reads a user's file: the CoNLL,
CoNLL-U/CoNLL-X and n-best readers, the TOML config loader and the model loader.

The property: every input either loads or raises ``structkit.errors.UserError`` -- never any
other exception. The work is bounded, not the clock: every strategy caps its sizes (rows,
fields, bytes, nesting), so an example's cost is bounded by construction, and no wall-clock
deadline is asserted (hypothesis' ``deadline`` is off: a loaded machine must not fail a test).
A reader that hung on a small input would still stop the suite, which is how it shows. Inputs are
drawn near the valid formats (valid rows with mutations: wrong column counts, empty fields,
tabs, CR, NUL, BOM, odd Unicode, huge or negative numbers, deep nesting), not only as random
bytes, so they reach past the first check. Examples per subject: ``FUZZ_EXAMPLES`` (derandomized,
so the suite is reproducible; set STRUCTKIT_FUZZ_EXAMPLES to run more).
"""
from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import require_extra  # noqa: E402

hypothesis = require_extra("hypothesis", "test", module_level=True)
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from structkit.errors import UserError  # noqa: E402
# Imported here, not in the first (timed) example: numba's import alone takes a second or two.
import structkit.config  # noqa: E402,F401
import structkit.io.conllu  # noqa: E402,F401
import structkit.io.nbest  # noqa: E402,F401
import structkit.model  # noqa: E402,F401
import structkit.tasks  # noqa: E402,F401
import structkit.parse.parser  # noqa: E402,F401
import structkit.sequence.task  # noqa: E402,F401

FUZZ_EXAMPLES = int(os.environ.get("STRUCTKIT_FUZZ_EXAMPLES", "150"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"

fuzz = settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True,
                database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                      HealthCheck.filter_too_much])

_DIR = tempfile.mkdtemp(prefix="structkit-fuzz-")


def _file(data: bytes | str, suffix: str = ".txt") -> str:
    path = os.path.join(_DIR, "input" + suffix)
    with open(path, "wb") as f:
        f.write(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return path


def loads_or_user_error(fn, *args) -> None:
    try:
        fn(*args)
    except UserError as e:
        assert "\n" not in str(e), str(e)


# ---- building blocks ------------------------------------------------------------------------
ODD = ["", " ", "\t", "\r", "\x00", "\ufeff", "\u2028", "_", "-", "#", "0", "-1", "1e999",
       "99999999999999999999999", "\udcff", "é", "日本", "\x1b[31m", "NaN"]
field = st.one_of(st.sampled_from(["The", "DT", "B-NP", "I-NP", "NN", "O", "1", "2", "0", "root",
                                   "det", "_"] + ODD),
                  st.text(max_size=12))


def rows_text(n_cols: st.SearchStrategy, seps=("\t", " ", "  ")) -> st.SearchStrategy:
    row = st.tuples(st.lists(field, min_size=0, max_size=12), st.sampled_from(seps))
    line = st.one_of(row.map(lambda r: r[1].join(r[0])), st.sampled_from(["", "", "# comment",
                                                                          "-DOCSTART- -X- O O"]))
    return st.tuples(st.lists(line, max_size=40), st.sampled_from(["\n", "\r\n", "\r"])).map(
        lambda t: t[1].join(t[0]) + t[1])


def conllu_line() -> st.SearchStrategy:
    ids = st.one_of(st.integers(-2, 12).map(str), st.sampled_from(["1-2", "3.1", "0", "x", "1-", ""]))
    heads = st.one_of(st.integers(-2, 12).map(str), st.sampled_from(["_", "x", "99999999999999999999"]))
    cols = st.tuples(ids, field, field, st.sampled_from(["NOUN", "DET", "VERB", "_", ""]), field,
                     st.sampled_from(["_", "Number=Sing", "a=b|c", "=", "|"]), heads,
                     st.sampled_from(["root", "det", "nsubj", "_", ""]), st.sampled_from(["_", "0:root", "x"]),
                     st.sampled_from(["_", "SpaceAfter=No", "NER=B-PER", "a"]))
    token = st.tuples(cols, st.integers(0, 3)).map(lambda t: "\t".join(t[0][:10 - t[1]] if t[1] else t[0]))
    return st.one_of(token, st.sampled_from(["", "# sent_id = 1", "# text = The cat", "#", "# text ="]))


# ---- the subjects -----------------------------------------------------------------------------
@fuzz
@given(rows_text(st.integers(1, 6)))
def test_fuzz_conll_reader(text):
    from structkit.io.conll import read_conll

    loads_or_user_error(lambda p: list(read_conll(p)), _file(text))


@fuzz
@given(st.binary(max_size=400))
def test_fuzz_conll_reader_bytes(data):
    from structkit.io.conll import read_conll
    from structkit.io.conllu import read_sequence

    path = _file(data)
    loads_or_user_error(lambda p: list(read_conll(p)), path)
    loads_or_user_error(lambda p: list(read_sequence(p)), path)


@fuzz
@given(st.lists(conllu_line(), max_size=30))
def test_fuzz_conllu_and_conllx_readers(lines):
    from structkit.io.conllu import checked_tree, read_conllu
    from structkit.io.conllx import read_conllx
    from structkit.parse.parser import read_treebank

    path = _file("\n".join(lines) + "\n", ".conllu")
    loads_or_user_error(lambda p: [checked_tree(s, p) for s in read_conllu(p)], path)
    loads_or_user_error(lambda p: list(read_conllx(p)), path)
    loads_or_user_error(read_treebank, path)


def _containers(inner: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4))


json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
              st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=10)),
    _containers, max_leaves=12)
hyp = st.one_of(st.fixed_dictionaries({"text": st.one_of(st.text(max_size=20), json_value),
                                       "score": st.one_of(st.floats(allow_nan=True), json_value)}),
                st.text(max_size=20), json_value)
utterance = st.one_of(
    st.fixed_dictionaries({"id": st.one_of(st.text(max_size=5), json_value),
                           "group": st.one_of(st.text(max_size=5), json_value),
                           "reference": st.one_of(st.text(max_size=20), json_value),
                           "hypotheses": st.one_of(st.lists(hyp, max_size=5), json_value)}),
    st.dictionaries(st.sampled_from(["id", "group", "reference", "hypotheses", "input", "output",
                                     "input1", "am_score"]), json_value, max_size=5),
    json_value)


def _json(v) -> str:
    return json.dumps(v, allow_nan=True)


@fuzz
@given(st.lists(utterance, max_size=6), st.sampled_from(["jsonl", "json", "raw"]), st.integers(0, 3))
def test_fuzz_nbest_reader(utts, layout, depth):
    from structkit.io.nbest import read_nbest

    if layout == "jsonl":
        text = "".join(_json(u) + "\n" for u in utts)
    elif layout == "json":
        text = _json(utts)
    else:
        text = "[" * (depth * 40_000) + "]" * (depth * 40_000) if depth else _json(utts)[: len(utts) * 7]
    loads_or_user_error(read_nbest, _file(text, ".json" if layout == "json" else ".jsonl"))


toml_key = st.sampled_from(["task", "algo", "epochs", "seed", "depth", "k", "nr", "cutoff", "templates",
                            "columns", "margin", "C", "window", "min_cluster", "label_order", "search",
                            "name", "bogus", "hash_bits", "beam", "order", "features", "topic_levels"])
toml_value = st.one_of(st.integers(-2 ** 70, 2 ** 70).map(str), st.floats().map(repr),
                       st.text(max_size=10).map(lambda s: json.dumps(s)), st.sampled_from(
                           ['"chunk"', '"pos"', '"parse"', '"rerank"', '"lookahead"', '"brute"', "true",
                            "[1, 2]", '["w[0]", "x"]', "{a = 1}", "[[[]]]", "1979-05-27", "'''x'''"]))


@fuzz
@given(st.lists(st.tuples(toml_key, toml_value), max_size=8), st.sampled_from(["", "[data]\ntrain = 1\n",
                                                                               "[data]\nx = 'y'\n", "[[x]]\n"]),
       st.integers(0, 2), st.text(max_size=30))
def test_fuzz_toml_config(pairs, tail, depth, junk):
    from structkit.config import load_config
    from structkit.tasks import make_config

    body = "".join(f"{k} = {v}\n" for k, v in pairs) + tail
    if depth:
        body += "deep = " + "[" * (depth * 30_000) + "]" * (depth * 30_000) + "\n"
    if junk and len(pairs) % 3 == 0:
        body += junk

    def load(p):
        cfg = load_config(p)
        cfg.pop("data", None)
        for meta in ("name", "description", "experiment"):
            cfg.pop(meta, None)
        if cfg.get("task"):
            make_config(cfg)

    loads_or_user_error(load, _file(body, ".toml"))


# ---- model files ------------------------------------------------------------------------------
_MODEL: dict = {}


def _model() -> tuple[bytes, dict, dict]:
    """A small valid tagger model: its bytes, header and arrays (built once)."""
    if not _MODEL:
        from structkit.sequence.task import TaggerConfig, train_tagger

        t = train_tagger(TaggerConfig(task="chunk", epochs=1), str(FIXTURES / "chunk_train.txt"))
        path = os.path.join(_DIR, "valid.npz")
        t.save(path)
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        header = json.loads(arrays.pop("__header__").tobytes().decode("utf-8"))
        _MODEL.update(bytes=Path(path).read_bytes(), header=header, arrays=arrays)
    return _MODEL["bytes"], _MODEL["header"], _MODEL["arrays"]


@pytest.fixture(scope="module")
def valid_model():
    """The model is trained (and numba compiled) outside the timed examples."""
    return _model()


def _load_tagger(path: str) -> None:
    from structkit.sequence.task import SequenceTagger

    SequenceTagger.load(path)


@fuzz
@given(flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=8), keep=st.floats(0, 1))
def test_fuzz_model_bytes(valid_model, flips, keep):
    data = bytearray(_model()[0])
    for where, value in flips:
        data[min(int(where * len(data)), len(data) - 1)] = value
    data = bytes(data[: max(1, int(len(data) * keep))] if keep < 0.98 else data)
    loads_or_user_error(_load_tagger, _file(data, ".npz"))


HEADER_PATHS = [("config", "algo"), ("config", "depth"), ("config", "epochs"), ("config", "search"),
                ("config", "label_order"), ("config", "k"), ("config", "order"), ("config", "cutoff"),
                ("config", "templates"), ("columns", "word"), ("columns", "pos"), ("columns", "label"),
                ("columns", "n_columns"), ("columns", "names"), ("features", "templates"),
                ("features", "attrs"), ("n_features",), ("task",), ("format_version",), ("config",),
                ("columns",), ("info",)]


@fuzz
@given(changes=st.lists(st.tuples(st.sampled_from(HEADER_PATHS), json_value), min_size=1, max_size=3),
       array_change=st.sampled_from(["none", "shape", "nan", "negative", "drop"]), fix_checksum=st.booleans())
def test_fuzz_model_header_and_arrays(valid_model, changes, array_change, fix_checksum):
    import copy

    import structkit.model as model_mod

    _, header, arrays = _model()
    header = copy.deepcopy(header)
    arrays = dict(arrays)
    for path, value in changes:
        d = header
        for k in path[:-1]:
            d = d.get(k) if isinstance(d, dict) else None
        if isinstance(d, dict):
            d[path[-1]] = value
    if array_change == "shape":
        arrays["T"] = np.zeros((3, 3))
    elif array_change == "nan":
        arrays["W_vals"] = np.full_like(arrays["W_vals"], np.nan)
    elif array_change == "negative":
        arrays["W_rows"] = arrays["W_rows"] - 7
    elif array_change == "drop":
        arrays.pop("labels__off")
    if fix_checksum:
        header["checksum"] = model_mod._checksum(arrays)
    text = json.dumps(header, allow_nan=True)
    path = os.path.join(_DIR, "fuzzed.npz")
    np.savez_compressed(path, __header__=np.frombuffer(text.encode("utf-8"), dtype=np.uint8), **arrays)
    loads_or_user_error(_load_tagger, path)


npy_shape = st.lists(st.integers(0, 2 ** 63), max_size=3).map(tuple)
npy_descr = st.sampled_from(["<f8", "<i8", "|u1", "<U5", "|b1", "|O", "|V8", "<c16", ">f8", "<U999999999",
                             "<f8,<i4", "x"])


@fuzz
@given(npy_descr, npy_shape, st.booleans(), st.binary(max_size=64))
def test_fuzz_npy_member_headers(descr, shape, fortran, payload):
    """Archive members whose .npy headers declare anything: refused before any allocation."""
    header = {"format": "structkit-model", "format_version": 1, "task": "chunk", "checksum": "0" * 64}
    path = os.path.join(_DIR, "crafted.npz")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("__header__.npy", _npy("|u1", (len(json.dumps(header)),), False) + json.dumps(header).encode())
        z.writestr("W_vals.npy", _npy(descr, shape, fortran) + payload)
    from structkit.model import load_model

    loads_or_user_error(load_model, path)


def _npy(descr: str, shape: tuple, fortran: bool) -> bytes:
    text = repr({"descr": descr, "fortran_order": fortran, "shape": shape}).encode("latin1")
    pad = 64 - (10 + len(text) + 1) % 64
    text = text + b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text


# ---- the Python API's arguments (issue 30 item 6) -------------------------------------------------
# Each public entry point is called with odd values for its arguments: None, integers (huge ones
# too), floats (NaN, inf), bytes, booleans, dicts, lists and tuples of mixed types, strings with
# a lone surrogate or NUL, and a string of 100k characters; near-valid values are mixed in
# (token lists, label lists, file names) so that calls also get past the first check. Every call
# works or raises UserError. Paths are relative to a fresh folder (a save of an odd name that
# works writes there); standard input is empty.
import io as _io  # noqa: E402
import itertools  # noqa: E402

import structkit  # noqa: E402

HUGE = "x" * 100_000
odd_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70), st.floats(), st.binary(max_size=12),
    st.text(max_size=12),
    st.sampled_from(["", " ", "\x00", "a\x00b", "\udc80", "a\ud800b", "-", ".", "..", "/", "/dev/null",
                     "/dev/zero", "pos", "chunk", "ner", "parse", "perceptron", "viterbi", "word,pos",
                     "O", "B-NP", "NN", "the", HUGE, "\ufeff", "\n", "a b"]))
odd = st.recursive(odd_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(st.sampled_from(["word", "pos", "hypotheses", "text", "score", "reference", "id",
                                     "group", "x"]), inner, max_size=3)), max_leaves=10)
tokens = st.lists(st.lists(st.sampled_from(["the", "dog", "a", "\udc80", "", " x", "\x00"]),
                           min_size=0, max_size=4), max_size=3)
labels = st.lists(st.lists(st.sampled_from(["NN", "DT", "B-NP", "O", "I-X", "", "a b", "\ud800"]),
                           max_size=4), max_size=3)
arg = st.one_of(odd, tokens, labels)
OPTIONS = ["task", "algo", "epochs", "templates", "depth", "margin", "seed", "C", "cutoff", "features",
           "topic_levels", "window", "beam", "pos", "hash_bits", "columns", "label_order", "lam",
           "dev_split", "patience", "refit", "nonsense"]
options = st.dictionaries(st.sampled_from(OPTIONS), odd, max_size=3)


@pytest.fixture(scope="module", autouse=True)
def _api_sandbox(tmp_path_factory):
    """A fresh working folder and an empty standard input for the API examples."""
    import sys

    old_cwd, old_stdin = os.getcwd(), sys.stdin
    os.chdir(tmp_path_factory.mktemp("api-fuzz"))
    sys.stdin = _io.TextIOWrapper(_io.BytesIO(b""), encoding="utf-8")
    try:
        yield
    finally:
        os.chdir(old_cwd)
        sys.stdin = old_stdin


def works_or_user_error(fn, *args, **kwargs) -> None:
    """Call; a lazy result (a reader's generator) is read, at most 1000 items."""
    try:
        out = fn(*args, **kwargs)
        if hasattr(out, "__next__"):
            list(itertools.islice(out, 1000))
    except UserError as e:
        assert "\n" not in str(e), str(e)


_TRAINED: dict = {}


def _trained() -> dict:
    """A small trained Tagger, Parser and Reranker (built once, outside the examples)."""
    if not _TRAINED:
        _TRAINED["Tagger"] = structkit.Tagger(task="chunk", epochs=1).fit(str(FIXTURES / "chunk_train.txt"))
        _TRAINED["Parser"] = structkit.Parser(algo="lookahead", depth=0, epochs=1).fit(
            str(FIXTURES / "parse_train.conll"))
        _TRAINED["Reranker"] = structkit.Reranker(epochs=1).fit(
            str(FIXTURES / "nbest" / "train_hyporadise.json"))
    return _TRAINED


@pytest.fixture(scope="module")
def trained():
    return _trained()


ESTIMATORS = ["Tagger", "Parser", "Reranker"]


@fuzz
@given(st.sampled_from(ESTIMATORS), odd, options)
def test_fuzz_api_constructors(cls, task, opts):
    if cls == "Tagger":
        opts.pop("task", None)
        works_or_user_error(structkit.Tagger, task, **opts)
    else:
        works_or_user_error(getattr(structkit, cls), **opts)


@fuzz
@given(st.sampled_from(ESTIMATORS), arg, arg, st.one_of(st.none(), odd, st.tuples(arg, arg)),
       st.one_of(st.none(), odd))
def test_fuzz_api_fit(cls, X, y, dev, on_epoch):
    est = structkit.Tagger(task="pos", epochs=1) if cls == "Tagger" else getattr(structkit, cls)(epochs=1)
    works_or_user_error(est.fit, X, y, dev=dev, on_epoch=on_epoch)


@fuzz
@given(st.sampled_from(ESTIMATORS), st.sampled_from(["predict", "score", "call", "predict_index"]),
       arg, arg, odd)
def test_fuzz_api_predict_and_score(trained, cls, method, X, y, extra):
    est = trained[cls]
    if method == "predict":
        kw = {"depth": extra} if cls != "Reranker" else {}
        works_or_user_error(est.predict, X, **kw)
    elif method == "score":
        works_or_user_error(est.score, X, y)
    elif method == "call" and cls == "Tagger":
        works_or_user_error(est, X)
    elif method == "predict_index" and cls == "Reranker":
        works_or_user_error(est.predict_index, X)


@fuzz
@given(st.sampled_from(ESTIMATORS), odd)
def test_fuzz_api_save_and_load(trained, cls, path):
    works_or_user_error(trained[cls].save, path)
    works_or_user_error(getattr(structkit, cls).load, path)


READERS = ["read_conll", "read_text", "read_conllx", "read_conllu", "read_nbest", "read_chosen",
           "load_conll", "load_conllx"]


@fuzz
@given(st.sampled_from(READERS), odd, st.one_of(st.none(), odd, st.lists(arg, max_size=3)))
def test_fuzz_api_readers(name, path, second):
    fn = getattr(structkit, name)
    if name in ("read_nbest", "load_conll"):
        works_or_user_error(fn, path, second) if second is not None else works_or_user_error(fn, path)
    elif name == "read_chosen":
        works_or_user_error(fn, path, second)
    elif name == "load_conllx":
        works_or_user_error(fn, path)
    else:  # second: a stream (None: read the path), an odd value or a list of "lines"
        works_or_user_error(fn, path, second)


@fuzz
@given(st.sampled_from(["write_conll", "write_conllx", "write_conllu"]), st.integers(0, 3), arg, arg,
       st.one_of(st.just("stringio"), odd), st.one_of(st.none(), arg))
def test_fuzz_api_writers(name, n_real, sentences, preds, out, extra):
    fn = getattr(structkit, name)
    real = {"write_conll": lambda: list(structkit.read_conll(str(FIXTURES / "chunk_test.txt")))[:n_real],
            "write_conllx": lambda: list(structkit.read_conllx(str(FIXTURES / "parse_train.conll")))[:n_real],
            "write_conllu": lambda: structkit.tokenize("The cat sat. It ran away. Then it slept.")[:n_real]}
    if n_real:
        sentences = real[name]()
    stream = _io.StringIO() if out == "stringio" else out
    if name == "write_conll":
        works_or_user_error(fn, sentences, preds, stream)
    elif name == "write_conllx":
        works_or_user_error(fn, sentences, stream, heads=extra, deprels=preds if extra is None else None)
    else:
        works_or_user_error(fn, sentences, stream, upos=preds, xpos=extra)


@fuzz
@given(odd, st.one_of(st.just("en"), odd), st.one_of(st.sampled_from(["auto", "lines"]), odd))
def test_fuzz_api_tokenize(text, lang, split):
    works_or_user_error(structkit.tokenize, text, lang, split)


_words = st.sampled_from(["the", "dog", "runs", "A", "1,000", "U.S.", "'s", "é", "日本"])
_labels = st.sampled_from(["NN", "DT", "VBZ", "B-NP", "I-NP", "O"])
near_word = st.one_of(_words, _words, _words, _words, _words, _words, odd_scalar)   # mostly valid
near_label = st.one_of(_labels, _labels, _labels, _labels, _labels, _labels, odd_scalar)


@fuzz
@given(st.sampled_from(["pos", "chunk"]),
       st.lists(st.lists(st.tuples(near_word, near_label), min_size=1, max_size=4), min_size=1, max_size=3))
def test_fuzz_api_fit_predict_score_near_valid(task, sents):
    """Shapes that match (one label per token), words and labels mostly valid: training runs,
    then predict and score on the same data."""
    X = [[w for w, _ in s] for s in sents]
    y = [[lab for _, lab in s] for s in sents]
    t = structkit.Tagger(task=task, epochs=1)
    try:
        t.fit(X, y)
    except UserError as e:
        assert "\n" not in str(e)
        return
    works_or_user_error(t.predict, X, scores=True)
    works_or_user_error(t.score, X, y)
