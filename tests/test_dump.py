"""structkit dump on every kind of model: taggers of each family, parsers of each kind and the
reranker; the features it names are real (their weights are the model's)."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "structkit", "data", "sample")
CHUNK = os.path.join(SAMPLE, "chunk", "train.txt")
UD = os.path.join(SAMPLE, "ud", "train.conllu")
FEATURE_LINE = re.compile(r"^  (\S+): (.*)$")


@pytest.mark.parametrize("algo,opts", [("perceptron", []), ("greedy", []),
                                       ("lookahead", ["--depth", "2", "--label-order", "2", "--direction", "rtl"]),
                                       ("olarank-greedy", ["--order", "2"]), ("kbest-mira", ["--k", "2"])])
def test_dump_taggers(sk, tmp_path, algo, opts):
    from structkit.sequence.task import SequenceTagger

    m = tmp_path / "t.model"
    assert sk("train", "--task", "chunk", "--train", CHUNK, "--algo", algo, "--epochs", "1", *opts, "-m", m).code == 0
    r = sk("dump", "-m", m, "--top", "5")
    assert r.code == 0 and r.out.startswith(f"task chunk, algo {algo}")
    tg = SequenceTagger.load(str(m))
    by_name = {tg.features.feature_name(f): f for f in range(tg.features.n_features)}
    feats = [FEATURE_LINE.match(ln) for ln in r.out.split("strongest features")[1].splitlines()[1:]]
    assert len(feats) == 5
    for mt in feats:
        fid = by_name[mt.group(1)]
        for part in mt.group(2).split(", "):
            label, w = part.rsplit(" ", 1)
            assert float(w) == pytest.approx(tg.weights.W[fid, tg.label_index[label]], abs=1e-3)
    if algo == "lookahead":
        assert "strongest label trigrams" in r.out
    if algo == "olarank-greedy":
        assert "strongest history weights" in r.out


def _parser_lines(out: str) -> dict[str, list[tuple[str, float]]]:
    rows: dict[str, list[tuple[str, float]]] = {}
    act = None
    for ln in out.split("strongest features per action")[1].splitlines()[1:]:
        if ln.startswith("    "):
            name, w = ln.strip().rsplit(" ", 1)
            rows[act].append((name, float(w)))
        elif ln.startswith("  "):
            act = ln.strip().rstrip(":")
            rows[act] = []
    return rows


@pytest.mark.parametrize("algo", ["lookahead", "greedy", "beam"])
def test_dump_parsers_name_real_features(sk, tmp_path, algo):
    """The rows shown are the model's weights under the names that hash to them, and the names
    are those of features the parser's own feature extractor computes (checked on the first
    state of a sentence: the queue's first words and tags, the empty stack, the bias)."""
    from structkit.parse.dump import parser_features
    from structkit.io.conllx import read_conllx
    from structkit.parse.parser import DependencyParser, pos_column

    m = tmp_path / "p.model"
    assert sk("train", "--task", "parse", "--algo", algo, "--epochs", "1", "--train", UD,
              *(["--depth", "1"] if algo == "lookahead" else []), "-m", m).code == 0
    r = sk("dump", "-m", m, "--top", "3")
    assert r.code == 0 and r.out.startswith(f"task parse, algo {algo}")
    p = DependencyParser.load(str(m))
    names, slots, Wf, actions = parser_features(p)
    slot_of = {}
    for i, nm in enumerate(names):
        slot_of.setdefault(nm, i)
    shown = _parser_lines(r.out)
    assert shown and set(shown) <= set(actions) and sum(len(v) for v in shown.values()) >= 3
    for act, rows in shown.items():
        a = actions.index(act)
        assert len(rows) <= 3 and [w for _, w in rows] == sorted((w for _, w in rows), reverse=True)
        for name, w in rows:
            for one in name.split(" | "):
                if one.startswith("+"):
                    continue
                assert Wf[slot_of[one], a] == pytest.approx(w, abs=1e-3)
    sent = next(iter(read_conllx(UD)))
    tags = pos_column(sent, p.config.pos)
    if algo == "beam":
        from structkit.parse.beam import MAX_FEATS, N_ROWS, Sentence, extract, reset

        v = p.vocabs
        words = np.array(v["words"].ids(sent.forms), dtype=np.int64)
        tg = np.array(v["tags"].ids(tags), dtype=np.int64)
        lem = np.array(v["lemmas"].ids([x.lower() for x in sent.lemmas]), dtype=np.int64)
        mor = np.array(v["feats"].ids(sent.feats), dtype=np.int64)
        n = len(words)
        S = np.zeros((N_ROWS, n + 2), dtype=np.int64)
        reset(S, n)
        out = np.zeros(MAX_FEATS, dtype=np.int64)
        extract(S, 0, 1, Sentence(words, tg, lem, mor, 0, n), p.groups, out)
        # extract's first features: bias, ..., s0w (index 2), n0w (8), n0p (9), n1w (11), n1p (12)
        expect = {0: "bias", 2: "s0w=<none>", 8: f"n0w={v['words'].items[words[0]]}",
                  9: f"n0p={v['tags'].items[tg[0]]}", 11: f"n1w={v['words'].items[words[1]]}",
                  12: f"n1p={v['tags'].items[tg[1]]}"}
        for k, name in expect.items():
            assert slots[slot_of[name]] == out[k] & p.mask
    else:
        from structkit.parse.arcstandard import N_TEMPLATES, Sentence, State, features

        words = np.array(p.words.ids(sent.forms), dtype=np.int64)
        tg = np.array(p.tags.ids(tags), dtype=np.int64)
        n = len(words)
        st = State(*(np.zeros(n + 2, dtype=np.int64) for _ in range(4)))
        out = np.zeros(N_TEMPLATES, dtype=np.int64)
        features(st, 0, 1, Sentence(words, tg, 0, n), p.mask, out)
        expect = {0: "s0w=<none>", 1: "s0t=<none>", 6: f"q0w={p.words.items[words[0]]}",
                  7: f"q0t={p.tags.items[tg[0]]}", 30: "dist=0", 32: "bias"}
        for k, name in expect.items():
            assert slots[slot_of[name]] == out[k]
    r = sk("dump", "-m", m, "--top", "2", "--feature", "q0" if algo != "beam" else "n0")
    assert r.code == 0 and all(("q0" if algo != "beam" else "n0") in nm
                               for rows in _parser_lines(r.out).values() for nm, _ in rows)


def test_dump_reranker(sk, tmp_path):
    from structkit.rerank.task import Reranker

    m = tmp_path / "r.model"
    assert sk("train", "--task", "rerank", "--train", os.path.join(SAMPLE, "nbest", "train.jsonl"),
              "-m", m).code == 0
    r = sk("dump", "-m", m, "--top", "4")
    assert r.code == 0 and r.out.startswith("task rerank")
    rr = Reranker.load(str(m))
    idx = rr.features.names
    rows = [ln.strip().rsplit(" ", 1) for ln in r.out.split("strongest features")[1].splitlines()[1:]]
    assert len(rows) == 4
    for name, w in rows:
        assert float(w) == pytest.approx(rr.weights[idx[name]], abs=1e-3)
