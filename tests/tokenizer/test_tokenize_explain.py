"""The learnt tokenizer's margins and explanations: the max-marginal kernel against a brute force
over every label sequence (random emissions, transitions and constraints), the runner-up
sequence rescored by hand, the feature names against what the features saw, `tokenize --scores`
(TokMargin/SentMargin in MISC; the output otherwise unchanged) and `explain -m tok.model` on raw
text (its margin the scores' margin for the same boundary), and the one-line errors."""
from __future__ import annotations

import itertools
import json
import math
import re

import numpy as np
import pytest

from clitools import assert_one_line_error
from test_tokenize_task import treebank

from structkit.tokenizer.model import NEG, char_margins, tag_emissions

L = 4


def random_problem(rng: np.random.Generator):
    n = int(rng.integers(1, 7))
    E = rng.normal(size=(n, L))
    T = rng.normal(size=(L + 1, L + 1))
    allowed = rng.random((n, L)) < 0.6
    for i in range(n):
        if not allowed[i].any():
            allowed[i, rng.integers(L)] = True
    E[~allowed] = NEG
    return E, T, allowed


def score(seq, E, T) -> float:
    return (T[L, seq[0]] + T[seq[-1], L] + sum(E[i, y] for i, y in enumerate(seq))
            + sum(T[a, b] for a, b in zip(seq, seq[1:])))


def brute_max_marginals(E, T, allowed):
    n = E.shape[0]
    M = np.full((n, L), -np.inf)
    for seq in itertools.product(range(L), repeat=n):
        if all(allowed[i, y] for i, y in enumerate(seq)):
            s = score(seq, E, T)
            for i, y in enumerate(seq):
                M[i, y] = max(M[i, y], s)
    return M


@pytest.mark.parametrize("seed", range(25))
def test_char_margins_against_a_brute_force(seed):
    E, T, allowed = random_problem(np.random.default_rng(seed))
    n = E.shape[0]
    labels = tag_emissions(E, T)
    M = np.empty((n, L))
    out = np.empty(n)
    char_margins(E, T, labels, M, out)
    ref = brute_max_marginals(E, T, allowed)
    best = ref.max(axis=1).max()
    assert np.allclose(M[allowed], ref[allowed])
    assert score(labels.tolist(), E, T) == pytest.approx(best)   # the Viterbi labels are the best
    for i in range(n):
        y = int(labels[i])
        assert allowed[i, y]
        others = [ref[i, z] for z in range(L) if z != y and allowed[i, z]]
        if others:
            assert out[i] == pytest.approx(ref[i, y] - max(others))
            assert out[i] >= -1e-9      # the chosen label's margin is never negative
        else:
            assert out[i] == math.inf   # nothing else allowed there


@pytest.mark.parametrize("seed", range(10))
def test_the_runner_up_sequence_rescored_by_hand(seed):
    """For each character, the best sequence with the runner-up label there (Viterbi with only
    that label allowed at that character), scored from E and T by hand: the chosen label's
    best score minus it is the margin."""
    E, T, allowed = random_problem(np.random.default_rng(100 + seed))
    n = E.shape[0]
    labels = tag_emissions(E, T)
    M = np.empty((n, L))
    out = np.empty(n)
    char_margins(E, T, labels, M, out)
    top = score(labels.tolist(), E, T)
    for i in range(n):
        y = int(labels[i])
        others = [z for z in range(L) if z != y and allowed[i, z]]
        if not others:
            continue
        r = max(others, key=lambda z: M[i, z])
        forced = E.copy()
        forced[i] = NEG
        forced[i, r] = E[i, r]
        seq = tag_emissions(forced, T).tolist()
        assert seq[i] == r and all(allowed[k, z] for k, z in enumerate(seq))
        assert score(seq, E, T) == pytest.approx(M[i, r])
        assert top - score(seq, E, T) == pytest.approx(out[i])


def test_feature_names_say_what_each_feature_saw():
    from structkit.tokenizer import features as F
    from structkit.tokenizer.explain import feature_names

    text = "Mrd. Hansen kom"
    known = F.known_table(["mrd.", "hansen"])
    prep = F.prepare(F.code_points(text), F.tables(), known, F.NO_RULES)
    names = feature_names(text, 3, prep)          # the full stop after "Mrd"
    assert len(names) == F.BASE_FEATURES and len(set(names)) == F.BASE_FEATURES
    assert names[0] == "bias"
    assert names[4] == "char[0]=." and names[5] == "char[+1]=\u2423" and names[1] == "char[-3]=m"
    assert names[12] == "chars[-2..0]=rd."
    assert names[19] == "class[0]=period" and names[20] == "class[+1]=space"
    assert names[27] == "cased char[0]=." and names[29] == "class[0]=period class[next]=upper class[+1]=space"
    assert names[32] == "known ending/starting/across=4/0/0"
    assert names[45] == "word before char[0]='mrd' char[0]=."
    assert names[43] == "word before='' word after='hansen' char[+1]=\u2423"
    first = feature_names(text, 0, prep)          # the padding before the text
    assert first[1] == "char[-3]=<s>" and first[27] == "cased char[0]=M" and first[4] == "char[0]=m"
    names = feature_names(text, 3, prep, F.SHORT | F.URL)
    assert len(names) == F.n_features(F.SHORT | F.URL) == len(set(names))
    assert names[F.BASE_FEATURES] == "letters before char[0]=3 class before them=pad char[0]=."
    assert names[-2] == "address=no classes[0..+1]=period,space"
    ruled = F.prepare(F.code_points(text), F.tables(), known, F.rule_labels(text, F.RULES))
    names = feature_names(text, 3, ruled, F.ALL_GROUPS)   # the English rules end a sentence at "Mrd."
    assert len(names) == F.n_features(F.ALL_GROUPS) == len(set(names))
    assert names[-3:] == ["rules=S classes[0..+1]=period,space", "rules=S chars[0..+1]=.\u2423",
                          "rules=S rules[-1]=T class[next]=upper"]
    assert feature_names("see www.x.org", 6, F.prepare(F.code_points("see www.x.org"), F.tables(), known, F.NO_RULES),
                         F.URL)[-1] == "address=web chars[0..+1]=w."


