"""Property-based fuzzing (hypothesis) of `structkit serve` over real HTTP on 127.0.0.1: its
JSON requests and the HTTP around them.

The property: every request is answered 200, or a 4xx whose body is ``{"error": "one line"}``
(uvicorn's own answer to a request that is not HTTP at all is a 400 of one plain-text line),
never a 5xx; and the server keeps answering. Strings are drawn from all of Unicode, lone
surrogates included (JSON spells them ``"\\ud800"``), mixed with words the models know; bodies
near the valid shape (the known fields, with values of the right and the wrong types, models
loaded and not) as well as random JSON and bytes; raw HTTP with odd methods, paths, headers,
Host and Origin values and lengths. The work is bounded, not the clock: strings, lists and
nesting are capped, so no example is large, and no deadline is asserted. Examples per test:
``SERVE_FUZZ_EXAMPLES`` (derandomized; STRUCTKIT_FUZZ_EXAMPLES runs more).
"""
from __future__ import annotations

import http.client
import json
import os
import socket
from pathlib import Path

import pytest

from conftest import require_extra

require_extra("starlette", "serve", module_level=True)
require_extra("uvicorn", "serve", module_level=True)
hypothesis = require_extra("hypothesis", "test", module_level=True)
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from test_serve import Server  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
UD = ROOT / "structkit" / "data" / "sample" / "ud"
NER = ROOT / "structkit" / "data" / "sample" / "ner"
CHUNK = ROOT / "structkit" / "data" / "sample" / "chunk"

SERVE_FUZZ_EXAMPLES = int(os.environ.get("STRUCTKIT_FUZZ_EXAMPLES", "300"))
fuzz = settings(max_examples=SERVE_FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """pos, ner, chunk and parse models (the shipped samples) and a one-label NER model."""
    import structkit

    d = tmp_path_factory.mktemp("serve-fuzz")
    structkit.Tagger(task="pos", epochs=3).fit(str(UD / "train.conllu")).save(d / "pos.npz")
    structkit.Tagger(task="ner", epochs=3, templates="ner-nopos").fit(str(NER / "train.txt")) \
        .save(d / "ner.npz")
    structkit.Tagger(task="chunk", epochs=3).fit(str(CHUNK / "train.txt")).save(d / "chunk.npz")
    structkit.Parser(epochs=2, hash_bits=16).fit(str(UD / "train.conllu")).save(d / "parser.npz")
    lines = (NER / "train.txt").read_text().splitlines()
    (d / "o.txt").write_text("\n".join(" ".join(ln.split()[:-1] + ["O"]) if ln.strip() else ""
                                       for ln in lines) + "\n")
    structkit.Tagger(task="ner", epochs=1, templates="ner-nopos").fit(str(d / "o.txt")).save(d / "o.npz")
    s = Server([a for n in ("pos", "ner", "chunk", "parser", "o") for a in ("-m", f"{n}={d / n}.npz")])
    yield s
    assert s.stop() == 0


# ---- strategies ------------------------------------------------------------------------------
WORDS = ["Ada", "met", "Marta", "in", "Paris", ".", ",", "isn't", "the", "dog", "barks", "NN",
         "PROPN", "VERB", "_", "1", "\t", "\n", " ", "\u00a0", "\u200b", "\ufeff", "\x00", "é",
         "😀", "\ud800", "\udfff", "\ud83d", "#", "-", "1-2", "'", "\"", "\\"]
# All of Unicode: every category, and lone surrogates (Cs, which st.characters leaves out unless
# asked for by name).
any_char = st.one_of(st.characters(exclude_categories=()), st.characters(categories=["Cs"]))
text = st.one_of(
    st.text(any_char, max_size=40),
    st.lists(st.sampled_from(WORDS), max_size=30).map(" ".join),
    st.lists(st.one_of(st.sampled_from(WORDS), st.text(any_char, min_size=1, max_size=6)),
             max_size=20).map(" ".join),
)
word = st.one_of(st.sampled_from(WORDS), st.text(any_char, max_size=8))
token = st.one_of(word, st.lists(word, min_size=0, max_size=3))
tokens = st.lists(st.lists(token, max_size=8), max_size=4)
conllu_row = st.tuples(st.sampled_from(["1", "2", "1-2", "0", "x", "3.1", ""]), word, word,
                       st.sampled_from(["NOUN", "VERB", "_", "PROPN"]), word, word,
                       st.sampled_from(["0", "1", "2", "_", "-1"]), word, word, word) \
    .map("\t".join)
conllu = st.lists(st.one_of(conllu_row, st.sampled_from(["", "# text = x", "#"]), text),
                  max_size=8).map(lambda rows: "\n".join(rows) + "\n")
json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
              st.floats(allow_nan=False, allow_infinity=False), text),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(any_char, max_size=6), inner, max_size=4)),
    max_leaves=12)
