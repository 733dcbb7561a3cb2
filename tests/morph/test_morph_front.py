"""The morph model behind every front-end, as taggers are: `morph --scores` (a margin per
predicted part in MISC), `explain` for each part, the Python API (structkit.Morph), batch
(--output-dir, --jobs, --skip-existing, --keep-going), the server (POST /morph, and /pipeline
with the parser after it reading the analyses), `dump`; and the columns a model does not
predict passed through unchanged."""
from __future__ import annotations

import json
import math

import pytest

import structkit
from clitools import assert_one_line_error, leftovers
from test_morph_task import data, trained  # noqa: F401 (the small inflecting treebank and its model)

KEYS = ("LemmaMargin", "UPOSMargin", "XPOSMargin", "FeatsMargin")


def word_rows(text: str) -> list[list[str]]:
    return [ln.split("\t") for ln in text.split("\n") if ln[:1].isdigit() and "\t" in ln and "-" not in ln.split("\t")[0]]


def misc(field: str) -> dict:
    return dict(x.split("=", 1) for x in field.split("|") if "=" in x)


def test_scores_are_the_max_marginal_margins(sk, data, trained):  # noqa: F811
    """Each part's margin in MISC; the analyses are those written without --scores; a part's
    margin agrees with the max-marginals (best with the value minus best with another)."""
    from structkit.morph.explain import score
    from structkit.morph.task import MorphModel

    d = data[0]
    plain = sk("morph", "-m", trained, d / "input.conllu")
    scored = sk("morph", "-m", trained, d / "input.conllu", "--scores")
    assert plain.code == scored.code == 0, scored.err
    p_rows, s_rows = word_rows(plain.out), word_rows(scored.out)
    assert [r[:9] for r in p_rows] == [r[:9] for r in s_rows]
    for r, q in zip(p_rows, s_rows):
        m = misc(q[9])
        assert set(KEYS) <= set(m)
        assert all(v == "inf" or float(v) >= -1e-6 for v in m.values())
        assert misc(r[9]).items() <= m.items()          # the input's own keys kept
    # against the max-marginals, for the words of the first sentence
    model = MorphModel.load(str(trained))
    words = [r[1] for r in word_rows((d / "input.conllu").read_text(encoding="utf-8"))[:6]]
    sc = score(model, [words])
    enc = sc.enc
    for i in range(len(words)):
        cands = enc.cands[enc.cand_ptr[i]:enc.cand_ptr[i + 1]]
        mm = sc.mm[enc.cand_ptr[i]:enc.cand_ptr[i + 1]]
        for k, part in enumerate(("upos", "xpos", "feats")):
            value = lambda t: model.tables.tags[t].split("\t")[k]  # noqa: E731
            mine = max(v for t, v in zip(cands, mm) if value(t) == value(sc.tags[i]))
            other = [v for t, v in zip(cands, mm) if value(t) != value(sc.tags[i])]
            want = mine - max(other) if other else math.inf
            assert sc.margins[part][i] == pytest.approx(want)
            assert mine == pytest.approx(mm.max())      # the predicted tag is on the best path


def test_explain_each_part(sk, data, trained):  # noqa: F811
    d = data[0]
    r = sk("explain", "-m", trained, d / "input.conllu", "--sentence", "2", "--json")
    assert r.code == 0, r.err
    got = [json.loads(x) for x in r.out.splitlines()]
    n = len(word_rows((d / "input.conllu").read_text(encoding="utf-8").split("\n\n")[1]))
    parts = {}
    for e in got:
        parts.setdefault(e["index"], []).append(e["word"].rsplit("[", 1)[1].rstrip("]"))
    assert sorted(parts) == list(range(1, n + 1))
    assert all(v == ["UPOS", "XPOS", "FEATS", "LEMMA"] for v in parts.values())
    # the labels are the analysis `morph` writes for that sentence
    out = sk("morph", "-m", trained, d / "input.conllu").out.split("\n\n")[1]
    col = {"UPOS": 3, "XPOS": 4, "FEATS": 5, "LEMMA": 2}
    rows = word_rows(out)
    for e in got:
        part = e["word"].rsplit("[", 1)[1].rstrip("]")
        assert e["label"] == rows[e["index"] - 1][col[part]]
    # the lemma's pushes add up to its margin (a classifier: no context term)
    for e in got:
        if e["word"].endswith("[LEMMA]") and e["margin"] is not None and len(e["features"]) < 10:
            assert sum(w for _, w in e["features"]) == pytest.approx(e["margin"], abs=1e-3)
    text = sk("explain", "-m", trained, "--text", "The kabas lomeked a vip.", "--token", "3")
    assert text.code == 0 and "lomeked [UPOS]: VERB" in text.out and "lomeked [LEMMA]: lomek" in text.out, text.out