# ---- a trained tokenizer -----------------------------------------------------------------------

TEXT = "Il gatto della casa mangia, poco. Oggi nel mare.\n\nRoma vede il sole.\n"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from structkit.tasks import make_config
    from structkit.tokenizer.task import train_tokenizer

    d = tmp_path_factory.mktemp("tokx")
    train = treebank(d / "train.conllu", 300, 11)
    m = train_tokenizer(make_config({"task": "tokenize", "epochs": 5}), str(train))
    path = d / "tok.model"
    m.save(str(path))
    text = d / "text.txt"
    text.write_text(TEXT, encoding="utf-8")
    return m, path, text


def one_window(tok, text):
    """The decisions, token spans and deciding characters of a paragraph (one window)."""
    from structkit.tokenizer.explain import windows

    (pos, d, starts, ends, _, decided), = windows(tok, text)
    assert pos == 0
    return d, starts, ends, decided


def test_margins_are_positive_where_the_boundaries_are_clear(model):
    from structkit.tokenizer.explain import boundary_margins

    m, _, _ = model
    d, starts, ends, decided = one_window(m.tokenizer, TEXT.split("\n\n")[0])
    assert (d.labels == m.tokenizer.labels(d.text)).all()    # the labels tokenize gives
    assert (d.margins >= 0).all()
    forms = [d.text[a:b] for a, b in zip(starts, ends)]
    assert forms == ["Il", "gatto", "della", "casa", "mangia", ",", "poco", ".", "Oggi", "nel", "mare", "."]
    tok, sent = boundary_margins(d, decided)
    assert (tok > 0).all() and tok[-1] == math.inf          # the last one must end a sentence
    assert [i for i, s in enumerate(sent) if not np.isnan(s)] == [7, 11]
    assert sent[7] > 0 and sent[11] == math.inf
    # each token is decided at its last character, with a boundary label
    assert all(d.labels[c] in (1, 2) for c in decided) and (decided == ends - 1).all()


def test_windows_give_the_tokens_tokenize_gives(model, monkeypatch):
    """A paragraph longer than a window (made small here) is scored and explained window by
    window, as the tokenizer labels it: the same tokens, every one with a margin."""
    from structkit.tokenizer import model as tm
    from structkit.tokenizer.explain import explanations, scored_sentences, windows

    m, _, _ = model
    monkeypatch.setattr(tm, "WINDOW", 64)
    monkeypatch.setattr(tm, "OVERLAP", 16)
    text = " ".join([TEXT.split("\n\n")[0]] * 6)
    assert len(list(windows(m.tokenizer, text))) >= 5
    plain = [[t.form for t in s.tokens] for s in m.sentences(text)]
    scored = list(scored_sentences(m.tokenizer, [text + "\n"], "auto"))
    assert [[t.form for t in s.tokens] for s, _, _ in scored] == plain and len(plain) == 12
    assert all(x > 0 for _, tms, _ in scored for x in tms)
    assert all(sm > 0 for _, _, sm in scored)
    expl = list(explanations(m, text))
    assert [e.word for e in expl] == [f for s in plain for f in s]
    sent_ends = [e.margin for e in expl if e.label == "sentence end"]
    assert sent_ends == pytest.approx([sm for _, _, sm in scored])


def test_a_token_ended_by_the_space_after_it_is_decided_there():
    from structkit.tokenizer.explain import deciding_chars

    # "ab  c": 'b' is N, the first space N (inside), the second W: the token ends at b
    labels = np.array([0, 0, 0, 3, 2], dtype=np.int32)
    assert deciding_chars(labels, np.array([2, 5])).tolist() == [3, 4]


def _misc(conllu: str) -> list[str]:
    return [line.split("\t")[9] for line in conllu.splitlines() if line and line[0] != "#"]


