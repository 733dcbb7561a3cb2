"""`structkit serve` over real HTTP on 127.0.0.1: every endpoint, every error code, concurrent
requests, the time limit and SIGTERM; and the web page in a real headless Chromium."""
from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

try:
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError:
    if os.environ.get("CI"):  # the test extra installs them: in CI their absence is a failure
        raise
    pytest.skip("the serve extra is not installed (pip install 'structkit-nlp[serve]')",
                allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
UD = ROOT / "structkit" / "data" / "sample" / "ud"
NER = ROOT / "structkit" / "data" / "sample" / "ner"
CHUNK = ROOT / "structkit" / "data" / "sample" / "chunk"
SENTENCE = "Ada Brannock met Marta Quill in Paris on Monday."


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    """A UD POS tagger and a labelled parser (sample treebank) and a words-only NER tagger."""
    import structkit

    d = tmp_path_factory.mktemp("serve-models")
    structkit.Tagger(task="pos", epochs=5).fit(str(UD / "train.conllu")).save(d / "pos.npz")
    structkit.Tagger(task="ner", epochs=5, templates="ner-nopos").fit(str(NER / "train.txt")) \
        .save(d / "ner.npz")
    # without the morph templates: this parser reads no FEATS or LEMMA, so the POS tagger's tags
    # are all it needs on raw text (a parser that reads FEATS is refused after a POS tagger)
    structkit.Parser(epochs=3, hash_bits=18, templates="base,labels,valency,distance,labelset") \
        .fit(str(UD / "train.conllu")).save(d / "parser.npz")
    structkit.Tagger(task="chunk", epochs=5).fit(str(CHUNK / "train.txt")).save(d / "chunk.npz")
    structkit.Tagger(task="ner", algo="lookahead", depth=1, epochs=3, templates="ner-nopos") \
        .fit(str(NER / "train.txt")).save(d / "ner-la.npz")
    return {"pos": d / "pos.npz", "ner": d / "ner.npz", "parser": d / "parser.npz",
            "chunk": d / "chunk.npz", "ner-la": d / "ner-la.npz"}


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


class Server:
    def __init__(self, args: list[str]):
        self.proc = subprocess.Popen([sys.executable, "-m", "structkit", "serve", "--port", "0", *args],
                                     stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=_env(),
                                     text=True)
        self.first_line = self.proc.stderr.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", self.first_line)
        if m is None:
            self.proc.kill()
            raise AssertionError(f"the server did not start: {self.first_line}{self.proc.stderr.read()}")
        self.port = int(m.group(1))

    def request(self, method: str, path: str, body=None, headers=None, raw: bytes | None = None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        conn.request(method, path, body=data, headers=headers or {})
        r = conn.getresponse()
        payload = r.read()
        conn.close()
        ctype = r.getheader("content-type", "")
        return r.status, (json.loads(payload) if "json" in ctype else payload.decode()), ctype

    def post(self, path: str, body):
        return self.request("POST", path, body, {"Content-Type": "application/json"})

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=15)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.last_words = self.proc.stderr.read()
            self.proc.stderr.close()


@pytest.fixture(scope="module")
def server(model_files):
    s = Server([a for name, p in model_files.items() for a in ("-m", f"{name}={p}")])
    yield s
    s.stop()


@pytest.fixture(scope="module")
def api_models(model_files):
    import structkit

    return {"pos": structkit.Tagger.load(model_files["pos"]),
            "ner": structkit.Tagger.load(model_files["ner"]),
            "parser": structkit.Parser.load(model_files["parser"]),
            "chunk": structkit.Tagger.load(model_files["chunk"]),
            "ner-la": structkit.Tagger.load(model_files["ner-la"])}


# ---- the endpoints -------------------------------------------------------------------------------
def test_health_models_and_openapi(server, api_models):
    status, health, _ = server.request("GET", "/health")
    assert status == 200 and health["status"] == "ok" and health["models"] == 5
    status, doc, _ = server.request("GET", "/models")
    assert status == 200
    meta = {m["name"]: m for m in doc["models"]}
    assert {n: m["task"] for n, m in meta.items()} == {"pos": "pos", "ner": "ner", "parser": "parse",
                                                       "chunk": "chunk", "ner-la": "ner"}
    assert meta["chunk"]["needs_pos"] and not meta["ner"]["needs_pos"]
    for name in ("pos", "ner"):
        est = api_models[name]
        assert meta[name]["labels"] == est.labels
        assert meta[name]["train_sha256"] == est.info["train_sha256"] and len(est.info["train_sha256"]) == 64
        assert meta[name]["algorithm"] == est.config.algo
    assert meta["parser"]["algorithm"] == "beam" and "nsubj" in meta["parser"]["labels"]
    status, spec, _ = server.request("GET", "/openapi.json")
    assert status == 200 and spec["openapi"].startswith("3.")
    assert {"/tag", "/chunk", "/ner", "/parse", "/pipeline", "/models", "/health"} <= set(spec["paths"])
    status, page, ctype = server.request("GET", "/")
    assert status == 200 and ctype.startswith("text/html") and "<svg" not in page.split("<script>")[0]
    # self-contained: no CDN, no other file, no URL at all (the pictures come drawn from the
    # server: structkit.rendering)
    assert "<link" not in page and "<script src" not in page and "@import" not in page
    assert re.findall(r"https?://[^\"' ]+", page) == []


def test_tag_text_offsets_labels_and_scores(server, api_models):
    text = "Ada Brannock met Marta Quill in Paris.  It isn't far."
    status, out, _ = server.post("/tag", {"text": text})
    assert status == 200
    sents = out["sentences"]
    assert len(sents) == 2
    for s in sents:
        words = [t["form"] for t in s["tokens"]]
        labels, margins = api_models["pos"].predict([words], scores=True)[0]
        assert [t["labels"]["pos"] for t in s["tokens"]] == labels
        assert [t["scores"]["pos"] for t in s["tokens"]] == pytest.approx(margins, abs=1e-3)
        in_mwt = {i for m in s.get("multiword", []) for i in range(m["first"], m["last"] + 1)}
        for t in s["tokens"]:
            if t["id"] not in in_mwt:
                assert text[t["start"]:t["end"]] == t["form"]
    # "isn't" is one surface token of two words, both with the token's offsets
    mwt = sents[1]["multiword"]
    assert [(m["form"], text[m["start"]:m["end"]]) for m in mwt] == [("isn't", "isn't")]
    assert [t["form"] for t in sents[1]["tokens"]][1:3] == ["is", "n't"]


def test_ner_spans_from_tokens(server, api_models):
    tokens = [["Ada", "Brannock", "met", "Marta", "Quill", "in", "Paris", "."]]
    status, out, _ = server.post("/ner", {"tokens": tokens, "scores": False, "model": "ner"})
    assert status == 200
    s = out["sentences"][0]
    labels = api_models["ner"].predict(tokens)[0]
    assert [t["labels"]["ner"] for t in s["tokens"]] == labels
    assert "scores" not in s["tokens"][0]
    from structkit.spans import phrases

    assert [(sp["type"], sp["start"], sp["end"]) for sp in s["spans"]] == phrases(labels, "iob2")
    assert any(sp["type"] == "PER" for sp in s["spans"])  # the sample model learnt these names
    for sp in s["spans"]:
        assert sp["text"] == " ".join(tokens[0][sp["start"]:sp["end"]])


def test_span_text_from_raw_text_in_every_sentence(server):
    """A span's text is the request text at its char_start:char_end, in every sentence (it was
    cut from the sentence's own text with whole-text offsets: wrong after the first sentence)."""
    text = "It rained. Ada Brannock met Marta Quill in Paris on Monday. Then Ada Brannock left."
    status, out, _ = server.post("/ner", {"text": text, "model": "ner", "scores": False})
    assert status == 200
    spans = [sp for s in out["sentences"] for sp in s["spans"]]
    assert len(out["sentences"]) == 3 and any(sp["type"] == "PER" for sp in spans)
    for sp in spans:
        assert sp["text"] == text[sp["char_start"]:sp["char_end"]] != ""


def test_chunk_reads_pos_from_pairs_or_from_the_pos_model(server, api_models):
    pairs = [["The", "DT"], ["dog", "NN"], ["barks", "VBZ"], ["at", "IN"], ["the", "DT"], ["cat", "NN"],
             [".", "."]]
    status, out, _ = server.post("/chunk", {"tokens": [pairs]})
    assert status == 200
    labels = api_models["chunk"].predict([[tuple(p) for p in pairs]])[0]
    s = out["sentences"][0]
    assert [t["labels"]["chunk"] for t in s["tokens"]] == labels
    assert [t["input_pos"] for t in s["tokens"]] == [p for _, p in pairs]
    from structkit.spans import phrases

    assert [(sp["type"], sp["start"], sp["end"]) for sp in s["spans"]] == phrases(labels, "iob2")
    assert ("NP", 0, 2) in [(sp["type"], sp["start"], sp["end"]) for sp in s["spans"]]
    # in a pipeline the chunker reads the pos model's tags
    status, out, _ = server.post("/pipeline", {"text": "The dog barks.", "models": ["chunk", "pos"]})
    assert status == 200
    toks = out["sentences"][0]["tokens"]
    want = api_models["chunk"].predict([[(t["form"], t["labels"]["pos"]) for t in toks]])[0]
    assert [t["labels"]["chunk"] for t in toks] == want


def test_parse_with_pos_pairs_and_with_a_tagger(server, api_models):
    pairs = [["Ada", "PROPN"], ["met", "VERB"], ["Marta", "PROPN"], [".", "PUNCT"]]
    status, out, _ = server.post("/parse", {"tokens": [pairs]})
    assert status == 200 and out["warnings"] == []
    heads, rels = api_models["parser"].predict([[tuple(p) for p in pairs]], labels=True)[0]
    toks = out["sentences"][0]["tokens"]
    assert [t["head"] for t in toks] == heads and [t["deprel"] for t in toks] == rels
    assert sum(h == 0 for h in heads) >= 1
    # words only with a tagger named: the parser reads the tagger's POS
    status, out2, _ = server.post("/parse", {"tokens": [[w for w, _ in pairs]], "tagger": "pos"})
    assert status == 200
    pos = api_models["pos"].predict([[w for w, _ in pairs]])[0]
    heads2, rels2 = api_models["parser"].predict([list(zip([w for w, _ in pairs], pos))], labels=True)[0]
    assert [t["head"] for t in out2["sentences"][0]["tokens"]] == heads2
    assert [t["labels"]["pos"] for t in out2["sentences"][0]["tokens"]] == pos
    # words only, no POS at all: parsed, and said so
    status, out3, _ = server.post("/parse", {"tokens": [["Ada", "met", "Marta"]]})
    assert status == 200 and "read no POS" in out3["warnings"][0]


def test_pipeline_json_and_conllu_agree(server):
    status, js, _ = server.post("/pipeline", {"text": SENTENCE, "models": ["pos", "ner", "parser"]})
    assert [m["name"] for m in js["models"]] == ["pos", "ner", "parser"]
    assert status == 200
    status, conllu, ctype = server.post("/pipeline", {"text": SENTENCE, "format": "conllu",
                                                      "models": ["pos", "ner", "parser"]})
    assert status == 200 and ctype.startswith("text/plain")
    rows = [ln.split("\t") for ln in conllu.splitlines() if ln and not ln.startswith("#")]
    toks = js["sentences"][0]["tokens"]
    assert len(rows) == len(toks)
    for r, t in zip(rows, toks):
        assert r[1] == t["form"] and r[3] == t["labels"]["pos"]
        assert r[6] == str(t["head"]) and r[7] == t["deprel"]
        assert f"NER={t['labels']['ner']}" in r[9]
    assert "# text = " + SENTENCE in conllu
    # CoNLL-U in: the parser's output replaces HEAD/DEPREL, the rest of the lines stay
    status, again, _ = server.post("/parse", {"conllu": conllu, "format": "conllu"})
    assert status == 200 and again == conllu
    status, js2, _ = server.post("/tag", {"conllu": conllu})
    assert status == 200
    assert [t["input_pos"] for t in js2["sentences"][0]["tokens"]] == [t["labels"]["pos"] for t in toks]


def test_render_gives_the_picture_of_each_sentence(server):
    """"render": true adds each sentence's SVG (structkit.rendering, the page's and Doc's
    renderer) and the legend; the SVG is the JSON's words, tags, arcs, spans and multiword
    tokens, with every value escaped."""
    import xml.etree.ElementTree as ET

    text = "Ada <b>Brannock</b> isn't in Paris & Rome. Marta Quill met her."
    body = {"text": text, "models": ["pos", "ner", "parser"]}
    status, plain, _ = server.post("/pipeline", body)
    assert status == 200 and "legend" not in plain and "svg" not in plain["sentences"][0]
    status, js, _ = server.post("/pipeline", {**body, "render": True})
    assert status == 200 and len(js["sentences"]) == 2
    assert {(x["model"], x["type"]) for x in js["legend"]} >= {("ner", "PER"), ("ner", "LOC")}
    colour = {(x["model"], x["type"]): x["colour"] for x in js["legend"]}
    assert len(set(colour.values())) == len(colour)
    for k, s in enumerate(js["sentences"]):
        assert "<b>" not in s["svg"]
        svg = ET.fromstring(s["svg"])
        ns = "{http://www.w3.org/2000/svg}"
        assert svg.get("data-sent") == str(k)
        texts = lambda cls: [e.text for e in svg.iter(f"{ns}text") if e.get("class") == cls]  # noqa: E731
        assert texts("word") == [t["form"] for t in s["tokens"]]
        assert texts("pos") == [t["labels"]["pos"] for t in s["tokens"]]
        arcs = sorted((int(p.get("data-dep")), int(p.get("data-head")), p.get("data-label"))
                      for p in svg.iter(f"{ns}path"))
        assert arcs == sorted((t["id"], t["head"], t["deprel"]) for t in s["tokens"] if t["head"])
        spans = [(g.get("data-model"), g.get("data-type"), int(g.get("data-start")), int(g.get("data-end")),
                  g.find(f"{ns}rect").get("fill")) for g in svg.iter(f"{ns}g") if g.get("class") == "span"]
        want = [("ner", x["type"], x["start"], x["end"], colour[("ner", x["type"])]) for x in s["spans"]]
        want += [("token", m["form"], m["first"] - 1, m["last"], spans[-1][4]) for m in s.get("multiword", [])]
        assert spans == want
    first = ET.fromstring(js["sentences"][0]["svg"])
    assert [g.get("data-type") for g in first.iter("{http://www.w3.org/2000/svg}g")
            if g.get("data-model") == "token"] == ["isn't"]
    status, out, _ = server.post("/pipeline", {**body, "render": "yes"})
    assert status == 400 and "render must be true or false" in out["error"]


def test_explanations(server):
    status, out, _ = server.post("/pipeline", {"text": SENTENCE, "explain": True,
                                               "models": ["pos", "ner", "parser"]})
    assert status == 200
    t = out["sentences"][0]["tokens"][0]
    e = t["explanations"]["pos"]
    assert e["label"] == t["labels"]["pos"] and e["runner_up"] not in (None, e["label"])
    assert e["margin"] == pytest.approx(t["scores"]["pos"], abs=1e-3) and e["margin"] >= 0
    assert e["for"] and all(w > 0 for _, w in e["for"]) and all(w < 0 for _, w in e["against"])
    assert "parser" not in t["explanations"]  # a parser has no per-token explanation


def test_a_history_based_model_gets_decision_margins_and_explanations(server, api_models):
    """A history-based (lookahead) model: labels as the API gives them, and its decision
    margins and explanations as `--scores` and `explain` compute them."""
    meta = {m["name"]: m for m in server.request("GET", "/models")[1]["models"]}
    assert meta["ner-la"]["scores"] and meta["ner-la"]["decoder"] == "lookahead"
    status, out, _ = server.post("/ner", {"text": SENTENCE, "model": "ner-la", "explain": True})
    assert status == 200
    toks = out["sentences"][0]["tokens"]
    words = [[t["form"] for t in toks]]
    (labels, margins), = api_models["ner-la"].predict(words, scores=True)
    assert [t["labels"]["ner-la"] for t in toks] == labels and len(margins) == len(toks)
    for t, m in zip(toks, margins):
        assert t["scores"]["ner-la"] == pytest.approx(m, abs=1e-3)
        e = t["explanations"]["ner-la"]
        assert e["label"] == t["labels"]["ner-la"] and e["margin"] == pytest.approx(m, abs=1e-3)


# ---- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path, body, status, words", [
    ("/tag", b"{not json", 400, "bad JSON"),
    ("/tag", b"[1, 2]", 400, "JSON object"),
    ("/tag", b'{"text": 5}', 400, "text must be a string"),
    ("/tag", b'{"text": "a", "tokens": [["a"]]}', 400, "exactly one"),
    ("/tag", b'{"text": "a", "file": "/etc/passwd"}', 400, "unknown field 'file'"),
    ("/tag", b'{"tokens": [["a b"]]}', 400, "without whitespace"),
    ("/tag", b'{"text": "a", "format": "xml"}', 400, "format"),
    ("/tag", b'{"text": "a", "model": "nope"}', 404, "no pos model named 'nope'"),
    ("/ner", b'{"text": "a"}', 400, "several ner models are loaded (ner, ner-la)"),
    ("/tag", b'{"text": "a", "model": "ner"}', 404, "no pos model named 'ner'"),
    ("/chunk", b'{"text": "a"}', 400, "reads a POS tag per token"),
    ("/chunk", b'{"text": "a", "model": "chunkr"}', 404, "no chunk model named 'chunkr'"),
    ("/pipeline", b'{"text": "a", "models": ["pos", "x"]}', 404, "no model named 'x'"),
    ("/nothing", b'{"text": "a"}', 404, "no such endpoint"),
    ("/parse", b'{"conllu": "1\\tx\\n"}', 400, "conllu"),
    ("/tag", b'{"text": "   "}', 400, "no words"),
])
def test_errors_are_one_json_line(server, path, body, status, words):
    got, out, ctype = server.request("POST", path, raw=body, headers={"Content-Type": "application/json"})
    assert got == status and ctype == "application/json"
    assert set(out) == {"error"} and words in out["error"] and "\n" not in out["error"]


