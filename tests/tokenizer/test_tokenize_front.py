"""A learnt tokenizer everywhere raw text goes (issue 27): `parse --text --tokenizer` (tagged,
parsed, CoNLL-U with # text, SpaceAfter=No and range lines), the Python API
(``structkit.tokenize(text, tokenizer=...)``, Tagger and Parser on its sentences), `structkit
serve --tokenizer` (offsets, /models, a language it has nothing for), and batch runs (--jobs,
blocks, Dask) that give the output of one serial run. The models are trained here on a small
treebank written by the test (multiword tokens, commas glued to words, heads)."""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import http.client
from pathlib import Path

import pytest

from clitools import assert_one_line_error, sk_cmd, sk_env
from conftest import require_extra
from test_tokenize_task import sentence, upos

# Paragraphs of new text (every word of the treebank's vocabulary, two multiword tokens per
# paragraph at most): the sentences the tokenizer must find, in order.
PARAGRAPHS = [["Il pane del gatto mangia, poco.", "Oggi nel mare."],
              ["Roma vede sulla casa."],
              ["Ieri il cane corre della casa, molto.", "Il sole legge il libro.", "Oggi poco."]]
SENTENCES = [s for p in PARAGRAPHS for s in p]
TEXT = "\n\n".join(" ".join(p) for p in PARAGRAPHS) + "\n"
MWT = {"del": ("di", "il"), "nel": ("in", "il"), "sulla": ("su", "la"), "della": ("di", "la")}


def treebank(path: Path, n: int, seed: int) -> Path:
    """The sentences of test_tokenize_task's treebank, with a tree each (every word on the word
    before it, punctuation on the first word) so that a parser can be trained on them."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        toks = sentence(rng)
        text = "".join(f + (" " if sp else "") for f, _, sp in toks).strip()
        out.append(f"# sent_id = {k + 1}\n# text = {text}")
        i = 1
        for form, words, sp in toks:
            misc = "_" if sp else "SpaceAfter=No"
            if len(words) > 1:
                out.append(f"{i}-{i + len(words) - 1}\t{form}\t_\t_\t_\t_\t_\t_\t_\t{misc}")
            for w in words:
                head, rel = (0, "root") if i == 1 else (1, "punct") if w in ",." else (i - 1, "dep")
                out.append(f"{i}\t{w}\t_\t{upos(w)}\t{upos(w)}\t_\t{head}\t{rel}\t_\t"
                           f"{misc if len(words) == 1 else '_'}")
                i += 1
        out.append("")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    import structkit
    from structkit.tasks import make_config
    from structkit.tokenizer.task import train_tokenizer

    d = tmp_path_factory.mktemp("front")
    train = treebank(d / "train.conllu", 300, 1)
    train_tokenizer(make_config({"task": "tokenize", "epochs": 6}), str(train)).save(str(d / "tok.model"))
    structkit.Tagger(task="pos", epochs=3).fit(str(train)).save(d / "pos.model")
    structkit.Parser(epochs=2, hash_bits=16).fit(str(train)).save(d / "parse.model")
    (d / "in.txt").write_text(TEXT, encoding="utf-8")
    return {"dir": d, "tok": d / "tok.model", "pos": d / "pos.model", "parse": d / "parse.model",
            "text": d / "in.txt"}


def conllu_sentences(out: str) -> list[list[str]]:
    return [block.split("\n") for block in out.strip("\n").split("\n\n")]


def check_text_conllu(out: str, sentences: list[str], paragraphs: list[int]) -> None:
    """CoNLL-U of raw text as UD writes it: # text is the input sentence, ids count on, each
    multiword token a range line before its words (SpaceAfter=No on the range line), every
    token's SpaceAfter as in the text, # newdoc once and # newpar where a paragraph starts."""
    sents = conllu_sentences(out)
    assert [next(ln[len("# text = "):] for ln in s if ln.startswith("# text = ")) for s in sents] == sentences
    assert [next(ln for ln in s if ln.startswith("# sent_id")) for s in sents] == \
        [f"# sent_id = {k + 1}" for k in range(len(sentences))]
    assert out.count("# newdoc") == 1 and out.startswith("# newdoc\n")
    assert [k for k, s in enumerate(sents) if "# newpar" in s] == paragraphs
    for s, text in zip(sents, sentences):
        rows = [ln.split("\t") for ln in s if not ln.startswith("#")]
        rebuilt, skip = "", 0
        for r in rows:
            assert len(r) == 10
            if "-" in r[0]:
                a, b = map(int, r[0].split("-"))
                words = [x[1] for x in rows if x[0].isdigit() and a <= int(x[0]) <= b]
                assert tuple(words) == MWT[r[1]]
                skip = b - a + 1
            elif skip:
                skip -= 1
                assert r[9] == "_"   # SpaceAfter goes on the range line, not its words
                continue
            rebuilt += r[1] + ("" if "SpaceAfter=No" in r[9] else " ")
        assert rebuilt.rstrip(" ") == text


