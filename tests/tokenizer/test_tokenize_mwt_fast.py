"""The multiword-token splitter's fast scoring (``MultiwordSplitter.predict_rule``, per-rule
weight tables) against the plain one (``plain_predict_rule``, a feature string per candidate
looked up in ``weights``): the same rule for every token, real or random, ties included."""
from __future__ import annotations

import os
import random
import re
from collections import Counter

from structkit.tokenizer.mwt import NONE, MultiwordSplitter, _features, train_splitter

UD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                  "structkit", "data", "sample", "ud", "train.conllu")
# letters whose lower case is longer (Turkish dotted capital I) or depends on what follows (Greek
# capital sigma), apostrophes, and plain ones
LETTERS = "aeilnorstudİIıΣσςΑ'’-" + "ABLNS"


def _sample_data():
    """Token counts and multiword splits of the shipped UD sample."""
    tokens: Counter = Counter()
    mwt: dict = {}
    rows = [ln.rstrip("\n").split("\t") for ln in open(UD, encoding="utf-8")
            if ln.strip() and not ln.startswith("#")]
    skip = 0
    for k, r in enumerate(rows):
        if skip:
            skip -= 1
            continue
        m = re.fullmatch(r"(\d+)-(\d+)", r[0])
        if m:
            n = int(m.group(2)) - int(m.group(1)) + 1
            words = tuple(x[1] for x in rows[k + 1:k + 1 + n])
            mwt.setdefault(r[1], Counter())[words] += 1
            skip = n
        elif "." in r[0]:
            continue
        tokens[r[1]] += 1
    return tokens, mwt


def _random_token(rng: random.Random, ends: list[str]) -> str:
    stem = "".join(rng.choice(LETTERS) for _ in range(rng.randint(0, 6)))
    tail = rng.choice(ends) if ends and rng.random() < 0.8 else ""
    tok = stem + tail
    if rng.random() < 0.3:
        tok = tok.upper()
    elif rng.random() < 0.3:
        tok = tok[:1].upper() + tok[1:]
    return tok


def _reference(sp: MultiwordSplitter, token: str):
    """Brute force: every rule whose ending ends the token and leaves a stem, shortest ending
    first, scored from its feature strings; no split first, so it wins ties."""
    cands = [NONE] + [r for k in range(1, len(token)) for r in sp.rules.get(token[-k:], ())]

    def score(r):
        total = 0.0   # added one at a time, in order (sum() may compensate)
        for f in _features(token, r):
            total += sp.weights.get(f, 0.0)
        return total

    return max(cands, key=lambda r: (score(r), r == NONE))


def _same(sp: MultiwordSplitter, tokens) -> int:
    differ = [t for t in tokens if not sp.predict_rule(t) == sp.plain_predict_rule(t) == _reference(sp, t)]
    assert not differ, differ[:10]
    return sum(sp.plain_predict_rule(t) != NONE for t in tokens)


def test_fast_scoring_same_as_plain_on_the_sample_and_random_tokens():
    tokens, mwt = _sample_data()
    sp = train_splitter(dict(tokens), {f: dict(s) for f, s in mwt.items()})
    assert sp is not None and sp.rules and sp.weights
    rng = random.Random(7)
    ends = [x for x in sp.rules if x]
    forms = list(tokens) + [t.upper() for t in tokens] + [_random_token(rng, ends) for _ in range(5000)]
    split = _same(sp, forms)
    assert split > 0   # some tokens do get a rule: the comparison covers both answers
    # a model read back from its JSON gives the same answers
    back = MultiwordSplitter.from_json(sp.to_json())
    assert [back.predict_rule(t) for t in forms] == [sp.plain_predict_rule(t) for t in forms]


def test_fast_scoring_same_as_plain_with_random_weights_and_ties():
    rng = random.Random(11)
    for trial in range(20):
        rules: dict = {}
        for _ in range(rng.randint(1, 12)):
            x = "".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 3)))
            r = ("".join(rng.choice(LETTERS) for _ in range(rng.randint(0, 2))),
                 "".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 3))))
            if (x, r) not in rules.get(x, []):
                rules.setdefault(x, []).append((x, r))
        sp = MultiwordSplitter({}, rules)
        ends = list(rules)
        toks = [_random_token(rng, ends) for _ in range(400)]
        # weights on the features those tokens have, small integers so that ties are common
        feats = sorted({f for t in toks for r in sp.candidates(t) for f in _features(t, r)})
        sp.weights = {f: float(rng.randint(-2, 2)) for f in feats if rng.random() < 0.5}
        sp.weights = {f: v for f, v in sp.weights.items() if v}
        _same(sp, toks)
        # another weights dict: the tables are made again
        sp.weights = {f: rng.uniform(-1, 1) for f in feats}
        _same(sp, toks)


def test_words_unchanged_after_forget():
    tokens, mwt = _sample_data()
    sp = train_splitter(dict(tokens), {f: dict(s) for f, s in mwt.items()})
    rng = random.Random(3)
    toks = [_random_token(rng, [x for x in sp.rules if x]) for _ in range(500)]
    first = [sp.words(t) for t in toks]
    sp.forget()
    assert not sp._memo
    assert [sp.words(t) for t in toks] == first