def test_the_names_of_the_feature_columns_are_real(trained):  # noqa: F811
    """The names explain gives the word's own feature columns hash to the values the tagger
    read, and there is a name for every column (the layout of features.tag_features)."""
    from structkit.morph.explain import score, tag_feature_names
    from structkit.morph.names import _own_values, lemma_feature_names
    from structkit.lattice.features import value
    from structkit.morph.task import MorphModel

    model = MorphModel.load(str(trained))
    words = ["The", "kabas", "Lomeked", "a", "vip", "."]
    sc = score(model, [words])
    for i, w in enumerate(words):
        names = tag_feature_names(model, words, i, bool(sc.enc.known[i]), [0])
        assert len(names) == sc.enc.feats.shape[1]
        start = 0 if sc.enc.known[i] else 2      # an unknown word's form columns are the shared <unknown>
        for k, (t, v) in enumerate(_own_values(w)[start:], start):
            assert sc.enc.feats[i, k] == value(t, v)
    from structkit.morph.explain import lemma_inputs

    lf = lemma_inputs(model, sc.tags, sc.enc)
    assert len(lemma_feature_names(model, words[1], model.tables.tags[sc.tags[1]])) == lf.shape[1]


def test_the_python_api(data, trained, tmp_path):  # noqa: F811
    d = data[0]
    morph = structkit.Morph.load(trained)
    sents = [["The", "kabas", "lomeked", "a", "vip", "."]]
    (a,) = morph.predict(sents)
    assert a[1] == {"lemma": "kaba", "upos": "NOUN", "xpos": "NNS", "feats": "Number=Plur"}
    ((a2, margins),) = morph.predict(sents, scores=True)
    assert a2 == a and set(margins[2]) == {"lemma", "upos", "xpos", "feats"}
    by_file = morph.predict(str(d / "input.conllu"))
    scores = morph.score(str(d / "test.conllu"))
    assert scores["task"] == "morph" and scores["alltags"] >= 97.0 and scores["words"] == sum(map(len, by_file))
    # fit on a file, with dev and an epoch callback; save and load give the same analyses
    seen = []
    m2 = structkit.Morph(epochs=2).fit(str(d / "train.conllu"), dev=str(d / "dev.conllu"),
                                       on_epoch=lambda e, s: seen.append(e))
    assert seen == [1, 2]
    m2.save(tmp_path / "m2.model")
    assert structkit.Morph.load(tmp_path / "m2.model").predict(sents) == m2.predict(sents)
    with pytest.raises(structkit.UserError, match="CoNLL-U treebank file"):
        structkit.Morph().fit([["a", "b"]])
    with pytest.raises(structkit.UserError, match="unknown option"):
        structkit.Morph(label_column="lemma")


def test_batch_options(sk, data, trained, tmp_path):  # noqa: F811
    d = data[0]
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    text = (d / "input.conllu").read_text(encoding="utf-8")
    (src / "a.conllu").write_text(text, encoding="utf-8")
    (src / "sub" / "b.conllu").write_text(text, encoding="utf-8")
    (src / "bad.conllu").write_text("1\tx\t_\t_\n", encoding="utf-8")
    one = sk("morph", "-m", trained, d / "input.conllu")
    out = tmp_path / "out"
    r = sk("morph", "-m", trained, src, "--output-dir", out, "--jobs", "2", "--keep-going")
    assert r.code != 0 and "bad.conllu" in r.err            # reported, the rest written
    assert (out / "a.conllu").read_text(encoding="utf-8") == one.out
    assert (out / "sub" / "b.conllu").read_text(encoding="utf-8") == one.out
    assert not (out / "bad.conllu").exists()
    (out / "a.conllu").write_text("kept", encoding="utf-8")
    r = sk("morph", "-m", trained, src / "a.conllu", src / "sub", "--output-dir", out, "--skip-existing")
    assert r.code == 0, r.err
    assert (out / "a.conllu").read_text(encoding="utf-8") == "kept"
    assert not leftovers(out)