def test_method_not_allowed(server):
    status, out, _ = server.request("GET", "/tag")
    assert status == 405 and "GET is not allowed" in out["error"]


def test_request_size_limit(server):
    big = json.dumps({"text": "word " * 300_000}).encode()  # 1.5 MB > the 1 MiB default
    status, out, _ = server.request("POST", "/tag", raw=big, headers={"Content-Type": "application/json"})
    assert status == 413 and "limit" in out["error"]
    # no Content-Length (chunked): counted while reading
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", "/tag", body=iter([big[i:i + 65536] for i in range(0, len(big), 65536)]),
                 encode_chunked=True, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 413 and "limit" in json.loads(r.read())["error"]
    conn.close()
    status, _, _ = server.request("GET", "/health")  # and the server is fine
    assert status == 200


def test_concurrent_requests_get_the_sequential_answers(server):
    texts = [SENTENCE, "Marta Quill met Ada in Rome.", "It rains in Paris.", "Ada isn't here today."]
    expected = {}
    for i, t in enumerate(texts):
        for ep in ("/tag", "/pipeline"):
            status, out, _ = server.post(ep, {"text": t})
            assert status == 200
            expected[(ep, i)] = out

    def one(k: int):
        ep, i = ("/tag", "/pipeline")[k % 2], k % len(texts)
        return (ep, i), server.post(ep, {"text": texts[i]})

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, range(160)))
    assert all(r[1][0] == 200 for r in results)
    assert all(r[1][1] == expected[r[0]] for r in results)


