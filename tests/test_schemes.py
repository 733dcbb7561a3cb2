"""Label schemes (IOB1, IOB2, IOBES, BILOU): detection, conversion, phrase decoding and
scoring against plain-Python references, and the CLI (eval --scheme, an IOBES train/tag/eval
round trip, eval --compare side by side)."""
from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from clitools import assert_one_line_error

from structkit.eval.chunks import conlleval
from structkit.eval.schemes import PhraseCounter
from structkit.spans import SCHEMES, bad_label, convert, detect_scheme, encode, phrases

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NER_TRAIN = FIXTURES / "ner_train.txt"
TYPES = ["PER", "LOC", "ORG"]


# ---------------------------------------------------------------- plain-Python references

def random_spans(rng: random.Random, n: int) -> list[tuple[str, int, int]]:
    """Non-overlapping phrases over n tokens, adjacent same-type phrases included."""
    spans, i = [], 0
    while i < n:
        if rng.random() < 0.4:
            i += 1
            continue
        length = rng.randint(1, min(4, n - i))
        spans.append((rng.choice(TYPES), i, i + length))
        i += length
    return spans


def ref_encode(spans, n, scheme):
    """Each scheme's labels written out by its textbook definition, token by token."""
    tags = ["O"] * n
    for idx, (t, a, b) in enumerate(spans):
        follows_same = idx > 0 and spans[idx - 1][2] == a and spans[idx - 1][0] == t
        for k in range(a, b):
            first, last = k == a, k == b - 1
            if scheme == "iob1":
                p = "B" if first and follows_same else "I"
            elif scheme == "iob2":
                p = "B" if first else "I"
            elif scheme == "iobes":
                p = "S" if first and last else "B" if first else "E" if last else "I"
            else:
                p = "U" if first and last else "B" if first else "L" if last else "I"
            tags[k] = f"{p}-{t}"
    return tags


def brute_phrases(tags):
    """IOBES/BILOU phrases by the definition, span by span: [i, j) of type T is a phrase when
    a phrase starts at i, every token in it has type T, none starts inside it and it ends at j-1."""
    def pre(k):
        return tags[k].split("-", 1)[0] if tags[k] != "O" else "O"

    def typ(k):
        return tags[k].split("-", 1)[1] if tags[k] != "O" else ""

    def starts(k):
        p = pre(k)
        if p == "O":
            return False
        if p in "BSU":
            return True
        return k == 0 or pre(k - 1) in ("O", "E", "L", "S", "U") or typ(k - 1) != typ(k)

    def ends(k):
        return pre(k) in "ELSU" or k + 1 == len(tags) or pre(k + 1) == "O" or starts(k + 1)

    n = len(tags)
    return sorted((typ(i), i, j) for i in range(n) for j in range(i + 1, n + 1)
                  if starts(i) and all(pre(k) != "O" and typ(k) == typ(i) for k in range(i, j))
                  and not any(starts(k) for k in range(i + 1, j)) and ends(j - 1))


def random_tags(rng, n, letters):
    return ["O" if rng.random() < 0.3 else f"{rng.choice(letters)}-{rng.choice(TYPES[:2])}"
            for _ in range(n)]


# ---------------------------------------------------------------- detection

@pytest.mark.parametrize("sentences,scheme", [
    ([["B-PER", "I-PER", "O", "B-LOC"]], "iob2"),
    ([["I-PER", "I-PER", "O", "I-LOC", "B-LOC"]], "iob1"),
    ([["O", "I-PER"], ["B-LOC"]], "iob1"),                 # I- after O starts a phrase
    ([["B-PER", "I-LOC"]], "iob1"),                        # I- after another type starts one
    ([["B-PER", "E-PER", "O", "S-LOC"]], "iobes"),
    ([["S-LOC"]], "iobes"),
    ([["B-PER", "I-PER", "E-PER"]], "iobes"),
    ([["U-LOC", "B-PER", "L-PER"]], "bilou"),
    ([["I-PER", "E-PER", "O"]], "iob1"),                   # IOE (no B-, no S-): conlleval's
    ([["O", "O"]], "iob2"),
])
def test_detect_scheme(sentences, scheme):
    assert detect_scheme(sentences) == scheme