# ---- parse --text ------------------------------------------------------------------------------
def test_parse_text_with_a_tokenizer_and_a_tagger(sk, models):
    r = sk("parse", "-m", models["parse"], "--tagger", models["pos"], "--text", "--tokenizer",
           models["tok"], models["text"])
    assert r.code == 0, r.err
    check_text_conllu(r.out, SENTENCES, [0, 2, 3])
    import structkit

    tagger = structkit.Tagger.load(models["pos"])
    for s in conllu_sentences(r.out):
        words = [ln.split("\t") for ln in s if ln[0].isdigit() and "-" not in ln.split("\t")[0]]
        heads = [int(w[6]) for w in words]
        assert heads.count(0) == 1 and all(0 <= h <= len(words) for h in heads)
        assert {w[7] for w in words} <= {"root", "dep", "punct"}
        tags = tagger.predict([[w[1] for w in words]])[0]   # the tagger's tags, in UPOS and XPOS
        assert [w[3] for w in words] == tags and [w[4] for w in words] == tags
    assert "\n3-4\tdel\t" in r.out and "\n3\tdi\t" in r.out and "\n4\til\t" in r.out
    # standard input, one sentence per line
    r2 = sk("parse", "-m", models["parse"], "--tagger", models["pos"], "--text", "--no-split",
            "--tokenizer", models["tok"], stdin="Roma vede sulla casa. Oggi nel mare.\n".encode())
    assert r2.code == 0, r2.err
    check_text_conllu(r2.out, ["Roma vede sulla casa. Oggi nel mare."], [0])


def test_parse_text_by_the_rules_of_a_language(sk, models):
    r = sk("parse", "-m", models["parse"], "--tagger", models["pos"], "--text", "--lang", "en",
           stdin=b"It isn't far. We can't go.\n")
    assert r.code == 0, r.err
    assert "# text = It isn't far." in r.out and "\n2-3\tisn't\t" in r.out and "\n3\tn't\t" in r.out


def test_parse_text_mistakes_are_one_line(sk, models):
    m = ("-m", models["parse"])
    assert_one_line_error(sk("parse", *m, "--text", "--tokenizer", models["tok"], models["text"]),
                          "--text needs --tagger")
    assert_one_line_error(sk("parse", *m, "--tagger", models["pos"], "--tokenizer", models["tok"],
                             models["text"]), "--tokenizer goes with --text")
    assert_one_line_error(sk("parse", *m, "--tagger", models["pos"], "--text", "--tokenizer",
                             models["pos"], models["text"]), str(models["pos"]), "needs a tokenize model")
    assert_one_line_error(sk("parse", *m, "--tagger", models["pos"], "--text", "--lang", "xx",
                             models["text"]), "no tokenizer for language 'xx'", "--tokenizer")
    # an output never overwrites the tokenizer
    assert_one_line_error(sk("parse", *m, "--tagger", models["pos"], "--text", "--tokenizer",
                             models["tok"], models["text"], "-o", models["tok"]), str(models["tok"]))
    assert models["tok"].read_bytes()[:2] == b"PK"