def test_accepted_connections_do_not_wait_for_delayed_acks(server):
    """A kept-alive connection is not held up 40 ms per response (Nagle's algorithm against the
    client's delayed ACK): the server's socket sets TCP_NODELAY, which the connections it
    accepts inherit; and a kept-alive connection answers request after request."""
    import socket

    from structkit.serve import bind_socket

    sock = bind_socket("127.0.0.1", 0)
    try:
        sock.listen(1)
        client = socket.create_connection(sock.getsockname()[:2], timeout=10)
        conn, _ = sock.accept()
        assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        conn.close()
        client.close()
    finally:
        sock.close()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    body = json.dumps({"tokens": [["Ada", "met", "Marta", "."]]}).encode()
    for _ in range(5):
        conn.request("POST", "/tag", body=body, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 200 and r.getheader("connection", "keep-alive") != "close"
        assert json.loads(r.read())["sentences"][0]["tokens"][0]["form"] == "Ada"
    conn.close()


# ---- time limit, SIGTERM, command-line mistakes ---------------------------------------------------------------
def test_time_limit_and_sigterm(model_files):
    s = Server(["-m", str(model_files["parser"]), "-m", str(model_files["pos"]), "--timeout", "0.001"])
    try:
        assert "pos: pos" in s.first_line and "parser: parse" in s.first_line
        status, out, _ = s.post("/pipeline", {"text": " ".join([SENTENCE] * 400)})
        assert status == 503 and "limit of 0.001 s" in out["error"]
        status, _, _ = s.request("GET", "/health")
        assert status == 200
        status, out, _ = s.post("/ner", {"text": "a"})
        assert status == 404 and out["error"] == "no ner model is loaded"
    finally:
        code = s.stop()   # SIGTERM; stop() waits at most 15 s, then kills (exit -9)
    assert code == 0
    assert "stopped" in s.last_words


def test_cli_mistakes_are_one_line(sk, model_files, tmp_path, monkeypatch):
    r = sk("serve", "-m", str(tmp_path / "missing.npz"), "--port", "0")
    assert r.code == 1 and "no such" in r.err and r.err.count("\n") == 1
    r = sk("serve", "-m", str(UD / "train.conllu"), "--port", "0")
    assert r.code == 1 and "not a structkit model" in r.err and r.err.count("\n") == 1
    r = sk("serve", "-m", f"a={model_files['pos']}", "-m", f"a={model_files['ner']}", "--port", "0")
    assert r.code == 1 and "two models are named 'a'" in r.err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        r = sk("serve", "-m", str(model_files["pos"]), "--port", str(taken.getsockname()[1]))
    assert r.code == 1 and "cannot listen on 127.0.0.1:" in r.err and r.err.count("\n") == 1
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    r = sk("serve", "-m", str(model_files["pos"]), "--port", "0")
    assert r.code == 1 and "structkit serve needs the serve extra: pip install 'structkit-nlp[serve]'" in r.err


# ---- one request cannot stall the others (issue 30, item 5) ----------------------------------
BIG_SENTENCE = "The committee said on Tuesday that the new rules, which take effect next year, would cut costs."
BIG_TEXT = " ".join([BIG_SENTENCE] * 5000)   # 100,000 words as the tokenizer cuts them


def _health(s: Server) -> dict:
    status, out, _ = s.request("GET", "/health")
    assert status == 200
    return out


def _until(what, s: Server, guard: int = 600):
    """Poll /health until ``what(health)`` holds; a hang guard (about 60 s), not a time limit."""
    for _ in range(guard):
        h = _health(s)
        if what(h):
            return h
        time.sleep(0.1)
    raise AssertionError(f"the server never reached the state waited for: {h}")


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def _in_thread(fn, *args):
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", fn(*args)), daemon=True)
    t.start()
    return t, out


def test_a_request_past_its_time_is_stopped_not_abandoned(model_files):
    """A 100k-word /pipeline past its limit (--timeout per 10,000 words: 0.05 s, 0.5 s for it)
    gets 503, and its work stops at the next chunk (counted in /health as stopped): it had run on
    to the end after its 503, holding a worker and the models' locks. Its limit is first set by
    the text's whitespace-separated pieces (17 a sentence: 85,000, 0.425 s), then, once the
    tokenizer has cut it, by its words (20 a sentence: 100,000, 0.5 s); which one the 503 names
    depends on how fast this machine tokenizes (a CI run under load ran out before the count)."""
    s = Server(["-m", f"pos={model_files['pos']}", "-m", f"parser={model_files['parser']}",
                "--timeout", "0.05"])
    try:
        status, out, _ = s.post("/pipeline", {"text": BIG_TEXT})
        assert status == 503 and any(f"limit of {limit} s (0.05 s per 10,000 words)" in out["error"]
                                     for limit in ("0.5", "0.425")), out
        h = _until(lambda h: h["working"] == 0, s)
        assert h["stopped"] == 1
        status, out, _ = s.post("/tag", {"text": SENTENCE})   # and the server is free again
        assert status == 200
    finally:
        assert s.stop() == 0


def test_small_requests_are_answered_while_a_big_one_runs(model_files):
    """While one 100k-word /pipeline request runs (tagger, then parser), small /tag and /parse
    requests on the same models are answered: the big one takes each model's lock a chunk of
    sentences at a time, in its own lane. They had waited for its whole run and got 503. (How
    fast they are meanwhile is measured by `make bench-serve`, not here.)"""
    s = Server(["-m", f"pos={model_files['pos']}", "-m", f"parser={model_files['parser']}",
                "--timeout", "300"])
    try:
        t, big = _in_thread(s.post, "/pipeline", {"text": BIG_TEXT, "scores": False})
        _until(lambda h: h["working"] == 1, s)
        small, during = [], 0
        while t.is_alive() and len(small) < 40:
            small.append(s.post("/tag", {"text": SENTENCE})[0])
            small.append(s.post("/parse", {"tokens": [["Ada", "met", "Marta"]], "tagger": "pos"})[0])
            during += 2 * t.is_alive()   # both answered before the big request was
        t.join(300)
        assert big["r"][0] == 200 and len(big["r"][1]["sentences"]) == 5000
        assert set(small) == {200} and during >= 10
    finally:
        assert s.stop() == 0


def test_memory_returns_near_its_start_after_a_big_request(model_files):
    """Resident memory after a 100k-word /pipeline (answered, 13 MB of JSON) is near where it
    was before it: the work runs a chunk at a time, and the heap is trimmed after a big request
    (it had risen to 1.7 GB and stayed above 1.1 GB)."""
    s = Server(["-m", f"pos={model_files['pos']}", "-m", f"parser={model_files['parser']}",
                "--timeout", "300"])
    try:
        s.post("/pipeline", {"text": " ".join([BIG_SENTENCE] * 50)})
        before = _rss_kb(s.proc.pid)
        status, out, _ = s.post("/pipeline", {"text": BIG_TEXT})
        assert status == 200 and sum(len(x["tokens"]) for x in out["sentences"]) == 100_000
        del out
        _until(lambda h: h["working"] == 0, s)
        after = _rss_kb(s.proc.pid)
        assert after - before < 100 * 1024, (before, after)
    finally:
        assert s.stop() == 0


def test_sigterm_stops_the_work_in_flight(model_files):
    """SIGTERM while a 100k-word request runs: the request is answered 503 ("the server is
    stopping") at its next chunk and the server exits 0 (it had run the request to its end,
    and a second one queued behind it, before exiting). The 5 s bound is measured by
    `make bench-serve`."""
    s = Server(["-m", f"pos={model_files['pos']}", "-m", f"parser={model_files['parser']}",
                "--timeout", "300"])
    try:
        t, big = _in_thread(s.post, "/pipeline", {"text": BIG_TEXT})
        _until(lambda h: h["working"] == 1, s)
    finally:
        code = s.stop()
    t.join(60)
    assert code == 0 and "stopped" in s.last_words
    assert big["r"][0] == 503 and big["r"][1] == {"error": "the server is stopping"}


@pytest.mark.parametrize("body, field", [
    (b'{"text": "Ada \\ud800 met Marta"}', "text"),
    (b'{"text": "a\\udfff"}', "text"),
    (b'{"tokens": [["Ada", "\\ud83d"]]}', "tokens"),
    (b'{"tokens": [[["Ada", "PROPN"], ["met", "\\udc00"]]]}', "tokens"),
    (b'{"conllu": "1\\tAda\\ud800\\t_\\t_\\t_\\t_\\t0\\troot\\t_\\t_\\n\\n"}', "conllu"),
    (b'{"text": "Ada", "model": "p\\ud800"}', "model"),
    (b'{"text": "Ada", "lang": "\\ud800"}', "lang"),
])
@pytest.mark.parametrize("path", ["/tag", "/parse", "/pipeline"])
def test_lone_surrogates_are_a_400_naming_the_field(server, path, body, field):
    """JSON can spell a lone surrogate; it decodes to no character and cannot be written back
    as UTF-8: a 400 naming the field (it was 500 internal error: UnicodeEncodeError)."""
    status, out, ctype = server.request("POST", path, raw=body, headers={"Content-Type": "application/json"})
    assert status == 400 and ctype == "application/json"
    assert out["error"].startswith(f"{field} is not Unicode text: a lone surrogate (U+D")
    assert "\n" not in out["error"]


def test_a_one_label_model_gives_null_margins(tmp_path):
    """An NER model that only ever saw O has no runner-up, so its margins are infinite: null
    in the JSON, in scores and explanations (it was 500 ValueError: JSON has no infinity)."""
    import structkit

    src = (NER / "train.txt").read_text().splitlines()
    (tmp_path / "o.txt").write_text("\n".join(" ".join(ln.split()[:-1] + ["O"]) if ln.strip() else ""
                                             for ln in src) + "\n")
    structkit.Tagger(task="ner", epochs=2, templates="ner-nopos").fit(str(tmp_path / "o.txt")) \
        .save(tmp_path / "o.npz")
    s = Server(["-m", f"o={tmp_path / 'o.npz'}"])
    try:
        status, out, _ = s.post("/ner", {"text": SENTENCE, "explain": True})
        assert status == 200
        toks = out["sentences"][0]["tokens"]
        assert {t["labels"]["o"] for t in toks} == {"O"} and out["sentences"][0]["spans"] == []
        assert all(t["scores"]["o"] is None for t in toks)
        assert all(t["explanations"]["o"]["margin"] is None for t in toks)
        status, conllu, _ = s.post("/ner", {"text": SENTENCE, "format": "conllu"})
        assert status == 200 and "NER=O" in conllu
    finally:
        assert s.stop() == 0


def test_a_sentence_is_at_most_1000_words(server):
    """A sentence is the smallest unit of work that can be stopped, and the beam parser's time
    grows with the square of its length (100,000 words in one sentence ran for most of an
    hour): token lists and CoNLL-U over 1,000 words a sentence are 413; raw text's sentences
    are cut into pieces of 1,000 words, with a warning."""
    status, out, _ = server.post("/parse", {"tokens": [["a"] * 3, ["a"] * 1001]})
    assert status == 413 and out["error"] == "tokens: sentence 2 has 1001 words; the limit is 1000 per sentence"
    conllu = "".join(f"{i}\ta\t_\t_\t_\t_\t_\t_\t_\t_\n" for i in range(1, 1002)) + "\n"
    status, out, _ = server.post("/tag", {"conllu": conllu})
    assert status == 413 and out["error"] == "conllu: sentence 1 has 1001 words; the limit is 1000 per sentence"
    text = "word " * 2500
    status, out, _ = server.post("/pipeline", {"text": text, "models": ["pos", "parser"], "scores": False})
    assert status == 200
    assert [len(x["tokens"]) for x in out["sentences"]] == [1000, 1000, 500]
    assert out["warnings"][0] == ("1 sentence(s) of the text had over 1000 words: each was cut into "
                                  "pieces of at most 1000 words")
    assert out["sentences"][1]["tokens"][0]["start"] == 5000
    assert all(sum(t["head"] == 0 for t in x["tokens"]) >= 1 for x in out["sentences"])


def test_long_text_is_tokenised_in_pieces_with_true_offsets(server):
    """Text over 20,000 characters goes to the tokenizer in pieces cut at sentence ends, so that
    its work can be stopped between them; the offsets are the whole text's."""
    text = "\n\n".join(f"Ada met Marta in Paris on day {i}. It isn't far!" for i in range(1500))
    status, out, _ = server.post("/tag", {"text": text, "scores": False})
    assert status == 200 and len(out["sentences"]) == 3000
    for x in out["sentences"]:
        for t in x["tokens"]:
            if t["form"] not in ("is", "n't"):
                assert text[t["start"]:t["end"]] == t["form"]
    status, out, _ = server.post("/tag", {"text": "' " * 150_000})
    assert status == 413 and out["error"] == "the text has over 100000 words; the limit is 100000"


def _slow(port: int, data: bytes) -> socket.socket:
    c = socket.create_connection(("127.0.0.1", port), timeout=60)
    c.sendall(data)
    return c


def _read_all(c: socket.socket) -> bytes:
    """Everything until the server closes (the socket's 60 s timeout is the hang guard)."""
    got = b""
    while True:
        chunk = c.recv(65536)
        if not chunk:
            return got
        got += chunk


def test_slow_clients_cannot_take_every_connection(model_files):
    """50 connections that send part of their headers and stop, against a server allowed 20:
    the open connections stay at 20 (each new one closes the longest-idle connection between
    requests), and a normal request is answered. They had taken every file descriptor."""
    s = Server(["-m", f"pos={model_files['pos']}", "--max-connections", "20"])
    slow = []

    def sockets() -> int:   # the server's open sockets (files it opens lazily, caches, ... are not connections)
        n = 0
        for fd in os.listdir(f"/proc/{s.proc.pid}/fd"):
            try:
                n += os.readlink(f"/proc/{s.proc.pid}/fd/{fd}").startswith("socket:")
            except OSError:   # closed meanwhile
                pass
        return n

    try:
        fds = sockets()
        for _ in range(50):
            slow.append(_slow(s.port, b"POST /tag HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-"))
        status, out, _ = s.post("/tag", {"text": SENTENCE})
        assert status == 200 and out["sentences"][0]["tokens"][0]["form"] == "Ada"
        # the 30 evicted ones were closed by the server
        closed = 0
        for c in slow:
            c.setblocking(False)
            try:
                closed += c.recv(1) == b""
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
        assert closed >= 30
        assert sockets() <= fds + 20 + 2
    finally:
        for c in slow:
            c.close()
        assert s.stop() == 0


@pytest.mark.parametrize("data", [
    b"POST /tag HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty",                      # headers
    b"POST /tag HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"text\"",  # body
])
def test_a_request_that_does_not_arrive_in_time_is_408(model_files, data):
    """A request whose headers or body stop arriving is answered 408 and closed after
    --read-timeout (there was no header or body timeout: it held its connection forever)."""
    s = Server(["-m", f"pos={model_files['pos']}", "--read-timeout", "0.5"])
    try:
        c = _slow(s.port, data)
        got = _read_all(c)
        c.close()
        assert got.startswith(b"HTTP/1.1 408 ")
        assert json.loads(got.split(b"\r\n\r\n", 1)[1]) == {
            "error": "the request did not arrive within 0.5 s"}
        assert _health(s)["status"] == "ok"
    finally:
        assert s.stop() == 0


@pytest.mark.parametrize("headers, status", [
    ({"Host": "evil.example"}, 403),                          # DNS rebinding: a foreign name
    ({"Host": "evil.example:8080"}, 403),
    ({"Host": "localhost"}, 200),
    ({"Host": "LOCALHOST.:1234"}, 200),
    ({"Host": "[::1]:8080"}, 200),
    ({"Host": "10.1.2.3:8080"}, 200),                         # an address cannot be rebound
    ({"Origin": "http://evil.example"}, 403),                 # a cross-origin page's POST
    ({"Origin": "null"}, 403),
    ({"Origin": "http://127.0.0.1:1"}, 403),                  # another port is another origin
])
def test_host_and_origin_are_checked(server, headers, status):
    h = {"Content-Type": "application/json", **headers}
    got, out, _ = server.request("POST", "/tag", {"text": "It works."}, headers=h)
    assert got == status
    if status == 403:
        assert set(out) == {"error"} and ("Host" in out["error"] or "cross-origin" in out["error"])


def test_same_origin_and_allowed_hosts_pass(model_files):
    s = Server(["-m", f"pos={model_files['pos']}", "--allow-host", "tagger.example"])
    try:
        own = f"http://127.0.0.1:{s.port}"
        for headers in ({"Origin": own}, {"Host": "tagger.example"},
                        {"Host": "tagger.example", "Origin": "https://tagger.example"}):
            got, _, _ = s.request("POST", "/tag", {"text": "It works."},
                                  headers={"Content-Type": "application/json", **headers})
            assert got == 200, headers
        got, out, _ = s.request("GET", "/health", headers={"Host": "other.example"})
        assert got == 403 and "--allow-host" in out["error"]
    finally:
        assert s.stop() == 0


def test_listening_on_all_interfaces_warns(sk, model_files, monkeypatch):
    """--host 0.0.0.0 or :: says on stderr that anyone who can reach the machine can use it
    (bound here to 127.0.0.1 and stopped at once: the test opens nothing to the network)."""
    import uvicorn

    import structkit.serve.server as sv   # where serve() looks bind_socket up

    real_bind = sv.bind_socket
    monkeypatch.setattr(sv, "bind_socket", lambda host, port: real_bind("127.0.0.1", 0))
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)
    for host in ("0.0.0.0", "::"):
        r = sk("serve", "-m", str(model_files["pos"]), "--host", host, "--port", "0")
        assert r.code == 0
        warning = [ln for ln in r.err.splitlines() if "warning" in ln]
        assert len(warning) == 1 and f"listening on all interfaces ({host})" in warning[0]
        assert "no authentication" in warning[0]
    r = sk("serve", "-m", str(model_files["pos"]), "--port", "0")
    assert r.code == 0 and "warning" not in r.err