def test_scores_in_misc(sk, model, tmp_path):
    from structkit.tokenizer.explain import boundary_margins

    m, path, text = model
    plain, scored = tmp_path / "plain.conllu", tmp_path / "scored.conllu"
    assert sk("tokenize", "-m", path, text, "-o", plain).code == 0
    r = sk("tokenize", "-m", path, text, "-o", scored, "--scores")
    assert r.code == 0, r.err
    got, base = scored.read_text(encoding="utf-8"), plain.read_text(encoding="utf-8")
    # without the keys, the output is the plain one, byte for byte
    stripped = re.sub(r"\|?(TokMargin|SentMargin)=[^|\t\n]*", "", got)
    assert stripped.replace("\t\n", "\t_\n") == base
    # one TokMargin per surface token (a multiword token's on its range line), the values the API gives
    rows = [line.split("\t") for line in got.splitlines() if line and line[0] != "#"]
    inside = set()           # the words of a multiword token: their MISC stays "_"
    for k, row in enumerate(rows):
        if "-" in row[0]:
            a, b = map(int, row[0].split("-"))
            inside.update(range(k + 1, k + 2 + b - a))
            assert row[1] in ("della", "nel") and "TokMargin=" in row[9]
    assert len(inside) == 4 and all(rows[k][9] == "_" for k in inside)
    tok_values, sent_values = [], []
    for block in TEXT.strip("\n").split("\n\n"):
        d, _, _, decided = one_window(m.tokenizer, block + "\n")
        tm, sm = boundary_margins(d, decided)
        tok_values += ["inf" if t == math.inf else f"{t:.3f}" for t in tm]
        sent_values += ["inf" if s == math.inf else f"{s:.3f}" for s in sm if not np.isnan(s)]
    misc = [r[9] for r in rows if "TokMargin=" in r[9]]
    assert [re.search(r"TokMargin=([^|]+)", x).group(1) for x in misc] == tok_values
    assert [re.search(r"SentMargin=([^|]+)", x).group(1) for x in misc if "SentMargin" in x] == sent_values
    assert len(sent_values) == got.count("# sent_id") == 3
    assert "SpaceAfter=No|TokMargin=" in got     # the existing key kept, first


def test_explain_names_the_features_and_the_scores_margin(sk, model, tmp_path):
    from structkit.tokenizer.explain import boundary_margins

    m, path, text = model
    d, starts, ends, decided = one_window(m.tokenizer, TEXT.split("\n\n")[0] + "\n")
    tok, sent = boundary_margins(d, decided)
    r = sk("explain", "-m", path, text, "--json", "--top", "1000")
    assert r.code == 0, r.err
    expl = [json.loads(line) for line in r.out.splitlines()]
    assert [e["word"] for e in expl] == [d.text[a:b] for a, b in zip(starts, ends)]
    period = expl[7]                                   # "poco." ends the first sentence
    assert period["label"] == "sentence end" and period["margin"] == pytest.approx(sent[7])
    pushes = dict(period["features"])
    assert "char[0]=." in pushes and any(k.startswith("transition ") for k in pushes)
    assert sum(pushes.values()) == pytest.approx(period["margin"])    # they add up to the margin
    for k, e in enumerate(expl[:-1]):     # a token end weighed against no boundary: TokMargin
        if e["label"] != "sentence end":
            assert e["runner_up"] == "no boundary" and e["margin"] == pytest.approx(tok[k])
    assert expl[-1]["runner_up"] is None and expl[-1]["margin"] is None   # forced: the only label
    # the text report: the label line, then the features each way
    r = sk("explain", "-m", path, text, "--token", "8", "--top", "3")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == f"  8 .: sentence end, runner-up {period['runner_up']}, margin {period['margin']:.3f}"
    assert lines[1].startswith("      for sentence end: ") and len(lines) == 3
    # the second paragraph, from standard input as well
    r = sk("explain", "-m", path, "-", "--sentence", "2", "--token", "1", stdin=TEXT.encode())
    assert r.code == 0 and r.out.startswith("  1 Roma: token end"), r.out


def test_explain_a_character_that_is_no_boundary(model):
    from structkit.tokenizer.explain import explain_chars

    m, _, _ = model
    e, = explain_chars(m, "Il gatto.", [4])            # the 'a' inside "gatto"
    assert e.label == "no boundary" and e.margin > 0 and e.runner_up in ("token end", "sentence end")
    assert sum(p.weight for p in e.pushes) == pytest.approx(e.margin)


def test_explain_errors_are_one_line(sk, model, tmp_path):
    from structkit.model import save_model

    _, path, text = model
    other = tmp_path / "parse.model"
    save_model(str(other), {"task": "parse", "config": {}}, {"W": np.zeros(2)})
    assert_one_line_error(sk("explain", "-m", other, text), str(other), "tokenize or morph model")
    assert_one_line_error(sk("explain", "-m", path, text, "--sentence", "3"), str(text),
                          "there is no paragraph 3 (the input has 2)")
    assert_one_line_error(sk("explain", "-m", path, "--text", "Il gatto.", "--token", "9"),
                          "--text", "--token 9: the paragraph has 3 tokens")
    assert_one_line_error(sk("explain", "-m", path, text, "--depth", "2"), "--depth does not apply")
    assert_one_line_error(sk("explain", "-m", path, tmp_path / "missing.txt"), "missing.txt")