# ---- the Python API ------------------------------------------------------------------------------
def test_tokenize_with_a_tokenizer_model(models):
    import structkit
    from structkit.tokenizer.task import TokenizerModel

    by_path = structkit.tokenize(TEXT, tokenizer=models["tok"])
    loaded = TokenizerModel.load(str(models["tok"]))
    assert [s.text for s in by_path] == SENTENCES
    for other in (structkit.tokenize(TEXT, tokenizer=str(models["tok"])),
                  structkit.tokenize(TEXT, tokenizer=loaded),
                  structkit.tokenize(TEXT, tokenizer=loaded.tokenizer)):
        assert other == by_path
    for s in by_path:
        assert TEXT[s.start:s.end] == s.text
        for t in s.tokens:
            assert TEXT[t.start:t.end] == t.form and t.words == MWT.get(t.form, (t.form,))
            assert t.space_after == (t.end < len(TEXT) and TEXT[t.end].isspace())
    assert [s.new_par for s in by_path] == [True, False, True, True, False, False]
    lines = structkit.tokenize("Oggi nel mare. Roma vede.\n", tokenizer=loaded, split="lines")
    assert len(lines) == 1 and [t.form for t in lines[0].tokens][-2:] == ["vede", "."]


def test_tokenize_mistakes(models):
    import structkit

    cases = [({"tokenizer": 3}, "tokenizer must be the path of a tokenizer model"),
             ({"tokenizer": models["pos"]}, "trained for task 'pos'"),
             ({"tokenizer": models["dir"] / "missing.model"}, "missing.model"),
             ({"tokenizer": models["tok"], "lang": "en"}, "not both")]
    for kw, needle in cases:
        with pytest.raises(structkit.UserError) as e:
            structkit.tokenize(TEXT, **kw)
        assert needle in str(e.value) and "\n" not in str(e.value)


def test_tagger_and_parser_take_the_tokenizers_sentences(sk, models):
    import structkit

    tagger = structkit.Tagger.load(models["pos"])
    parser = structkit.Parser.load(models["parse"])
    sents = structkit.tokenize(TEXT, tokenizer=models["tok"])
    words = [[w for t in s.tokens for w in t.words] for s in sents]
    tags = tagger.predict(sents)
    assert tags == tagger.predict(words) and [len(t) for t in tags] == [len(w) for w in words]
    gold = [[upos(w) for w in ws] for ws in words]
    want = 100 * sum(a == b for g, t in zip(gold, tags) for a, b in zip(g, t)) / sum(map(len, gold))
    assert tagger.score(sents, gold)["accuracy"] == pytest.approx(want)
    trees = parser.predict(sents, pos=tags, labels=True)
    assert trees == parser.predict(words, pos=tags, labels=True)
    # the command's trees, word for word
    r = sk("parse", "-m", models["parse"], "--tagger", models["pos"], "--text", "--tokenizer",
           models["tok"], models["text"])
    cli = [([int(ln.split("\t")[6]) for ln in s if ln[0].isdigit() and "-" not in ln.split("\t")[0]],
            [ln.split("\t")[7] for ln in s if ln[0].isdigit() and "-" not in ln.split("\t")[0]])
           for s in conllu_sentences(r.out)]
    assert [(list(h), list(d)) for h, d in trees] == cli
    # tagging raw text in one call: the syntactic words of every sentence
    pairs = tagger(TEXT, tokenizer=models["tok"])
    assert pairs == [(w, t) for ws, ts in zip(words, tags) for w, t in zip(ws, ts)]
    # the English rules' sentences too (they were refused before)
    en = structkit.tokenize("It isn't far.")
    assert [len(x) for x in tagger.predict(en)] == [5]


