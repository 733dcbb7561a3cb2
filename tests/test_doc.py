"""structkit.Doc: CoNLL-U in, the same CoNLL-U out (real UD files and the sample), tokens with
offsets and words with every column; write_conllu with heads; the shared renderer, its escaping,
and a parsed document's ``_repr_html_`` drawn by headless Chromium, read back from the DOM."""
from __future__ import annotations

import io
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import structkit
from structkit.doc import Doc, Token, Word

ROOT = Path(__file__).resolve().parents[1]
UD = ROOT / "structkit" / "data" / "sample" / "ud"
SVG = "{http://www.w3.org/2000/svg}"

# comments, a multiword token, empty nodes before the first word and after a word, margins
HANDMADE = """\
# newdoc id = d1
# newpar
# sent_id = 1
# text = Vámonos al mar, ya.
0.1\tvamos\t_\t_\t_\t_\t_\t_\t_\t_
1\tVámonos\tir\tVERB\t_\tMood=Imp|Person=1\t0\troot\t0:root\tMargin=2.500
2-3\tal\t_\t_\t_\t_\t_\t_\t_\tTokMargin=1.25
2\ta\ta\tADP\t_\t_\t4\tcase\t_\t_
3\tel\tel\tDET\t_\tDefinite=Def\t4\tdet\t_\t_
3.1\tnada\t_\t_\t_\t_\t_\t_\t_\t_
4\tmar\tmar\tNOUN\t_\t_\t1\tobl\t_\tSpaceAfter=No
5\t,\t,\tPUNCT\t_\t_\t6\tpunct\t_\t_
6\tya\tya\tADV\t_\t_\t1\tadvmod\t_\tSpaceAfter=No|Margin=nan
7\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\tSentMargin=-0.5

# sent_id = 2
# text = Sí
1\tSí\tsí\tINTJ\t_\t_\t0\troot\t_\t_

"""


def _same_offsets(doc: Doc) -> None:
    for tok in doc.tokens:
        assert tok.start is not None and doc.text[tok.start:tok.end] == tok.form, tok


# ---- reading and writing back ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["train.conllu", "dev.conllu", "test.conllu"])
def test_round_trip_sample(name):
    text = (UD / name).read_text(encoding="utf-8")
    doc = structkit.read_conllu(str(UD / name))
    assert doc.to_conllu() == text
    assert Doc.from_conllu(text).to_conllu() == text
    assert structkit.read_conllu(text).to_conllu() == text  # CoNLL-U text, not a path
    assert len(doc) == text.count("\n\n") and sum(len(s) for s in doc) == len(doc.words)
    _same_offsets(doc)


UD_FILES = ["ud-english-ewt/en_ewt-ud-dev.conllu", "ud-finnish-tdt/fi_tdt-ud-dev.conllu",
            "ud-italian-partut/it_partut-ud-dev.conllu", "ud-turkish-imst/tr_imst-ud-dev.conllu",
            "ud-tamil-ttb/ta_ttb-ud-dev.conllu", "ud-chinese-gsdsimp/zh_gsdsimp-ud-dev.conllu",
            "ud-vietnamese-vtb/vi_vtb-ud-dev.conllu"]


@pytest.mark.parametrize("rel", UD_FILES)
def test_round_trip_real_treebanks(corpus, rel):
    """Every line back, byte for byte: comments, multiword ranges, empty nodes (English and
    Finnish have them), forms with spaces (Vietnamese), Chinese without spaces."""
    path = corpus(rel)
    text = path.read_text(encoding="utf-8")
    doc = structkit.read_conllu(str(path))
    assert doc.to_conllu() == text
    _same_offsets(doc)
    rows = [ln.split("\t") for ln in text.split("\n") if ln and not ln.startswith("#")]
    words = [r for r in rows if r[0].isdigit()]
    assert len(doc.words) == len(words)
    assert sum(t.is_multiword for t in doc.tokens) == sum("-" in r[0] for r in rows)
    assert sum(len(s.empty_nodes) for s in doc) == sum("." in r[0] for r in rows)
    for w, r in zip(doc.words, words):
        assert (w.form, w.upos or "_", w.deprel or "_", str(w.head)) == (r[1], r[3], r[7], r[6])