model_name = st.one_of(st.sampled_from(["pos", "ner", "chunk", "parser", "o", "nope", ""]),
                       st.text(any_char, max_size=8))
field_values = {
    "text": text, "tokens": st.one_of(tokens, json_value), "conllu": st.one_of(conllu, json_value),
    "model": st.one_of(model_name, json_value), "tagger": model_name,
    "models": st.one_of(st.lists(model_name, max_size=4), json_value),
    "scores": st.one_of(st.booleans(), json_value), "explain": st.one_of(st.booleans(), json_value),
    "format": st.one_of(st.sampled_from(["json", "conllu", "xml"]), json_value),
    "lang": st.one_of(st.sampled_from(["en", "de", "xx", ""]), st.text(any_char, max_size=4)),
}
near_valid = st.tuples(st.fixed_dictionaries({}, optional=field_values),
                       st.dictionaries(st.text(any_char, max_size=8), json_value, max_size=1)) \
    .map(lambda p: {**p[0], **p[1]})
one_input = st.sampled_from(["text", "tokens", "conllu"]).flatmap(
    lambda k: st.fixed_dictionaries({k: {"text": text, "tokens": tokens, "conllu": conllu}[k]},
                                    optional={f: field_values[f] for f in
                                              ("model", "tagger", "models", "scores", "explain",
                                               "format", "lang")}))
body = st.one_of(one_input, one_input, near_valid, json_value)
path = st.one_of(st.sampled_from(["/tag", "/chunk", "/ner", "/parse", "/pipeline"]),
                 st.sampled_from(["/", "/models", "/health", "/openapi.json", "/nothing", "/tag/"]))


# Requests a client means (right endpoint, loaded models, the right types) with drawn text,
# token lists or CoNLL-U, so that most examples reach the tokenizer, the models and the output.
def _plausible(draw_input, where, extra):
    return st.tuples(st.just(where), st.tuples(draw_input, st.fixed_dictionaries({}, optional=extra))
                     .map(lambda p: {**p[0], **p[1]}))


flags = {"scores": st.booleans(), "explain": st.booleans(), "format": st.sampled_from(["json", "conllu"])}
inputs = st.one_of(st.fixed_dictionaries({"text": text}), st.fixed_dictionaries({"tokens": tokens}),
                   st.fixed_dictionaries({"conllu": conllu}))
plain_words = st.lists(st.lists(word, min_size=1, max_size=8), min_size=1, max_size=3)
pairs = st.lists(st.lists(st.tuples(word, st.sampled_from(["NN", "DT", "VBZ", "PROPN", "_"]))
                          .map(list), min_size=1, max_size=8), min_size=1, max_size=3)
wordy = st.one_of(st.fixed_dictionaries({"text": text}), st.fixed_dictionaries({"tokens": plain_words}))
plausible = st.one_of(
    _plausible(wordy, "/tag", flags),
    _plausible(wordy, "/ner", {**flags, "model": st.sampled_from(["ner", "o"])})
    .map(lambda r: (r[0], {"model": "ner", **r[1]})),
    _plausible(st.fixed_dictionaries({"tokens": pairs}), "/chunk", flags),
    _plausible(inputs, "/parse", {**flags, "tagger": st.just("pos")}),
    _plausible(wordy, "/pipeline", {**flags, "models": st.sampled_from(
        [["pos"], ["pos", "parser"], ["ner", "o"], ["pos", "chunk", "ner", "parser"], ["o"]])}),
)