def test_a_model_without_xpos_or_feats_passes_them_through(sk, data, tmp_path):  # noqa: F811
    """Trained where XPOS and FEATS are '_' throughout, the model predicts UPOS and LEMMA only:
    the input's XPOS and FEATS are written back as read (and get no margin)."""
    d = data[0]
    lines = []
    for ln in (d / "train.conllu").read_text(encoding="utf-8").split("\n"):
        c = ln.split("\t")
        if len(c) == 10:
            c[4] = c[5] = "_"
        lines.append("\t".join(c))
    train = tmp_path / "train.conllu"
    train.write_text("\n".join(lines), encoding="utf-8")
    m = tmp_path / "m.model"
    assert sk("train", "--task", "morph", "--train", train, "--model", m, "--epochs", "2", "-q").code == 0
    r = sk("morph", "-m", m, d / "test.conllu", "--scores")   # gold XPOS and FEATS in the input
    assert r.code == 0, r.err
    got, gold = word_rows(r.out), word_rows((d / "test.conllu").read_text(encoding="utf-8"))
    assert [g[4:6] for g in got] == [g[4:6] for g in gold]
    assert all("XPOSMargin" not in g[9] and "FeatsMargin" not in g[9] and "UPOSMargin" in g[9] for g in got)
    assert structkit.Morph.load(m).predict([["The", "kabas"]])[0][1].keys() == {"lemma", "upos"}


def test_serve_morph_then_parse(data, trained, tmp_path):  # noqa: F811
    from structkit import serve

    d = data[0]
    structkit.Parser(epochs=1, hash_bits=16).fit(str(d / "train.conllu")).save(tmp_path / "p.model")
    served = serve.load_models([f"m={trained}", f"p={tmp_path / 'p.model'}"])
    assert served["m"].meta["scores"] and served["m"].meta["explain"]
    assert served["m"].meta["parts"] == ["lemma", "upos", "xpos", "feats"]
    assert "/morph" in serve.openapi(served)["paths"]
    body, _ = serve.answer({"tokens": [["The", "kabas", "lomeked", "a", "vip", "."]], "explain": True},
                           "morph", served, serve.Job())
    tok = json.loads(body)["sentences"][0]["tokens"][1]
    assert tok["labels"]["m"] == structkit.Morph.load(trained).predict([["The", "kabas"]])[0][1]
    assert set(tok["scores"]["m"]) == {"lemma", "upos", "xpos", "feats"}
    assert tok["explanations"]["m"]["upos"]["label"] == "NOUN"
    # the pipeline: morph first, then the parser, which reads its analyses; CoNLL-U answer filled
    conllu = (d / "input.conllu").read_text(encoding="utf-8").split("\n\n")[0] + "\n\n"
    body, _ = serve.answer({"conllu": conllu, "format": "conllu"}, "pipeline", served, serve.Job())
    rows = word_rows(body.decode())
    direct = word_rows(sk_free_morph(trained, conllu))
    assert [r[2:6] for r in rows] == [r[2:6] for r in direct]
    assert all(r[6] != "_" for r in rows)
    body, _ = serve.answer({"text": "The kabas lomeked a vip.", "render": True}, "pipeline", served, serve.Job())
    out = json.loads(body)
    assert out["warnings"] == [] and all("head" in t for t in out["sentences"][0]["tokens"])
    # the picture: the morph model's UPOS under the words, its parts with their margins in the tips
    svg = out["sentences"][0]["svg"]
    assert "m: lemma kaba (" in svg and ">NOUN<" in svg, svg[:2000]


def sk_free_morph(model_path, conllu: str) -> str:
    """`structkit morph` on a CoNLL-U string, through the batch job."""
    from structkit.tasks import get_task

    task = get_task("morph")
    job, _ = task.command.batch_job(task, str(model_path), "morph")
    return job.process(job.sniff("x", b""), "x", conllu.encode("utf-8"), True)[0].decode("utf-8")


def test_dump_of_a_morph_model(sk, trained):  # noqa: F811
    r = sk("dump", "-m", trained, "--top", "2", "--feature", "NOUN")
    assert r.code == 0, r.err
    tags = [ln for ln in r.out.splitlines() if ln.startswith("tag\t")]
    assert len(tags) == 2 and all("NOUN" in t for t in tags)


def test_bad_options_are_one_line(sk, data, trained, tmp_path):  # noqa: F811
    d = data[0]
    assert_one_line_error(sk("morph", "-m", trained, d / "input.conllu", "--no-split"), "--no-split goes with --text")
    assert_one_line_error(sk("morph", "-m", trained, "--text", "--lang", "xx", d / "input.conllu"), "xx")
    assert_one_line_error(sk("explain", "-m", trained, d / "input.conllu", "--depth", "2"), "--depth")


def test_dask_equals_one_job(sk, data, trained, tmp_path):  # noqa: F811
    from conftest import require_extra

    require_extra("distributed", "dask")
    d = data[0]
    src = tmp_path / "in"
    src.mkdir()
    for name in ("a.conllu", "b.conllu"):
        (src / name).write_bytes((d / "input.conllu").read_bytes())
    one = sk("morph", "-m", trained, src, "--scores", "-j", "1")
    dask = sk("morph", "-m", trained, src, "--scores", "--dask", "local:2")
    assert one.code == 0 and dask.code == 0, dask.err
    assert dask.out == one.out and one.out.count("# file = ") == 2