def test_handmade_columns_tokens_margins():
    doc = Doc.from_conllu(HANDMADE)
    assert doc.to_conllu() == HANDMADE
    s = doc.sents[0]
    assert s.sent_id == "1" and s.text == "Vámonos al mar, ya." and s.comment("newdoc id") == "d1"
    assert doc.text == "Vámonos al mar, ya. Sí"
    assert [t.form for t in s.tokens] == ["Vámonos", "al", "mar", ",", "ya", "."]
    assert [(t.start, t.end) for t in s.tokens] == [(0, 7), (8, 10), (11, 14), (14, 15), (16, 18), (18, 19)]
    al = s.tokens[1]
    assert al.is_multiword and al.id == (2, 3) and [w.form for w in al.words] == ["a", "el"]
    assert al.margins == {"TokMargin": 1.25} and al.words[1].token is al
    v = s.words[0]
    assert (v.id, v.form, v.lemma, v.upos, v.xpos, v.feats, v.head, v.deprel, v.deps) == \
        (1, "Vámonos", "ir", "VERB", None, "Mood=Imp|Person=1", 0, "root", "0:root")
    assert v.feats_dict == {"Mood": "Imp", "Person": "1"} and v.margin == 2.5
    assert s.words[5].margin != s.words[5].margin  # NaN stays NaN
    assert s.tokens[-1].margins == {"SentMargin": -0.5} and not s.tokens[2].space_after
    assert [(k, n.id) for k, n in s.empty_nodes] == [(0, "0.1"), (3, "3.1")]
    assert doc.sents[1].start == 20 and doc.sents[1].tokens[0].start == 20
    # a new paragraph is a blank line in doc.text; no space after a sentence that ends without
    assert Doc.from_conllu(HANDMADE.replace("# sent_id = 2", "# newpar\n# sent_id = 2")).text == \
        "Vámonos al mar, ya.\n\nSí"
    assert Doc.from_conllu(HANDMADE.replace("SentMargin=-0.5", "SpaceAfter=No")).text == \
        "Vámonos al mar, ya.Sí"


def test_edits_are_written():
    doc = Doc.from_conllu(HANDMADE)
    w = doc.sents[0].words[4]
    w.head, w.deprel, w.upos, w.misc = 4, "nmod", None, None
    out = doc.to_conllu()
    assert "5\t,\t,\t_\t_\t_\t4\tnmod\t_\t_\n" in out
    assert out.replace("5\t,\t,\t_\t_\t_\t4\tnmod\t_\t_", "5\t,\t,\tPUNCT\t_\t_\t6\tpunct\t_\t_") == HANDMADE
    # a token added: the order of lines is rebuilt (comments, empty nodes in their places)
    s = doc.sents[1]
    s.tokens.append(Token("!", [Word(2, "!", upos="PUNCT", head=1, deprel="punct")]))
    s.comments.append("# note = added")
    lines = s.to_conllu().split("\n")
    assert lines[-4:] == ["1\tSí\tsí\tINTJ\t_\t_\t0\troot\t_\t_", "2\t!\t_\tPUNCT\t_\t_\t1\tpunct\t_\t_", "", ""]
    assert lines[:3] == ["# sent_id = 2", "# text = Sí", "# note = added"]
    # empty nodes keep their place when the layout is rebuilt
    s0 = doc.sents[0]
    s0.comments.pop()
    assert [ln.split("\t")[0] for ln in s0.to_conllu().split("\n") if ln and ln[0] != "#"] == \
        ["0.1", "1", "2-3", "2", "3", "3.1", "4", "5", "6", "7"]
    s.tokens[1].words[0].id = 7
    with pytest.raises(structkit.UserError, match="ids run 1..n"):
        s.to_conllu()
    s.tokens[1].words[0].id, s.tokens[1].words[0].deprel = 2, "a\tb"
    with pytest.raises(structkit.UserError, match="DEPREL"):
        s.to_conllu()


def test_offsets_into_raw_text():
    raw = "  Vámonos al\nmar,   ya.\n\n\nSí"
    doc = Doc.from_conllu(HANDMADE, text=raw)
    assert doc.text == raw
    _same_offsets(doc)
    assert doc.sents[1].start == raw.index("Sí") and doc.sents[0].end == raw.index(".") + 1