def _check(status: int, payload: bytes, ctype: str) -> None:
    assert status < 500, (status, payload[:300])
    if status >= 400:
        if ctype.startswith("text/plain"):   # uvicorn's own answer to a request that is not HTTP
            assert status == 400 and payload.count(b"\n") == 0, payload
            return
        assert ctype == "application/json", (status, ctype, payload[:300])
        out = json.loads(payload)
        assert set(out) == {"error"} and isinstance(out["error"], str) and out["error"]
        assert "\n" not in out["error"] and "Traceback" not in out["error"]
        out["error"].encode("utf-8")
    elif ctype == "application/json":
        json.loads(payload)


def _post(server: Server, where: str, data: bytes) -> tuple[int, bytes, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        conn.request("POST", where, body=data, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, r.read(), r.getheader("content-type", "")
    finally:
        conn.close()


@fuzz
@given(req=st.one_of(plausible, plausible, st.tuples(path, body)), ascii_only=st.booleans())
def test_json_requests_are_answered_or_one_line_4xx(server, req, ascii_only):
    """Any JSON body, on any endpoint: 200, or a 4xx of one line; never a 5xx."""
    where, doc = req
    # JSON escapes lone surrogates as \\udxxx (what a client's JSON library writes); the other
    # characters raw UTF-8 or escaped
    data = json.dumps(doc, ensure_ascii=True) if ascii_only else \
        json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    _check(*_post(server, where, data.encode("utf-8") if isinstance(data, str) else data))


@fuzz
@given(where=path, data=st.one_of(st.binary(max_size=200), text.map(lambda t: t.encode("utf-8", "surrogatepass"))))
def test_raw_bodies_are_answered_or_one_line_4xx(server, where, data):
    """Bytes that are not JSON, not UTF-8, or encode a surrogate (CESU-style): one-line 4xx."""
    _check(*_post(server, where, data))


header_value = st.one_of(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=30),
                         st.binary(max_size=20).map(lambda b: b.decode("latin-1")),
                         st.sampled_from(["localhost", "127.0.0.1", "evil.example", "[::1]:1",
                                          "null", "http://evil.example", "", "1" * 30, "-1",
                                          "chunked", "100-continue"]))
header_name = st.one_of(st.sampled_from(["Host", "Origin", "Content-Length", "Content-Type",
                                         "Transfer-Encoding", "Expect", "Connection"]),
                        st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7e), min_size=1,
                                max_size=12))


@fuzz
@given(method=st.one_of(st.sampled_from(["GET", "POST", "PUT", "HEAD", "OPTIONS", "DELETE"]),
                        st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7e), min_size=1,
                                max_size=8)),
       target=st.one_of(path, st.text(any_char, max_size=20).map(
           lambda t: "/" + t.encode("utf-8", "surrogatepass").decode("latin-1"))),
       headers=st.lists(st.tuples(header_name, header_value), max_size=5),
       doc=st.one_of(st.none(), one_input))
def test_raw_http_is_answered_below_500(server, method, target, headers, doc):
    """Raw HTTP/1.1 with odd methods, paths (any bytes), headers, Host/Origin values and
    lengths: every answer is below 500 (uvicorn answers what is not HTTP with its 400)."""
    data = b"" if doc is None else json.dumps(doc).encode()
    lines = [f"{method} {target} HTTP/1.1".encode("latin-1", "replace")]
    names = {n.lower() for n, _ in headers}
    if "host" not in names:
        lines.append(b"Host: 127.0.0.1")
    if "content-length" not in names and "transfer-encoding" not in names:
        lines.append(b"Content-Length: %d" % len(data))
    lines += [f"{n}: {v}".encode("latin-1", "replace") for n, v in headers]
    lines.append(b"Connection: close")
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as c:
        c.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + data)
        c.shutdown(socket.SHUT_WR)   # a body shorter than its Content-Length ends here
        r = http.client.HTTPResponse(c, method=method if method == "HEAD" else "GET")
        try:
            r.begin()
        except (http.client.RemoteDisconnected, ConnectionResetError):
            return   # closed without an answer: a request that never ended
        if method == "HEAD":   # no body to read
            assert r.status < 500
        else:
            _check(r.status, r.read(), r.getheader("content-type", ""))
    status, _, _ = server.request("GET", "/health")
    assert status == 200
