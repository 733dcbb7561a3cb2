"""The pipeline task end to end on the shipped sample treebank: `train --task pipeline` (one file:
tokenizer, morph model, parser on jackknifed or gold morphology as dev chose), `annotate` (raw
text to CoNLL-U that `eval --task ud` scores; JSON lines; the batch options), the Python API
(`structkit.load`, `nlp(text)`, `nlp.pipe`), the server's /pipeline, the model file, and the
refusals of chains whose tag sets do not fit (a PTB tagger into a UD parser; a parser that reads
FEATS after a POS tagger), one line each on the command line, in the API and in the server."""
from __future__ import annotations

import json
import zipfile

import pytest

import structkit
from clitools import assert_one_line_error, leftovers
from structkit.datasets import sample_dir

UD = sample_dir() / "ud"
PTB = sample_dir() / "pos"
TEXT = "The harbour master said the ferry would leave on Monday. The council met again.\n"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A pipeline (sample UD train, dev), a UD parser (reads FEATS), UD and PTB POS taggers."""
    from structkit.cli import main

    d = tmp_path_factory.mktemp("pipeline")
    paths = {"pipe": d / "p.skm", "parser": d / "parser.model", "ud_pos": d / "ud_pos.model",
             "ptb_pos": d / "ptb_pos.model"}
    runs = [["train", "--task", "pipeline", "--train", UD / "train.conllu", "--dev", UD / "dev.conllu",
             "--model", paths["pipe"], "-q"],
            ["train", "--task", "parse", "--train", UD / "train.conllu", "--epochs", "3", "--model",
             paths["parser"], "-q"],
            ["train", "--task", "pos", "--train", UD / "train.conllu", "--epochs", "3", "--model",
             paths["ud_pos"], "-q"],
            ["train", "--task", "pos", "--train", PTB / "train.txt", "--epochs", "3", "--model",
             paths["ptb_pos"], "-q"]]
    for args in runs:
        with pytest.raises(SystemExit) as ei:
            main([str(a) for a in args])
        assert ei.value.code in (0, None), args
    raw = d / "test.txt"
    from structkit.tokenizer.task import raw_text

    raw.write_text(raw_text(str(UD / "test.conllu")), encoding="utf-8")
    paths["raw"] = raw
    return paths


def _header(path) -> dict:
    import numpy as np

    with zipfile.ZipFile(path) as z, z.open("__header__.npy") as f:
        return json.loads(np.lib.format.read_array(f).tobytes())


# ---- the model file --------------------------------------------------------------------------------
def test_the_model_holds_every_part_and_records_the_jackknife_choice(models):
    h = _header(models["pipe"])
    assert h["task"] == "pipeline" and h["parts"] == ["morph", "parse", "tokenize"]
    info = h["info"]
    assert set(info["parser_dev"]) == {"gold", "jackknifed"}   # with --dev both are trained
    best = max(info["parser_dev"], key=lambda k: info["parser_dev"][k]["las"])
    assert info["parser_dev"][best]["las"] == info["parser_dev"][info["parser_morphology"]]["las"]
    assert info["jackknife_folds"] == 5
    facts = h["facts"]
    assert "NOUN" in facts["morph"]["upos"] and facts["morph"]["feats"]
    assert facts["parse"]["column"] == "upos" and facts["parse"]["feats"] and "VERB" in facts["parse"]["pos"]


def test_round_trip_and_damage(models, tmp_path, sk):
    from structkit.pipeline.model import PipelineModel

    m = PipelineModel.load(str(models["pipe"]))
    again = tmp_path / "again.skm"
    m.save(str(again))
    a = sk("annotate", "-m", models["pipe"], models["raw"])
    b = sk("annotate", "-m", again, models["raw"])
    assert a.code == 0 and a.out == b.out and a.out
    data = models["pipe"].read_bytes()
    bad = tmp_path / "bad.skm"
    bad.write_bytes(data[: len(data) // 2])
    assert_one_line_error(sk("annotate", "-m", bad, models["raw"]), str(bad))


def test_a_model_of_another_task_is_refused(models, sk, tmp_path):
    """`annotate` and ``structkit.load`` take the models a pipeline is made of (a parser alone
    then lacks the POS it reads); `parse` takes no pipeline; a chunker is no component."""
    assert_one_line_error(sk("annotate", "-m", models["parser"], models["raw"]), "reads UPOS")
    assert_one_line_error(sk("parse", "-m", models["pipe"], str(UD / "test.conllu")), "pipeline")
    chunker = tmp_path / "chunk.skm"
    r = sk("train", "--task", "chunk", "--train", sample_dir() / "chunk" / "train.txt", "--epochs", "1",
           "--model", chunker, "-q")
    assert r.code == 0, r.err
    assert_one_line_error(sk("annotate", "-m", chunker, models["raw"]), "a chunk model cannot be part")
    with pytest.raises(structkit.UserError, match="a chunk model cannot be part"):
        structkit.load([models["pipe"], chunker])


def test_options_of_the_pipeline_task_are_checked(tmp_path, sk):
    cfg = tmp_path / "c.toml"
    cfg.write_text('task = "pipeline"\nparts = ["morph", "lemma"]\n')
    assert_one_line_error(sk("train", "--config", cfg, "--train", UD / "train.conllu", "--model",
                             tmp_path / "m.skm"), "parts")
    assert_one_line_error(sk("train", "--task", "pipeline", "--algo", "beam", "--train", UD / "train.conllu",
                             "--model", tmp_path / "m.skm"), "--algo")
    assert not (tmp_path / "m.skm").exists() and not leftovers(tmp_path)


# ---- annotate ----------------------------------------------------------------------------------------
# What the pipeline of the sample treebank scores on the sample's test text (131 words), measured
# with these commands when this was written: tokens, words and sentences 100.00, UPOS 88.55, UFeats
# 90.08, Lemmas 91.60, UAS 70.99, LAS 62.60, MLAS 50.00, BLEX 50.00. The floors are a few points
# (a few words) under those: a column swapped, a word dropped or a fold leaked falls below them.
SAMPLE_FLOORS = {"tokens": 99.0, "words": 99.0, "sentences": 99.0, "upos": 85.0, "ufeats": 86.0,
                 "lemmas": 88.0, "uas": 66.0, "las": 58.0, "mlas": 44.0, "blex": 44.0}


def test_annotate_writes_conllu_that_eval_ud_scores(models, sk, tmp_path):
    out = tmp_path / "out.conllu"
    r = sk("annotate", "-m", models["pipe"], models["raw"], "-o", out)
    assert r.code == 0, r.err
    doc = structkit.Doc.from_conllu(out.read_text(encoding="utf-8"), check_text=True)
    words = doc.words
    assert words and all(w.upos and w.lemma and w.head is not None and w.deprel for w in words)
    for s in doc.sents:   # one root per sentence, heads inside it
        assert sum(w.head == 0 for w in s.words) == 1
        assert all(0 <= w.head <= len(s.words) for w in s.words)
    ev = sk("eval", "--task", "ud", UD / "test.conllu", out, "--json")
    assert ev.code == 0, ev.err
    scores = json.loads(ev.out)
    low = {k: scores[k]["f1"] for k, floor in SAMPLE_FLOORS.items() if scores[k]["f1"] < floor}
    assert not low, low
    # the text survives: every sentence's # text is its stretch of the input
    raw = " ".join(models["raw"].read_text(encoding="utf-8").split())
    assert all(s.text in raw for s in doc.sents)


def test_json_lines_hold_what_conllu_holds(models, sk):
    c = sk("annotate", "-m", models["pipe"], "-", stdin=TEXT.encode())
    j = sk("annotate", "-m", models["pipe"], "--format", "json", "-", stdin=TEXT.encode())
    assert c.code == 0 and j.code == 0, (c.err, j.err)
    sents = [json.loads(line) for line in j.out.splitlines()]
    doc = structkit.Doc.from_conllu(c.out)
    assert [s["text"] for s in sents] == [s.text for s in doc.sents]
    for js, s in zip(sents, doc.sents):
        assert [(w["form"], w["lemma"], w["upos"], w["feats"] or "_", w["head"], w["deprel"]) for w in js["words"]] \
            == [(w.form, w.lemma, w.upos, w.feats or "_", w.head, w.deprel) for w in s.words]


def test_batch_options_give_the_serial_output(models, sk, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    texts = {"a.txt": TEXT, "b.txt": models["raw"].read_text(encoding="utf-8")}
    for name, t in texts.items():
        (src / name).write_text(t, encoding="utf-8")
    serial = {n: sk("annotate", "-m", models["pipe"], src / n).out for n in texts}
    out = tmp_path / "out"
    r = sk("annotate", "-m", models["pipe"], src, "--output-dir", out, "--jobs", "2", "-q")
    assert r.code == 0, r.err
    for n in texts:
        assert (out / n.replace(".txt", ".conllu")).read_text(encoding="utf-8") == serial[n]
    r = sk("annotate", "-m", models["pipe"], src, "--output-dir", out, "--format", "json", "-q")
    assert r.code == 0 and (out / "a.jsonl").read_text(encoding="utf-8").count("\n") == 2
    (src / "c.txt").write_bytes(b"\xff\xfe not text\n")
    (out / "a.conllu").write_text("kept\n")
    r = sk("annotate", "-m", models["pipe"], src, "--output-dir", out, "--skip-existing", "--keep-going", "-q")
    assert r.code != 0 and "c.txt" in r.err
    assert (out / "a.conllu").read_text() == "kept\n" and not (out / "c.conllu").exists()


def test_one_long_paragraph_is_shared_among_the_workers(models, sk, tmp_path, monkeypatch):
    """Issue 42: a file with no blank line is one paragraph, one block, which one worker took
    alone. With --jobs 2 it is tokenized in the main process and its sentences analysed by the
    workers in pieces (``AnnotateJob.divide``). Here the long paragraph comes after short ones
    that fill the first blocks, so it is the third block. The output is still one document: one
    ``# newdoc``, a ``# newpar`` for each paragraph, ids 1..N in order, each ``# text`` a
    stretch of the input; and it is what one process writes."""
    from structkit.pipeline import annotate

    lines = [x for x in models["raw"].read_text(encoding="utf-8").split("\n") if x.strip()]
    one = " ".join(lines)
    short = "".join(x + "\n\n" for x in lines)
    copies = -(-70_000 // len(short))
    src = tmp_path / "long.txt"   # 70 KB of short paragraphs, then one of 150 KB (> 2 x 64 KB)
    src.write_text(short * copies + (one + "\n") * (-(-150_000 // len(one))), encoding="utf-8")
    monkeypatch.setattr(annotate, "PIECE_WORDS", 500)
    divided = []
    real = annotate.AnnotateJob.divide
    monkeypatch.setattr(annotate.AnnotateJob, "divide", lambda self, *a: divided.append(1) or real(self, *a))
    serial = sk("annotate", "-m", models["pipe"], src, "--jobs", "1")
    assert serial.code == 0 and not divided, serial.err
    shared = sk("annotate", "-m", models["pipe"], src, "--jobs", "2")
    assert shared.code == 0 and divided == [1], shared.err
    out = shared.out
    assert out.count("# newdoc") == 1 and out.startswith("# newdoc\n# newpar\n# sent_id = 1\n")
    assert out.count("# newpar") == copies * len(lines) + 1
    ids = [int(x.split(" = ")[1]) for x in out.splitlines() if x.startswith("# sent_id = ")]
    assert ids == list(range(1, len(ids) + 1)) and len(ids) > 4 * 30
    flat = " ".join(src.read_text(encoding="utf-8").split())
    assert all(x[len("# text = "):] in flat for x in out.splitlines() if x.startswith("# text = "))
    assert out == serial.out


# ---- Python ---------------------------------------------------------------------------------------
def test_load_call_and_pipe(models, sk):
    nlp = structkit.load(models["pipe"])
    doc = nlp(TEXT)
    assert isinstance(doc, structkit.Doc)
    assert doc.to_conllu() == sk("annotate", "-m", models["pipe"], "-", stdin=TEXT.encode()).out
    tok = doc.sents[1].tokens[0]
    assert TEXT[tok.start:tok.end] == tok.form
    texts = [TEXT, "A ferry.", "The mayor said so."]
    one = [d.to_conllu() for d in nlp.pipe(texts)]
    assert one == [d.to_conllu() for d in nlp.pipe(texts, jobs=2)] == [nlp(t).to_conllu() for t in texts]
    assert len(nlp("   ").sents) == 0
    with pytest.raises(structkit.UserError, match="str"):
        nlp(["not", "text"])


# ---- refusals: tag sets that do not fit ---------------------------------------------------------------
def test_a_ptb_tagger_into_a_ud_parser_is_refused_everywhere(models, sk, tmp_path):
    raw = models["raw"]
    line = assert_one_line_error(sk("parse", "-m", models["parser"], "--tagger", models["ptb_pos"], "--text",
                                    raw), "tag sets do not match", "UPOS")
    assert "NOUN" in line or "ADJ" in line    # it says what each side knows
    # on CoNLL-U input too (the tagger's tags replace the file's)
    assert_one_line_error(sk("parse", "-m", models["parser"], "--tagger", models["ptb_pos"],
                             UD / "test.conllu"), "tag sets do not match")
    with pytest.raises(structkit.UserError, match="tag sets do not match") as ei:
        structkit.load(tagger=models["ptb_pos"], parser=models["parser"])
    assert "\n" not in str(ei.value)


def test_a_parser_that_reads_feats_after_a_pos_tagger_is_refused_on_text(models, sk):
    assert_one_line_error(sk("parse", "-m", models["parser"], "--tagger", models["ud_pos"], "--text",
                             models["raw"]), "FEATS")
    # CoNLL-U input brings its own FEATS and LEMMA: the UD tagger's tags are the parser's
    r = sk("parse", "-m", models["parser"], "--tagger", models["ud_pos"], UD / "test.conllu")
    assert r.code == 0, r.err
    with pytest.raises(structkit.UserError, match="FEATS"):
        structkit.load(tagger=models["ud_pos"], parser=models["parser"])


def test_compat_threshold():
    from structkit.errors import UserError
    from structkit.tagsets import check_chain

    ud = sorted("ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split())
    parser = {"column": "upos", "pos": ud, "feats": False, "lemmas": False}
    check_chain({"upos": ud[:-3] + ["EXTRA"], "feats": False, "lemmas": False}, parser, "t", "p")
    ptb = "CC CD DT IN JJ NN NNS NNP VB VBD VBZ RB PRP SYM".split()
    with pytest.raises(UserError, match="1 of them"):
        check_chain({"upos": ptb, "feats": False, "lemmas": False}, parser, "t", "p")


# ---- the server ---------------------------------------------------------------------------------------
def test_serve_runs_a_pipeline_model_and_refuses_bad_chains(models):
    from structkit.serve import (RequestError, Tokenizers, answer, check_request, load_models,
                                 pipeline_tokenizers)

    served = load_models([f"it={models['pipe']}", f"ptb={models['ptb_pos']}", f"parser={models['parser']}"])
    toks = Tokenizers()
    pipeline_tokenizers(served, toks)
    assert toks.default == "it"      # the pipeline's tokenizer tokenises text naming no lang

    from structkit.serve import Job   # no deadline

    body, _ = answer({"text": TEXT, "models": ["it"]}, "pipeline", served, Job(), tokenizers=toks)
    got = json.loads(body)
    words = [t for s in got["sentences"] for t in s["tokens"]]
    want = structkit.load(models["pipe"])(TEXT).words
    assert [(t["form"], t["upos"], t["lemma"], t["head"], t["deprel"]) for t in words] \
        == [(w.form, w.upos, w.lemma, w.head, w.deprel) for w in want]
    conllu, _ = answer({"text": TEXT, "models": ["it"], "format": "conllu"}, "pipeline", served, Job(),
                       tokenizers=toks)
    rows = [ln.split("\t") for ln in conllu.decode().splitlines() if ln and not ln.startswith("#")]
    assert [(r[3], r[6]) for r in rows if "-" not in r[0]] == [(w.upos, str(w.head)) for w in want]
    # a POS model in front of a pipeline: the pipeline reads no tags (it makes its own), so their
    # tag sets need not match; each gives its own labels (was a 500: the chain check asked the
    # pipeline for the POS column a parser reads)
    body, _ = answer({"text": TEXT, "models": ["ptb", "it"]}, "pipeline", served, Job(), tokenizers=toks)
    both = [t for s in json.loads(body)["sentences"] for t in s["tokens"]]
    assert [(t["upos"], t["head"], t["deprel"]) for t in both] == [(w.upos, w.head, w.deprel) for w in want]
    assert all(set(t["labels"]) == {"ptb", "it"} for t in both)
    ptb_tags = {ln.split()[1] for ln in (PTB / "train.txt").read_text().splitlines() if ln.strip()}
    assert {t["labels"]["ptb"] for t in both} <= ptb_tags
    for body in ({"text": TEXT, "models": ["ptb", "parser"]}, {"text": TEXT, "model": "parser", "tagger": "ptb"}):
        with pytest.raises(RequestError) as ei:
            check_request(body, "pipeline" if "models" in body else "parse", served, toks)
        assert ei.value.status == 400 and "tag sets do not match" in ei.value.message
        assert "\n" not in ei.value.message


def test_parts_and_folds_from_a_config_file(tmp_path, sk):
    """A pipeline of a tokenizer and a morph model only (no parser: HEAD and DEPREL stay '_'),
    and a parser-only config refused for raw text; no --dev: the parser trains on gold
    morphology (jackknife "auto"), or on jackknifed morphology when the config says "yes"."""
    cfg = tmp_path / "c.toml"
    cfg.write_text('task = "pipeline"\nparts = ["tokenize", "morph"]\n')
    m = tmp_path / "tm.skm"
    assert sk("train", "--config", cfg, "--train", UD / "train.conllu", "--model", m, "-q").code == 0
    out = sk("annotate", "-m", m, "-", stdin=TEXT.encode())
    assert out.code == 0, out.err
    words = structkit.Doc.from_conllu(out.out).words
    assert words and all(w.upos and w.head is None and w.deprel is None for w in words)
    cfg.write_text('task = "pipeline"\nparts = ["morph", "parse"]\n')
    m2 = tmp_path / "mp.skm"
    assert sk("train", "--config", cfg, "--train", UD / "train.conllu", "--model", m2, "-q").code == 0
    info = _header(m2)["info"]
    assert info["parser_morphology"] == "gold" and info["parser_dev"] == {} and "jackknife_folds" not in info
    cfg.write_text('task = "pipeline"\nparts = ["morph", "parse"]\nfolds = 3\njackknife = "yes"\n')
    assert sk("train", "--config", cfg, "--train", UD / "train.conllu", "--model", m2, "-q").code == 0
    info = _header(m2)["info"]
    assert info["parser_morphology"] == "jackknifed" and info["parser_dev"] == {} and info["jackknife_folds"] == 3
    # no tokenizer: the English rules split the text; the parser gives each sentence a tree
    doc = structkit.load(m2)(TEXT)
    assert [[w.form for w in s.words] for s in doc.sents] == [
        ["The", "harbour", "master", "said", "the", "ferry", "would", "leave", "on", "Monday", "."],
        ["The", "council", "met", "again", "."]]
    for s in doc.sents:
        assert [w.head for w in s.words].count(0) == 1 and all(0 <= w.head <= len(s) for w in s.words)
    cfg.write_text('task = "pipeline"\nparts = ["parse"]\n')
    m3 = tmp_path / "p.skm"
    assert sk("train", "--config", cfg, "--train", UD / "train.conllu", "--model", m3, "-q").code == 0
    assert_one_line_error(sk("annotate", "-m", m3, "-", stdin=TEXT.encode()), "reads UPOS")


def test_dask_gives_the_serial_output(models, sk, tmp_path):
    from conftest import require_extra

    require_extra("distributed", "dask")
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text(TEXT, encoding="utf-8")
    (src / "b.txt").write_text(models["raw"].read_text(encoding="utf-8"), encoding="utf-8")
    serial = sk("annotate", "-m", models["pipe"], src / "a.txt", src / "b.txt")
    r = sk("annotate", "-m", models["pipe"], src / "a.txt", src / "b.txt", "--dask", "local:2", "-q")
    assert r.code == 0 and serial.code == 0, r.err
    assert r.out == serial.out and r.out.count("# file = ") == 2


def test_eval_task_pipeline_is_the_conll_2018_evaluation(models, sk, tmp_path):
    out = tmp_path / "o.conllu"
    assert sk("annotate", "-m", models["pipe"], models["raw"], "-o", out).code == 0
    a = sk("eval", "--task", "pipeline", UD / "test.conllu", out, "--json")
    b = sk("eval", "--task", "ud", UD / "test.conllu", out, "--json")
    assert a.code == 0 and json.loads(a.out) == json.loads(b.out)