# ---- the page in a real browser ----------------------------------------------------------------
def _wait_done(d) -> str:
    for _ in range(200):
        state = d.find_element("tag name", "body").get_attribute("data-state")
        if state in ("done", "error"):
            return state
        time.sleep(0.05)
    return "timeout"


def test_page_in_headless_chromium(server):
    from urllib.parse import urlencode

    from selenium.webdriver.common.action_chains import ActionChains

    status, api, _ = server.post("/pipeline", {"text": SENTENCE, "models": ["pos", "ner", "parser"],
                                               "explain": True})
    assert status == 200
    from browser import headless_chromium

    d, profile = headless_chromium(1000, 900)
    try:
        q = urlencode({"text": SENTENCE, "models": "pos,ner,parser"})
        d.get(f"http://127.0.0.1:{server.port}/?{q}")
        assert _wait_done(d) == "done", d.find_element("id", "error").text
        toks = api["sentences"][0]["tokens"]
        # POS under the words
        words = [e.text for e in d.find_elements("css selector", "svg .token .word")]
        tags = [e.text for e in d.find_elements("css selector", "svg .token .pos")]
        assert words == [t["form"] for t in toks] and tags == [t["labels"]["pos"] for t in toks]
        # the entity spans, as the API gives them, and a legend naming their types
        spans = [(e.get_attribute("data-type"), int(e.get_attribute("data-start")), int(e.get_attribute("data-end")))
                 for e in d.find_elements("css selector", "svg g.span[data-model='ner']")]
        want = [(s["type"], s["start"], s["end"]) for s in api["sentences"][0]["spans"] if s["model"] == "ner"]
        assert spans == want and len(spans) >= 2
        legend = {e.get_attribute("data-type") for e in d.find_elements("css selector", "#legend .item")}
        assert {s[0] for s in spans} <= legend
        # one arc per non-root word, each with the API's head and label
        arcs = d.find_elements("css selector", "svg path.arc")
        non_root = [t for t in toks if t["head"] != 0]
        assert len(arcs) == len(non_root) > 0
        got = sorted((int(a.get_attribute("data-dep")), int(a.get_attribute("data-head")),
                      a.get_attribute("data-label")) for a in arcs)
        assert got == sorted((t["id"], t["head"], t["deprel"]) for t in non_root)
        labels = sorted(e.text for e in d.find_elements("css selector", "svg text.arc-label:not(.root-label)"))
        assert labels == sorted(t["deprel"] for t in non_root)
        # hovering a word shows its explanation: runner-up, margin, features
        k = next(i for i, t in enumerate(toks) if t["form"] == "Paris")
        e = toks[k]["explanations"]["pos"]
        ActionChains(d).move_to_element(d.find_elements("css selector", "svg .token .hit")[k]).perform()
        tip = d.find_element("id", "tip")
        assert tip.is_displayed()
        assert f"runner-up {e['runner_up']}" in tip.text and "margin" in tip.text
        assert e["for"][0][0] in tip.text
        # the README's picture, tip and all: written to results/serve.png only when asked
        # (STRUCTKIT_SCREENSHOT=results/serve.png), so that a test run changes no tracked file
        import os
        import tempfile

        shot = os.environ.get("STRUCTKIT_SCREENSHOT") or os.path.join(tempfile.mkdtemp(), "serve.png")
        assert d.save_screenshot(str(shot)) and os.path.getsize(shot) > 1000
        # a phone-sized screen: the page does not overflow; the tree scrolls inside its box
        d.set_window_size(390, 844)
        d.get(f"http://127.0.0.1:{server.port}/?{q}")
        assert _wait_done(d) == "done"
        assert d.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
        assert len(d.find_elements("css selector", "svg path.arc")) == len(non_root)
        # an unknown model in the query string is said, not ignored
        d.get(f"http://127.0.0.1:{server.port}/?" + urlencode({"text": "a", "models": "pos,nope"}))
        assert _wait_done(d) == "error" and "nope" in d.find_element("id", "error").text
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_the_time_limit_grows_with_the_words_the_size_limits_accept():
    """--timeout is for a request of up to 10,000 words; the largest request the size limits
    take (100,000 words) has ten times that, not the same 10 s (it was cut off at 10.01 s)."""
    from structkit.serve import MAX_WORDS, TIMEOUT, TIMEOUT_WORDS, Job

    job = Job(TIMEOUT)
    assert job.limit == 10.0 and TIMEOUT_WORDS == 10_000
    job.words(500)
    assert job.limit == 10.0 and job.deadline == job.start + 10.0
    job.words(98_400)
    assert job.limit == pytest.approx(98.4) and job.deadline == pytest.approx(job.start + 98.4)
    job.words(MAX_WORDS)
    assert job.limit == pytest.approx(100.0)
    assert Job(None).deadline is None