def test_mistakes_are_one_line_errors():
    bad = HANDMADE.replace("4\tmar", "9\tmar")
    with pytest.raises(structkit.UserError, match=r"<conllu>:11: word ID 9 out of sequence"):
        Doc.from_conllu(bad)
    with pytest.raises(structkit.UserError, match="expected CoNLL-U as a str"):
        Doc.from_conllu(b"1\ta")
    with pytest.raises(structkit.UserError, match="path"):
        structkit.read_conllu(b"x")
    with pytest.raises(structkit.UserError, match="no such file|not found|does not exist"):
        structkit.read_conllu("/nonexistent/file.conllu")
    with pytest.raises(structkit.UserError, match=r":2: expected 10 tab-separated columns"):
        structkit.read_conllu("# x\n1\ta\tb\n")


def test_write_conllu_writes_heads_and_reads_back():
    raw = "I can't go. It rains."
    sents = structkit.tokenize(raw)
    buf = io.StringIO()
    n = structkit.write_conllu(sents, buf, upos=[["PRON", "AUX", "PART", "VERB", "PUNCT"], ["PRON", "VERB", "PUNCT"]],
                               lemmas=[["I", "can", "not", "go", "."], ["it", "rain", "."]],
                               feats=[["Case=Nom", "_", "_", "_", "_"], ["_", "_", "_"]],
                               heads=[[4, 4, 4, 0, 4], [2, 0, 2]],
                               deprels=[["nsubj", "aux", "advmod", "root", "punct"], ["expl", "root", "punct"]])
    assert n == 2
    doc = Doc.from_conllu(buf.getvalue(), text=raw)
    assert [[w.head for w in s.words] for s in doc] == [[4, 4, 4, 0, 4], [2, 0, 2]]
    assert [w.deprel for w in doc.words] == ["nsubj", "aux", "advmod", "root", "punct", "expl", "root", "punct"]
    assert doc.words[0].feats == "Case=Nom" and doc.words[1].lemma == "can" and doc.tokens[1].form == "can't"
    _same_offsets(doc)
    # a Doc (or its sentences) is written as to_conllu writes it
    out = io.StringIO()
    assert structkit.write_conllu(doc, out) == 2 and out.getvalue() == buf.getvalue()
    out = io.StringIO()
    assert structkit.write_conllu(doc.sents[1:], out) == 1 and out.getvalue() == doc.sents[1].to_conllu()
    with pytest.raises(structkit.UserError, match="head 9 of word 3"):
        structkit.write_conllu(sents[:1], io.StringIO(), heads=[[4, 4, 9, 0, 4]])
    with pytest.raises(structkit.UserError, match="carries its own columns"):
        structkit.write_conllu(doc, io.StringIO(), heads=[[1]])
    np = pytest.importorskip("numpy")
    out = io.StringIO()
    structkit.write_conllu(sents[1:], out, heads=[np.array([2, 0, 2])])
    assert [w.head for w in Doc.from_conllu(out.getvalue()).words] == [2, 0, 2]


# ---- the renderer ------------------------------------------------------------------------------
def test_arc_levels_cover():
    """An arc is drawn above every arc it covers (brute force over random trees)."""
    import random

    from structkit.rendering import _arc_levels

    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(1, 9)
        order = rng.sample(range(1, n + 1), n)  # a random tree: each word under an earlier one
        heads = [0] * n
        for k, w in enumerate(order[1:], 1):
            heads[w - 1] = rng.choice(order[:k])
        arcs = [(d, h - 1, "x") for d, h in enumerate(heads) if 0 < h != d + 1]
        lv = _arc_levels(arcs)
        for a, (d, h, _) in enumerate(arcs):
            inner = [lv[b] for b, (d2, h2, _) in enumerate(arcs)
                     if b != a and min(d2, h2) >= min(d, h) and max(d2, h2) <= max(d, h)]
            assert lv[a] == 1 + max(inner, default=0)


HOSTILE = "1\t<script>alert(1)</script>\t_\tX&Y\t_\t_\t2\t\"q'<b>\t_\t_\n2\t]]>&amp;\t_\t<i>\t_\t_\t0\troot\t_\t_\n\n"