def test_detect_scheme_of_encoded_random_sequences():
    rng = random.Random(3)
    for scheme in SCHEMES:
        sents = [ref_encode(random_spans(rng, 12), 12, scheme) for _ in range(50)]
        assert detect_scheme(sents) == scheme


def test_bad_label():
    assert bad_label(["O", "S-PER", "U-LOC", "L-X", "E-X"], None) is None
    assert bad_label(["O", "NP"], None) == 1
    assert bad_label(["B-PER", "U-PER"], "iobes") == 1
    assert bad_label(["B-PER", "S-PER"], "bilou") == 1
    assert bad_label(["B-PER", "E-PER", "S-PER"], "iobes") is None


# ---------------------------------------------------------------- conversion and phrases

def test_encode_matches_reference_and_phrases_invert_it():
    rng = random.Random(0)
    for _ in range(500):
        n = rng.randint(0, 15)
        spans = random_spans(rng, n)
        for scheme in SCHEMES:
            tags = ref_encode(spans, n, scheme)
            assert encode(spans, n, scheme) == tags
            assert phrases(tags, scheme) == spans, (scheme, tags)


def test_conversion_round_trips_between_all_schemes():
    rng = random.Random(1)
    for _ in range(300):
        n = rng.randint(0, 15)
        spans = random_spans(rng, n)
        for a, b in itertools.product(SCHEMES, SCHEMES):
            src = ref_encode(spans, n, a)
            there = convert(src, a, b)
            assert there == ref_encode(spans, n, b)
            assert convert(there, b, a) == src


@pytest.mark.parametrize("letters", ["BIES", "BILU", "BIESLU"])
def test_phrases_equal_brute_force_on_random_tag_sequences(letters):
    rng = random.Random(len(letters))
    for _ in range(2000):
        tags = random_tags(rng, rng.randint(0, 9), letters)
        assert sorted(phrases(tags, "iobes")) == brute_phrases(tags), tags
        assert phrases(tags, "bilou") == phrases(tags, "iobes")


def test_iob_phrases_are_conllevals_and_match_brute_force_when_valid():
    # for IOB1/IOB2 labels the IOBES rules and conlleval's agree
    rng = random.Random(5)
    for _ in range(2000):
        tags = random_tags(rng, rng.randint(0, 9), "BI")
        assert sorted(phrases(tags, "iob2")) == brute_phrases(tags), tags


def test_phrase_counter_equals_span_set_scoring_and_conlleval_after_conversion():
    rng = random.Random(7)
    gold, pred = [], []
    for _ in range(300):
        n = rng.randint(1, 12)
        gold.append(ref_encode(random_spans(rng, n), n, "iobes"))
        pred.append(ref_encode(random_spans(rng, n), n, "iobes") if rng.random() < 0.5
                    else list(gold[-1]))
    counter = PhraseCounter("iobes")
    for g, p in zip(gold, pred):
        counter.add_sentence(g, p)
    s = counter.score()
    gs = {(i,) + sp for i, g in enumerate(gold) for sp in brute_phrases(g)}
    ps = {(i,) + sp for i, p in enumerate(pred) for sp in brute_phrases(p)}
    assert (s.found_correct, s.found_guessed, s.correct_chunks) == (len(gs), len(ps), len(gs & ps))
    # the same phrases written in IOB2 score the same under conlleval
    ref = conlleval([convert(g, "iobes", "iob2") for g in gold],
                    [convert(p, "iobes", "iob2") for p in pred])
    assert (s.precision, s.recall, s.f1) == (ref.precision, ref.recall, ref.f1)
    assert {k: (t.found_correct, t.found_guessed, t.correct) for k, t in s.per_type.items()} == \
        {k: (t.found_correct, t.found_guessed, t.correct) for k, t in ref.per_type.items()}


# ---------------------------------------------------------------- CLI

def write_conll(path, words, *label_columns):
    lines = []
    for sent_i, ws in enumerate(words):
        for k, w in enumerate(ws):
            lines.append(" ".join([w] + [col[sent_i][k] for col in label_columns]))
        lines.append("")
    path.write_text("\n".join(lines) + "\n")


def random_corpus(seed, sentences=40):
    rng = random.Random(seed)
    words, gold, pred = [], [], []
    for _ in range(sentences):
        n = rng.randint(1, 10)
        words.append([f"w{rng.randint(0, 30)}" for _ in range(n)])
        gold.append(random_spans(rng, n))
        pred.append(random_spans(rng, n) if rng.random() < 0.6 else gold[-1])
    return words, gold, pred


