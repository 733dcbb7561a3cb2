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
import tempfile
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
    pytest.skip("the serve extra is not installed (pip install 'structkit[serve]')",
                allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
UD = ROOT / "data" / "sample" / "ud"
NER = ROOT / "data" / "sample" / "ner"
CHUNK = ROOT / "data" / "sample" / "chunk"
SENTENCE = "Ada Brannock met Marta Quill in Paris on Monday."


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    """A UD POS tagger and a labelled parser (sample treebank) and a words-only NER tagger."""
    import structkit

    d = tmp_path_factory.mktemp("serve-models")
    structkit.Tagger(task="pos", epochs=5).fit(str(UD / "train.conllu")).save(d / "pos.npz")
    structkit.Tagger(task="ner", epochs=5, templates="ner-nopos").fit(str(NER / "train.txt")) \
        .save(d / "ner.npz")
    structkit.Parser(epochs=3, hash_bits=18).fit(str(UD / "train.conllu")).save(d / "parser.npz")
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
    # self-contained: no CDN, no other file; the one URL is the SVG namespace name
    assert "<link" not in page and "<script src" not in page and "@import" not in page
    assert set(re.findall(r"https?://[^\"' ]+", page)) == {"http://www.w3.org/2000/svg"}


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
    from structkit.eval.schemes import phrases

    assert [(sp["type"], sp["start"], sp["end"]) for sp in s["spans"]] == phrases(labels, "iob2")
    assert any(sp["type"] == "PER" for sp in s["spans"])  # the sample model learnt these names
    for sp in s["spans"]:
        assert sp["text"] == " ".join(tokens[0][sp["start"]:sp["end"]])


def test_chunk_reads_pos_from_pairs_or_from_the_pos_model(server, api_models):
    pairs = [["The", "DT"], ["dog", "NN"], ["barks", "VBZ"], ["at", "IN"], ["the", "DT"], ["cat", "NN"],
             [".", "."]]
    status, out, _ = server.post("/chunk", {"tokens": [pairs]})
    assert status == 200
    labels = api_models["chunk"].predict([[tuple(p) for p in pairs]])[0]
    s = out["sentences"][0]
    assert [t["labels"]["chunk"] for t in s["tokens"]] == labels
    assert [t["input_pos"] for t in s["tokens"]] == [p for _, p in pairs]
    from structkit.eval.schemes import phrases

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
    assert r.code == 1 and "structkit serve needs the serve extra: pip install 'structkit[serve]'" in r.err


# ---- the page in a real browser ----------------------------------------------------------------
def _browser(width: int, height: int):
    chromium, driver = "/usr/bin/chromium", "/usr/bin/chromedriver"
    missing = [p for p in (chromium, driver) if not os.path.exists(p)]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{', '.join(missing)} missing: .ci/run installs chromium and chromium-driver")
        pytest.skip(f"{', '.join(missing)} missing (apt-get install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("selenium is missing (the test extra installs it)")
        pytest.skip("selenium is missing (pip install selenium)")
    profile = tempfile.mkdtemp(prefix="sk-chromium-")
    opts = Options()
    opts.binary_location = chromium
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", f"--window-size={width},{height}", f"--user-data-dir={profile}"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(driver), options=opts), profile


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
    d, profile = _browser(1000, 900)
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
        (ROOT / "results").mkdir(exist_ok=True)
        d.save_screenshot(str(ROOT / "results" / "serve.png"))  # shown in the README, tip and all
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