def test_render_escapes_everything():
    doc = Doc.from_conllu(HOSTILE)
    html = structkit.render(doc)
    assert "<script" not in html and "<b>" not in html and "<i>" not in html
    tree = ET.fromstring(html)  # well-formed XML: nothing from the data broke out of its place
    words = [e.text for e in tree.iter(f"{SVG}text") if "word" in e.get("class", "").split()]
    tags = [e.text for e in tree.iter(f"{SVG}text") if e.get("class") == "pos"]
    assert words == ["<script>alert(1)</script>", "]]>&amp;"] and tags == ["X&Y", "<i>"]
    arcs = [(a.get("data-dep"), a.get("data-head"), a.get("data-label")) for a in tree.iter(f"{SVG}path")]
    assert arcs == [("1", "2", "\"q'<b>")]
    assert structkit.render(HOSTILE) == html == doc._repr_html_()
    with pytest.raises(structkit.UserError, match="expected a structkit.Doc"):
        structkit.render(42)
    page = structkit.render(doc, page=True)
    assert page.startswith("<!doctype html>") and html in page and page.count("<script") == 0
    assert "<title>&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_render_unparsed_and_multiword():
    doc = Doc.from_conllu(HANDMADE.replace("\t0\troot\t0:root", "\t_\t_\t0:root"))
    tree = ET.fromstring(doc._repr_html_())
    svgs = list(tree.iter(f"{SVG}svg"))
    assert len(svgs) == 2
    first = svgs[0]
    assert not list(first.iter(f"{SVG}path"))  # a word without a head: no tree drawn
    spans = [(g.get("data-type"), g.get("data-start"), g.get("data-end")) for g in first.iter(f"{SVG}g")
             if g.get("class") == "span"]
    assert spans == [("al", "1", "3")]
    assert len(list(svgs[1].iter(f"{SVG}path"))) == 0 and len(list(svgs[1].iter(f"{SVG}line"))) == 1


def test_render_phrases_from_misc():
    """Entities a tagger wrote in MISC (NER=B-PER) are spans in a row of their own, with a legend;
    IOBES labels too."""
    rows = [("Ada", "B-PER"), ("Quill", "I-PER"), ("met", "O"), ("Marta", "B-PER"), ("in", "O"),
            ("Paris", "B-LOC"), (".", "O")]
    conllu = "".join(f"{i}\t{w}\t_\t_\t_\t_\t_\t_\t_\tNER={t}\n" for i, (w, t) in enumerate(rows, 1)) + "\n"
    for text in (conllu, conllu.replace("I-PER", "E-PER").replace("B-PER\n5", "S-PER\n5")
                 .replace("B-LOC", "S-LOC").replace("\tNER=O", "\t_")):
        assert text == conllu or text.count("S-PER") == 1
        tree = ET.fromstring(structkit.render(text))
        spans = [(g.get("data-model"), g.get("data-type"), g.get("data-start"), g.get("data-end"))
                 for g in tree.iter(f"{SVG}g") if g.get("class") == "span"]
        assert spans == [("NER", "PER", "0", "2"), ("NER", "PER", "3", "4"), ("NER", "LOC", "5", "6")]
        legend = [(e.get("data-model"), e.get("data-type")) for e in tree.iter("span") if e.get("class") == "item"]
        assert legend == [("NER", "LOC"), ("NER", "PER")]
    assert 'class="span"' not in structkit.render(conllu, spans=[])
    with pytest.raises(structkit.UserError, match="spans must be a list"):
        structkit.render(conllu, spans="NER")


def test_a_long_document_in_a_notebook():
    doc = Doc.from_conllu((UD / "train.conllu").read_text(encoding="utf-8") * 5)
    n = len(doc)
    assert n > 100
    html = doc._repr_html_()
    assert html.count("<svg") == 100 and f"{n - 100} more sentences" in html
    assert structkit.render(doc).count("<svg") == n