@pytest.mark.parametrize("scheme", ["iobes", "bilou"])
def test_eval_iobes_file_equals_conlleval_on_iob2(sk, tmp_path, scheme):
    words, gold, pred = random_corpus(11)
    enc = lambda spans_list, s: [encode(sp, len(w), s) for sp, w in zip(spans_list, words)]
    f = tmp_path / f"sys.{scheme}"
    write_conll(f, words, enc(gold, scheme), enc(pred, scheme))
    ref = tmp_path / "sys.iob2"
    write_conll(ref, words, enc(gold, "iob2"), enc(pred, "iob2"))
    r = sk("eval", "--task", "ner", f, "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    want = json.loads(sk("eval", "--task", "ner", ref, "--json").out)
    assert got["scheme"] == scheme and want["scheme"] == "iob2"
    for k in ("precision", "recall", "f1", "phrases_gold", "phrases_predicted", "correct_phrases",
              "per_type"):
        assert got[k] == want[k], k
    text = sk("eval", "--task", "ner", f).out
    assert text.splitlines()[-1] == f"label scheme: {scheme} (detected)"
    assert sk("eval", "--task", "ner", "--scheme", scheme, f).out.splitlines()[-1] == \
        f"label scheme: {scheme} (given)"


def test_eval_iob_report_is_conllevals_plus_scheme_line(sk, tmp_path):
    words, gold, pred = random_corpus(12)
    f = tmp_path / "sys.iob2"
    write_conll(f, words, [encode(g, len(w), "iob2") for g, w in zip(gold, words)],
                [encode(p, len(w), "iob2") for p, w in zip(pred, words)])
    score = conlleval([encode(g, len(w), "iob2") for g, w in zip(gold, words)],
                      [encode(p, len(w), "iob2") for p, w in zip(pred, words)])
    assert sk("eval", "--task", "ner", f).out == score.format_report() + "label scheme: iob2 (detected)\n"


def test_scheme_option_errors(sk, tmp_path):
    words, gold, pred = random_corpus(13, 5)
    f = tmp_path / "sys.iobes"
    write_conll(f, words, [encode(g, len(w), "iobes") for g, w in zip(gold, words)],
                [encode(p, len(w), "iobes") for p, w in zip(pred, words)])
    assert_one_line_error(sk("eval", "--task", "ner", "--scheme", "bio", f),
                          "--scheme must be auto, iob1, iob2, iobes, bilou; got 'bio'", code=1)
    assert_one_line_error(sk("eval", "--task", "pos", "--scheme", "iobes", f), "--scheme applies", code=1)
    if any(len(g) for g in gold):
        assert_one_line_error(sk("eval", "--task", "ner", "--scheme", "bilou", f), "unknown label",
                              "(BILOU)", code=1)
    mixed = tmp_path / "mixed.txt"
    mixed.write_text("a S-PER S-PER\nb U-LOC U-LOC\n\n")
    assert_one_line_error(sk("eval", "--task", "ner", mixed), "mix IOBES", code=1)


def test_train_tag_eval_iobes_round_trip(sk, tmp_path):
    rows = [line.split() for line in NER_TRAIN.read_text().splitlines()]
    sents = [list(g) for k, g in itertools.groupby(rows, bool) if k]
    words = [[r[0] for r in s] for s in sents]
    iobes = [convert([r[-1] for r in s], "iob2", "iobes") for s in sents]
    train = tmp_path / "train.iobes"
    write_conll_rows = [[" ".join(r[:-1] + [lab]) for r, lab in zip(s, labs)]
                        for s, labs in zip(sents, iobes)]
    train.write_text("\n\n".join("\n".join(s) for s in write_conll_rows) + "\n\n")
    assert any(lab.startswith(("S-", "E-")) for labs in iobes for lab in labs)
    model = tmp_path / "m.model"
    r = sk("train", "--task", "ner", "--train", train, "--model", model, "--epochs", "3", "-v")
    assert r.code == 0, r.err
    assert "(IOBES scheme, detected)" in r.err
    pred = tmp_path / "pred.txt"
    assert sk("ner", "--model", model, train, "-o", pred).code == 0
    out = [line.split() for line in pred.read_text().splitlines() if line.strip()]
    predicted = [r[-1] for r in out]
    trained = {lab for labs in iobes for lab in labs}
    # predictions are written in the scheme the model learnt: IOBES labels only
    assert set(predicted) <= trained and bad_label(predicted, "iobes") is None
    assert [r[0] for r in out] == [w for ws in words for w in ws]
    r = sk("eval", "--task", "ner", pred, "--json")
    assert r.code == 0, r.err
    res = json.loads(r.out)
    assert res["scheme"] == "iobes" and res["f1"] > 50


@pytest.mark.parametrize("scheme,task", [("iob2", "ner"), ("iobes", "chunk")])
def test_eval_compare_side_by_side(sk, tmp_path, scheme, task):
    words, gold, pred_a = random_corpus(21)
    _, _, pred_b = random_corpus(22)
    pred_b = [p if all(b <= len(w) for _, _, b in p) else [] for p, w in zip(pred_b, words)]
    enc = lambda spans_list: [encode(sp, len(w), scheme) for sp, w in zip(spans_list, words)]
    gold_f, a, b = tmp_path / "gold", tmp_path / "a", tmp_path / "b"
    write_conll(gold_f, words, enc(gold))
    write_conll(a, words, enc(pred_a))
    write_conll(b, words, enc(pred_b))
    r = sk("eval", "--task", task, gold_f, a, "--compare", b, "--json")
    assert r.code == 0, r.err
    res = json.loads(r.out)
    alone = [json.loads(sk("eval", "--task", task, gold_f, p, "--json").out) for p in (a, b)]
    keys = ["accuracy", "precision", "recall", "f1"]
    assert res["first"] == {k: alone[0][k] for k in keys}
    assert res["second"] == {k: alone[1][k] for k in keys}
    assert res["difference"] == {k: alone[0][k] - alone[1][k] for k in keys}
    assert res["scheme"] == scheme and "exact_p" in res
    text = sk("eval", "--task", task, gold_f, a, "--compare", b).out.splitlines()
    assert text[0].split() == ["first", "second", "difference"]
    assert text[4].split() == ["f1", f"{alone[0]['f1']:.2f}", f"{alone[1]['f1']:.2f}",
                               f"{alone[0]['f1'] - alone[1]['f1']:+.2f}"]
    assert text[5].startswith("McNemar's test on ")


def test_eval_compare_pos_accuracy_side_by_side(sk, tmp_path):
    f1, f2 = tmp_path / "one", tmp_path / "two"
    f1.write_text("a D D\nb N V\nc V V\n\nd N N\n")
    f2.write_text("a D X\nb N N\nc V V\n\nd N N\n")
    res = json.loads(sk("eval", "--task", "pos", f1, "--compare", f2, "--json").out)
    assert res["first"] == {"accuracy": 75.0} and res["second"] == {"accuracy": 75.0}
    assert res["difference"] == {"accuracy": 0.0} and res["a_only"] == 1 and res["b_only"] == 1


def test_train_scheme_option(sk, tmp_path):
    rows = [line.split() for line in NER_TRAIN.read_text().splitlines()]
    sents = [list(g) for k, g in itertools.groupby(rows, bool) if k]
    train = tmp_path / "train.bilou"
    train.write_text("\n\n".join("\n".join(" ".join(r[:-1] + [lab]) for r, lab in
                                           zip(s, convert([r[-1] for r in s], "iob2", "bilou")))
                                 for s in sents) + "\n\n")
    model = tmp_path / "m.model"
    r = sk("train", "--task", "ner", "--train", train, "--model", model, "--epochs", "1", "-v",
           "--scheme", "bilou")
    assert r.code == 0, r.err
    assert "(BILOU scheme, given)" in r.err
    assert_one_line_error(sk("train", "--task", "ner", "--train", train, "--model", model,
                             "--scheme", "iobes"), "unknown label", "(IOBES)", code=1)
    assert_one_line_error(sk("train", "--task", "ner", "--train", train, "--model", model,
                             "--scheme", "bioes"), "--scheme must be auto, iob1, iob2, iobes, bilou",
                          code=1)
    assert_one_line_error(sk("train", "--task", "pos", "--train", train, "--model", model,
                             "--scheme", "iob2"), "--scheme applies to --task chunk or ner", code=1)
