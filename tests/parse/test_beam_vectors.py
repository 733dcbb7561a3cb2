"""The beam parser's word-cluster templates (``--vectors``, issue 44): the kernel's features of
hand-built states against atoms computed here by hand, hashed by the plain-Python hash of
test_beam_features.py; the clusters array's rows; a parser trained with vectors keeps its
table in the model file and parses the same without the .vec; without vectors nothing of it is
in the file; the options' checks."""
from __future__ import annotations

import numpy as np
import pytest

from structkit.errors import UserError
from structkit.parse import beam as bm

from test_beam_features import BASE, L, corpus, kernel_state, py_h

TEMPLATES = [(t, names) for t, _, names in bm.CLUSTER_TEMPLATES]


def test_cluster_row_by_hand():
    assert bm.cluster_row((0, 5, 255)) == (1, 6, 256)
    assert bm.cluster_row((3,)) == (4, 0, 0)
    assert bm.cluster_row(None) == (0, 0, 0)
    assert bm.cluster_row((1, 2, 3, 4)) == (2, 3, 5)      # four levels: the first two and the finest
    assert bm.cluster_row((1, 2)) == (2, 3, 0)


def clusters_column(n):
    """Token i (1..n): clusters (i % 3, i % 7, i); the tokens of the sentences around it hold
    clusters that must never be read."""
    own = [bm.cluster_row((i % 3, i % 7, i)) for i in range(1, n + 1)]
    return np.array([bm.cluster_row((9, 9, 90 + k)) for k in range(3)] + own
                    + [bm.cluster_row((9, 9, 99))] * 2, dtype=np.int64)


def hand_atoms(n, stack, b):
    def st(k):
        return stack[-1 - k] if len(stack) > k else 0

    def q(k):
        return b + k if b + k <= n else 0

    a = {}
    for name, t in {"s0": st(0), "s1": st(1), "n0": q(0), "n1": q(1)}.items():
        for j, c in enumerate((t % 3, t % 7, t), 1):
            a[f"{name}c{j}"] = c + 1 if t else 0
        a[name + "p"] = 200 + t if t else 0
    s0, s1 = st(0), st(1)
    d = s0 - s1
    a["d01"] = (d if d < 5 else 5 if d < 10 else 6) if s0 and s1 else 0
    return a


def kernel_features(S, sp, b, n, groups, with_clusters=True):
    words, tags, lemmas, morph = corpus(n)
    clusters = clusters_column(n) if with_clusters else bm.NO_CLUSTERS
    out = np.zeros(bm.MAX_FEATS, dtype=np.int64)
    k = bm.extract(S, sp, b, bm.Sentence(words, tags, lemmas, morph, BASE, n, clusters),
                   bm.group_mask(groups), out)
    return [int(f) for f in out[:k]]


STATES = [
    (14, "S S S S L1 L2 S R3 S R4 S S S L5 L1 S R2 S R3", [1, 4, 9], 12),
    (14, "", [], 1),
    (14, "S", [1], 2),
    (3, "S S S R2", [1, 2], 4),             # the queue empty: n0, n1 none
    (12, "S " * 11 + "L1", [1, 2, 3, 4, 5, 6, 7, 8, 9, 11], 12),   # s0 - s1 = 2; n1 none
]


@pytest.mark.parametrize("n, actions, stack, b", STATES)
def test_cluster_features_by_hand(n, actions, stack, b):
    S, sp, kb = kernel_state(n, actions)
    assert kb == b and [int(x) for x in S[bm.ST, :sp]] == stack
    a = hand_atoms(n, stack, b)
    want = [py_h(t, *[a[x] for x in names]) for t, names in TEMPLATES]
    assert kernel_features(S, sp, kb, n, ["clusters"]) == want
    base = kernel_features(S, sp, kb, n, ["base"])
    assert kernel_features(S, sp, kb, n, ["base", "clusters"]) == base + want   # after the others
    # the group off, or no clusters column: not one cluster feature
    assert kernel_features(S, sp, kb, n, ["base"], True) == kernel_features(S, sp, kb, n, ["base"], False)
    assert kernel_features(S, sp, kb, n, ["base", "clusters"], False) == base
    assert len(bm.TEMPLATES) + len(bm.CLUSTER_TEMPLATES) <= bm.MAX_FEATS


def _treebank(path, n=40):
    rng = np.random.default_rng(0)
    nouns, verbs = ["chat", "chien", "loup", "rat"], ["dort", "mange", "court"]
    lines = []
    for k in range(n):
        noun, verb = nouns[int(rng.integers(4))], verbs[int(rng.integers(3))]
        lines += [f"# text = le {noun} {verb} .", "1\tle\tle\tDET\tD\t_\t2\tdet\t_\t_",
                  f"2\t{noun}\t{noun}\tNOUN\tN\t_\t3\tnsubj\t_\t_", f"3\t{verb}\t{verb}\tVERB\tV\t_\t0\troot\t_\t_",
                  "4\t.\t.\tPUNCT\tF\t_\t3\tpunct\t_\t_", ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _vec(path):
    rows = ["le 1 0 0", "chat 0 1 0.1", "chien 0 1 0", "loup 0.1 1 0", "rat 0 1 0.2",
            "dort 0 0 1", "mange 0.1 0 1", "court 0 0.1 1", ". 1 1 1"]
    path.write_text(f"{len(rows)} 3\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


def test_a_parser_with_vectors_round_trips(tmp_path):
    from structkit.model import load_model
    from structkit.parse.parser import DependencyParser, ParserConfig, read_treebank, train_parser

    train, vec = _treebank(tmp_path / "t.conllu"), _vec(tmp_path / "v.vec")
    config = ParserConfig(epochs=2, vectors=vec, vectors_limit=8)
    config.validate()
    assert config.templates[-1] == "clusters"
    parser = train_parser(config, train)
    assert parser.clusters is not None and len(parser.clusters) == 8 and parser.info["vectors"]["limit"] == 8
    sents = read_treebank(train)[:5]
    H, D = parser.parse_sentences(sents)
    path = str(tmp_path / "p.model")
    parser.save(path)
    (tmp_path / "v.vec").unlink()          # the model file alone
    back = DependencyParser.load(path)
    assert back.parse_sentences(sents) == (H, D)
    assert back.clusters.words == parser.clusters.words
    header, arrays = load_model(path, ("parse",))
    assert header["vectors"]["file"] == vec and "vectors_clusters" in arrays


def test_a_parser_without_vectors_has_none_of_it(tmp_path):
    from structkit.model import load_model
    from structkit.parse.parser import ParserConfig, train_parser

    config = ParserConfig(epochs=1)
    config.validate()
    assert "clusters" not in config.templates
    parser = train_parser(config, _treebank(tmp_path / "t.conllu", 10))
    path = str(tmp_path / "p.model")
    parser.save(path)
    header, arrays = load_model(path, ("parse",))
    assert "vectors" not in header and not any(k.startswith("vectors") for k in arrays)
    assert "vectors" not in header["config"] and "vectors_limit" not in header["config"]


def test_options_of_the_parser():
    from structkit.parse.parser import ParserConfig

    with pytest.raises(UserError, match="^the template group clusters reads the word clusters of --vectors"):
        ParserConfig(templates="base,clusters").validate()
    with pytest.raises(UserError, match="^--vectors applies to --algo beam among the parsers, not lookahead"):
        ParserConfig(algo="lookahead", vectors="v.vec").validate()
    with pytest.raises(UserError, match="^--vectors-limit applies with --vectors FILE"):
        ParserConfig(vectors_limit=10).validate()