def test_import_stays_light():
    import subprocess
    import sys

    code = ("import sys, structkit; structkit.Doc; d = structkit.read_conllu(%r); "
            "structkit.render(d); print(sorted(m for m in ('numpy', 'numba') if m in sys.modules))"
            % str(UD / "dev.conllu"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# ---- a notebook's view, in a real browser -------------------------------------------------------
@pytest.fixture(scope="module")
def parsed_doc():
    """Raw text through structkit.tokenize, a POS tagger and a parser trained on the sample
    treebank, written by write_conllu with heads, read as a Doc: what a notebook holds."""
    tagger = structkit.Tagger(task="pos", epochs=5).fit(str(UD / "train.conllu"))
    # no morph templates: the parser reads the tagger's POS and nothing the tagger lacks (FEATS)
    parser = structkit.Parser(epochs=3, hash_bits=18, templates="base,labels,valency,distance,labelset") \
        .fit(str(UD / "train.conllu"))
    raw = ("The ferry leaves Gullhaven at seven. Idris said that the club hadn't signed <two> "
           "young players & a coach.")
    sents = structkit.tokenize(raw)
    tags = tagger.predict(sents)
    parsed = parser.predict(sents, pos=tags, labels=True)
    buf = io.StringIO()
    structkit.write_conllu(sents, buf, upos=tags, heads=[h for h, _ in parsed],
                           deprels=[r for _, r in parsed])
    return Doc.from_conllu(buf.getvalue(), text=raw)


def _drawn(driver, html: str) -> list[dict]:
    """Load ``html`` as a page and read back, per sentence, the words, tags, arcs and labels
    the browser drew (and where: each arc must end above its dependent's word)."""
    import base64

    driver.get("data:text/html;charset=utf-8;base64," +
               base64.b64encode(f"<!doctype html><body>{html}</body>".encode()).decode())
    return driver.execute_script("""
      return [...document.querySelectorAll("svg.tree")].map((svg) => {
        const box = (e) => e.getBoundingClientRect();
        const words = [...svg.querySelectorAll("g.token")].map((g) => {
          const w = g.querySelector("text.word"), p = g.querySelector("text.pos"), b = box(w);
          return {id: +g.dataset.id, form: w.textContent, tag: p ? p.textContent : null,
                  x: (b.left + b.right) / 2, width: b.width};
        });
        const arcs = [...svg.querySelectorAll("g.dep")].map((g) => {
          const p = g.querySelector("path.arc"), t = g.querySelector("text.arc-label");
          const pts = p.getAttribute("d").match(/-?[0-9.]+/g).map(Number);
          return {dep: +p.dataset.dep, head: +p.dataset.head, label: t.textContent,
                  attr: p.dataset.label, len: p.getTotalLength(),
                  end_x: pts[pts.length - 2] + svg.getBoundingClientRect().left};
        });
        const roots = [...svg.querySelectorAll("text.root-label")].map((t) => ({dep: +t.dataset.dep,
                                                                                label: t.textContent}));
        return {words, arcs, roots, width: box(svg).width, scripts: document.scripts.length};
      });""")


def _conllu_trees(conllu: str) -> list[list[tuple[int, str, str, int, str]]]:
    """(ID, FORM, UPOS, HEAD, DEPREL) of each word row, per sentence, read from the CoNLL-U
    text by splitting lines (not through Doc: the picture is checked against the file)."""
    out: list[list] = []
    for block in conllu.strip("\n").split("\n\n"):
        rows = [ln.split("\t") for ln in block.split("\n") if ln and not ln.startswith("#")]
        out.append([(int(r[0]), r[1], r[3], int(r[6]), r[7]) for r in rows if r[0].isdigit()])
    return out


def _check_picture(html: str, conllu: str) -> None:
    """Draw ``html`` in headless Chromium and check the words, UPOS, arcs, their labels and the
    roots read back from the DOM against the CoNLL-U, and that the layout holds."""
    from browser import headless_chromium

    trees = _conllu_trees(conllu)
    d, profile = headless_chromium(1000, 900)
    try:
        drawn = _drawn(d, html)
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)
    assert len(drawn) == len(trees) > 0
    for words, pic in zip(trees, drawn):
        assert pic["scripts"] == 0
        assert [w["form"] for w in pic["words"]] == [w[1] for w in words]
        assert [w["tag"] for w in pic["words"]] == [w[2] for w in words]
        want = sorted((i, h, rel) for i, _, _, h, rel in words if h != 0)
        assert sorted((a["dep"], a["head"], a["label"]) for a in pic["arcs"]) == want
        assert all(a["label"] == a["attr"] and a["len"] > 0 for a in pic["arcs"])
        assert [(r["dep"], r["label"]) for r in pic["roots"]] == [(i, rel) for i, _, _, h, rel in words if h == 0]
        # each arrow ends over its dependent's word, which the browser laid out left to right
        xs = [w["x"] for w in pic["words"]]
        assert xs == sorted(xs)
        for a in pic["arcs"]:
            w = pic["words"][a["dep"] - 1]
            assert abs(a["end_x"] - w["x"]) <= 4, (a, w)
        # the widths estimated in Python leave room for the words as the browser measured them
        for a, b in zip(pic["words"], pic["words"][1:]):
            assert a["x"] + a["width"] / 2 < b["x"] - b["width"] / 2, (a, b)


def test_repr_html_in_headless_chromium(parsed_doc):
    """A tagged and parsed Doc's notebook view: the arcs and labels the browser draws are the
    CoNLL-U's heads, DEPRELs and UPOS."""
    doc = parsed_doc
    assert [w.head for w in doc.words].count(0) == len(doc) and all(w.head is not None for w in doc.words)
    html = doc._repr_html_()
    _check_picture(html, doc.to_conllu())
    assert re.search(r"&lt;two&gt;", html) and "&amp; a coach" in html


def test_notebook_load_nlp_repr_html(tmp_path, sk):
    """The notebook of the issue: ``nlp = structkit.load(model)``, ``doc = nlp(text)``,
    ``doc._repr_html_()`` drawn by headless Chromium; the picture is the CoNLL-U's."""
    if "load" not in dir(structkit):
        pytest.skip("structkit.load comes with the pipeline wing")
    model = tmp_path / "sample.skm"
    r = sk("train", "--task", "pipeline", "--train", str(UD / "train.conllu"), "--dev",
           str(UD / "dev.conllu"), "--model", str(model), "-q")
    assert r.code == 0, r.err
    nlp = structkit.load(str(model))
    text = "The ferry leaves Gullhaven at seven.\n\nThe council didn't meet on <Monday> & Tuesday."
    doc = nlp(text)
    assert isinstance(doc, Doc) and len(doc) >= 2 and doc.text == text
    _same_offsets(doc)
    _check_picture(doc._repr_html_(), doc.to_conllu())


# ---- offsets and the legend, worked out by hand ---------------------------------------------------
def test_sentence_offsets_of_a_doc_read_from_conllu():
    """Without a raw text, ``doc.text`` is the ``# text`` of each sentence joined by a space (the
    last token of the first has space after it): 'Vámonos al mar, ya.' is characters 0-19,
    'Sí' 20-22."""
    doc = Doc.from_conllu(HANDMADE)
    assert doc.text == "Vámonos al mar, ya. Sí"
    assert [(s.start, s.end) for s in doc.sents] == [(0, 19), (20, 22)]
    assert [(t.form, t.start, t.end) for t in doc.sents[0].tokens] == [
        ("Vámonos", 0, 7), ("al", 8, 10), ("mar", 11, 14), (",", 14, 15), ("ya", 16, 18), (".", 18, 19)]
    # a sentence whose last token has SpaceAfter=No runs on into the next; a # newpar is a blank line
    glued = ("# text = Hi!\n1\tHi\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n2\t!\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n\n"
             "# text = Bye.\n1\tBye\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n2\t.\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
             "# newpar\n# text = Go\n1\tGo\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    doc = Doc.from_conllu(glued)
    assert doc.text == "Hi!Bye.\n\nGo"
    assert [(s.start, s.end) for s in doc.sents] == [(0, 3), (3, 7), (9, 11)]


def test_the_legend_escapes_span_types_from_misc():
    """A span type comes from MISC, which is the data's: in the legend as in the picture it is
    text, never markup."""
    evil = "<img src=x onerror=alert(1)>"
    conllu = f"1\tAda\t_\t_\t_\t_\t_\t_\t_\tNER=B-{evil}\n2\tran\t_\t_\t_\t_\t_\t_\t_\tNER=O\n\n"
    doc = Doc.from_conllu(conllu)
    for html in (structkit.render(doc), doc._repr_html_(), structkit.render(doc, page=True)):
        assert "<img" not in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html
    tree = ET.fromstring(structkit.render(doc))
    legend = [(e.get("data-type"), "".join(e.itertext())) for e in tree.iter("span") if e.get("class") == "item"]
    assert legend == [(evil, evil)]


def test_an_empty_column_value_is_refused_however_the_sentence_is_held():
    """No CoNLL-U column is empty: filling one with "" fails (it once wrote an empty LEMMA
    column where a lemma rule cut a whole word, where a sentence held as objects refused it)."""
    from structkit.io.document import new_sentence

    held = new_sentence([("Sí", ["Sí"], False), ("!", ["!"], True)], ["# text = Sí!"])   # as the tokenizer makes them
    objects = Doc.from_conllu(HANDMADE).sents[1]
    assert held.held_as_lines and not objects.held_as_lines
    for s in (held, objects):
        with pytest.raises(ValueError, match=r"an empty value of column 3 \(word 1\)"):
            s.fill_columns({2: [""] * len(s)})
    held.fill_columns({2: ["sí", "!"]})
    assert held.rows[0][2] == "sí" and "1\tSí\tsí\t" in held.to_conllu()