# ---- serve --tokenizer ------------------------------------------------------------------------------
class Server:
    def __init__(self, args):
        self.proc = subprocess.Popen(sk_cmd("serve", "--port", "0", *args), stderr=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, env=sk_env(), text=True)
        self.first_line = self.proc.stderr.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", self.first_line)
        if m is None:
            self.proc.kill()
            raise AssertionError(f"the server did not start: {self.first_line}{self.proc.stderr.read()}")
        self.port = int(m.group(1))

    def request(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request(method, path, body=None if body is None else json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        payload = r.read()
        conn.close()
        ctype = r.getheader("content-type", "")
        return r.status, (json.loads(payload) if "json" in ctype else payload.decode())

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.proc.stderr.close()


@pytest.fixture(scope="module")
def server(models):
    require_extra("starlette", "serve")
    require_extra("uvicorn", "serve")
    s = Server(["-m", f"pos={models['pos']}", "-m", f"parser={models['parse']}",
                "--tokenizer", f"it={models['tok']}"])
    yield s
    s.stop()


def test_serve_lists_the_tokenizer_and_uses_it_for_text(server, models):
    assert "1 tokenizer(s) (it; it tokenises text that names no lang)" in server.first_line
    status, doc = server.request("GET", "/models")
    assert status == 200 and [m["name"] for m in doc["models"]] == ["pos", "parser"]
    toks = {t["name"]: t for t in doc["tokenizers"]}
    assert toks["it"]["kind"] == "model" and toks["it"]["task"] == "tokenize" and toks["it"]["default"]
    assert toks["en"] == {"name": "en", "kind": "rules", "default": False}
    status, out = server.request("POST", "/tag", {"text": TEXT})
    assert status == 200, out
    assert [s["text"] for s in out["sentences"]] == SENTENCES
    import structkit

    sents = structkit.tokenize(TEXT, tokenizer=models["tok"])
    tags = structkit.Tagger.load(models["pos"]).predict(sents)
    for js, s, ts in zip(out["sentences"], sents, tags):
        words = [(w, t.start, t.end) for t in s.tokens for w in t.words]
        assert [(t["form"], t["start"], t["end"]) for t in js["tokens"]] == words
        assert [t["labels"]["pos"] for t in js["tokens"]] == ts
        assert TEXT[js["tokens"][0]["start"]:js["tokens"][-1]["end"]] == js["text"]
        assert [(m["form"], TEXT[m["start"]:m["end"]]) for m in js.get("multiword", [])] == \
            [(t.form, t.form) for t in s.tokens if len(t.words) > 1]
    # lang picks the English rules or the model by name
    status, en = server.request("POST", "/tag", {"text": "It isn't far.", "lang": "en"})
    assert status == 200 and [t["form"] for t in en["sentences"][0]["tokens"]] == ["It", "is", "n't", "far", "."]
    status, it = server.request("POST", "/tag", {"text": TEXT, "lang": "it"})
    assert status == 200 and it == out


def test_serve_conllu_trees_are_the_commands(server, models, sk):
    status, out = server.request("POST", "/pipeline", {"text": TEXT, "format": "conllu"})
    assert status == 200, out
    r = sk("parse", "-m", models["parse"], "--tagger", models["pos"], "--text", "--tokenizer",
           models["tok"], models["text"])

    def cols(text):
        return [[(ln.split("\t")[0], ln.split("\t")[1], ln.split("\t")[6], ln.split("\t")[7])
                 for ln in s if ln[0].isdigit()] for s in conllu_sentences(text)]
    assert cols(out) == cols(r.out)
    assert [ln for ln in out.splitlines() if ln.startswith("# text")] == [f"# text = {s}" for s in SENTENCES]


def test_serve_a_language_it_has_nothing_for_is_a_400(server):
    status, out = server.request("POST", "/tag", {"text": "Oggi nel mare.", "lang": "xx"})
    assert status == 400 and set(out) == {"error"} and "\n" not in out["error"]
    assert "no tokenizer for language 'xx'" in out["error"] and "tokenizer models: it)" in out["error"]
    status, out = server.request("POST", "/tag", {"tokens": [["Oggi", "nel"]], "lang": "xx"})
    assert status == 200   # lang is for text only


def test_serve_tokenizer_mistakes_are_one_line(sk, models):
    require_extra("uvicorn", "serve")
    r = sk("serve", "-m", models["pos"], "-m", models["tok"], "--port", "0")
    assert r.code == 1 and "give it with --tokenizer" in r.err and r.err.count("\n") == 1
    r = sk("serve", "-m", models["pos"], "--tokenizer", models["pos"], "--port", "0")
    assert r.code == 1 and "needs a tokenize model" in r.err and r.err.count("\n") == 1
    r = sk("serve", "-m", models["pos"], "--tokenizer", f"a={models['tok']}", "--tokenizer",
           f"a={models['tok']}", "--port", "0")
    assert r.code == 1 and "two tokenizers are named 'a'" in r.err and r.err.count("\n") == 1


# ---- batch: --jobs, blocks, Dask ------------------------------------------------------------------
def _inputs(d: Path) -> list[Path]:
    """Three raw-text files (one in a subfolder) of different paragraphs."""
    (d / "sub").mkdir(parents=True)
    files = []
    for k, rel in enumerate(["a.txt", "b.txt", "sub/c.txt"]):
        paras = PARAGRAPHS[k:] + PARAGRAPHS[:k]
        (d / rel).write_text("\n\n".join(" ".join(p) for p in paras * 4) + "\n", encoding="utf-8")
        files.append(d / rel)
    return files


def _tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command", ["tag", "parse"])
def test_jobs_give_the_output_of_one_file_at_a_time(sk, models, tmp_path, command):
    src = tmp_path / "in"
    files = _inputs(src)
    m = (("-m", models["pos"]) if command == "tag" else
         ("-m", models["parse"], "--tagger", models["pos"]))
    fmt = ("--format", "conllu") if command == "tag" else ()
    args = (command, *m, "--text", "--tokenizer", models["tok"], *fmt)
    for jobs in ("1", "2"):
        r = sk(*args, "--output-dir", tmp_path / f"out{jobs}", "--jobs", jobs, src)
        assert r.code == 0, r.err
    one, two = _tree(tmp_path / "out1"), _tree(tmp_path / "out2")
    assert one == two and sorted(one) == ["a.conllu", "b.conllu", "sub/c.conllu"]
    for f, rel in zip(files, sorted(one)):
        r = sk(*args, f)
        assert r.code == 0, r.err
        assert r.out.encode() == one[rel]
        n = len(SENTENCES) * 4
        k = sorted(one).index(rel)
        order = [s for p in (PARAGRAPHS[k:] + PARAGRAPHS[:k]) * 4 for s in p]
        assert len(order) == n
        check_text_conllu(r.out, order, [i for i, s in enumerate(order)
                                         if any(s == p[0] for p in PARAGRAPHS)])


@pytest.mark.parametrize("make", ["tag", "parse"])
def test_small_blocks_continue_ids_and_the_document(models, tmp_path, make):
    """Blocks cut at paragraphs and run in two processes: the bytes of one serial run."""
    import structkit
    from structkit.batch import Input, run
    from structkit.parse.jobs import ParseJob
    from structkit.parse.parser import DependencyParser
    from structkit.sequence.jobs import TagJob
    from structkit.tokenizer.task import TokenizerModel

    tok = TokenizerModel.load(str(models["tok"])).tokenizer
    tagger = structkit.Tagger.load(models["pos"]).model_
    job = (TagJob(tagger, text=True, fmt="conllu", lang=tok) if make == "tag" else
           ParseJob(DependencyParser.load(str(models["parse"])), tagger, text=tok))
    path = str(_inputs(tmp_path / "in")[0])
    outs = []
    for jobs, block in ((1, 1 << 20), (2, 60), (2, 200)):
        out = tmp_path / f"out-{jobs}-{block}.conllu"
        run(job, [Input(path, "a.txt")], output=str(out), jobs=jobs, block_bytes=block)
        outs.append(out.read_text(encoding="utf-8"))
    assert outs[1] == outs[0] and outs[2] == outs[0]
    order = [s for p in PARAGRAPHS * 4 for s in p]
    check_text_conllu(outs[0], order, [i for i, s in enumerate(order) if any(s == p[0] for p in PARAGRAPHS)])


def test_dask_gives_the_local_output(sk, models, tmp_path):
    require_extra("distributed", "dask")
    src = tmp_path / "in"
    _inputs(src)
    args = ("parse", "-m", models["parse"], "--tagger", models["pos"], "--text", "--tokenizer", models["tok"])
    r = sk(*args, "--output-dir", tmp_path / "local", src)
    assert r.code == 0, r.err
    r = sk(*args, "--output-dir", tmp_path / "dask", "--dask", "local:1", src)
    assert r.code == 0, r.err
    r = sk(*args, "--output-dir", tmp_path / "shared", "--dask", "local:1", "--shared-fs", src)
    assert r.code == 0, r.err
    local = _tree(tmp_path / "local")
    assert _tree(tmp_path / "dask") == local and _tree(tmp_path / "shared") == local and len(local) == 3
    assert all(b"\n3-4\tdel\t" in v for v in local.values())
