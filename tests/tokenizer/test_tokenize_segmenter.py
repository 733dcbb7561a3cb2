"""The multiword splitter's left-to-right segmenter (``structkit.tokenizer.mwt.Segmenter``) on a
made-up prefixing language: an article ``bla``, a preposition ``ne`` and a subject pronoun ``ka``
glued in front of nouns and verbs, every multiword token spelled by its words (as in Coptic).
The expected splits are written by hand."""
from __future__ import annotations

import json
import math

import pytest

from structkit.tokenizer.mwt import (SEGMENT_MIN_TYPES, MultiwordSplitter, Segmenter, spelling,
                                     train_segmenter, train_splitter)

# nouns seen alone, and nouns seen only after the article (unknown to the lexicon once their one
# token is set aside: an unseen token's noun often is)
NOUNS = ["house", "tree", "stone", "hill", "boat", "river"]
ONLY_AFTER_BLA = ["moon", "seed", "root", "leaf", "wind", "snow", "frog", "gold"]
VERBS = ["walk", "sing", "eat", "see", "run"]
OTHERS = ["and", "then", "black", "blame", "never", "neat", "kale", "karma"]   # whole: no prefix


def made_up(spelled_types: int | None = None):
    """``(tokens, mwt)`` as ``train_splitter`` takes them: token counts and multiword splits."""
    mwt: dict[str, dict[tuple[str, ...], int]] = {}
    for n in NOUNS[:4] + ONLY_AFTER_BLA:
        mwt["bla" + n] = {("bla", n): 2}
    for n in NOUNS[:3]:
        mwt["nebla" + n] = {("ne", "bla", n): 1}
    for n in ("hill", "boat"):
        mwt["ne" + n] = {("ne", n): 1}
    for v in VERBS[:3]:
        mwt["ka" + v] = {("ka", v): 3}
    mwt["Blahouse"] = {("Bla", "house"): 1}
    if spelled_types is not None:   # keep that many spelled types
        mwt = dict(sorted(mwt.items())[:spelled_types])
    tokens = {form: sum(s.values()) for form, s in mwt.items()}
    for w in NOUNS + VERBS + OTHERS:
        tokens[w] = tokens.get(w, 0) + 2
    return tokens, mwt


@pytest.fixture(scope="module")
def splitter():
    tokens, mwt = made_up()
    sp = train_splitter(tokens, mwt)
    assert sp.has_segmenter()
    sp.keep_segmenter(True)
    return sp


def test_spelling():
    assert spelling("ⲙⲡⲙⲁⲙⲙⲱⲛⲁⲥ", ("ⲙ", "ⲡ", "ⲙⲁⲙⲙⲱⲛⲁⲥ")) == (1, 2)
    assert spelling("Blahouse", ("bla", "house")) == (3,)
    assert spelling("mahalledeki", ("mahallede", "ki")) == (9,)
    assert spelling("İSTANBUL'DA", ("İstanbul", "'da")) == (8,)   # İ's lower case is two characters
    assert spelling("della", ("di", "la")) is None
    assert spelling("vederla", ("vedere", "la")) is None
    assert spelling("house", ("house",)) is None
    assert spelling("blahouse", ("bla", "hous")) is None


def test_unseen_prefixed_tokens_split(splitter):
    sp = splitter
    for token, words in [("blaboat", ("bla", "boat")),             # noun seen only alone
                         ("neblahill", ("ne", "bla", "hill")),     # two prefixes, never together with hill
                         ("nebladoor", ("ne", "bla", "door")),     # and a noun never seen
                         ("blazorq", ("bla", "zorq")),
                         ("Blaboat", ("Bla", "boat")),             # the token's own case
                         ("kasee", ("ka", "see")), ("karun", ("ka", "run"))]:
        assert token not in sp.seen
        assert sp.words(token) == words, token
    for token in ["zorq", "sun", "frogs"]:   # no prefix: one word
        assert sp.words(token) == (token,)


def test_seen_tokens_as_in_training(splitter):
    sp = splitter
    assert sp.words("blamoon") == ("bla", "moon")
    assert sp.words("neblahouse") == ("ne", "bla", "house")
    for whole in OTHERS + NOUNS + VERBS:
        assert sp.words(whole) == (whole,), whole


def test_without_the_segmenter_the_rules_cannot_split_a_prefix():
    tokens, mwt = made_up()
    sp = train_splitter(tokens, mwt)
    assert sp.segmenter is None      # learnt, but not used until dev (or the caller) says so
    assert sp.words("blazorq") == ("blazorq",)
    sp.set_segmenter(True)
    assert sp.words("blazorq") == ("bla", "zorq")
    sp.set_segmenter(False)
    assert sp.words("blazorq") == ("blazorq",)


def test_dropped_segmenter_leaves_the_splitter_trained_without_one():
    """keep_segmenter(False): the splitter (and its file) is the one train_splitter gives
    without a segmenter, its dictionary in the same order."""
    tokens, mwt = made_up()
    a = train_splitter(tokens, mwt)
    b = train_splitter(tokens, mwt, segment=False)
    assert not b.has_segmenter()
    a.keep_segmenter(False)
    assert not a.has_segmenter() and a.segmenter is None
    assert list(a.seen.items()) == list(b.seen.items())
    assert json.dumps(a.to_json()) == json.dumps(b.to_json())
    assert "segmenter" not in a.to_json()


def test_fewer_than_ten_spelled_types_learn_no_segmenter():
    assert SEGMENT_MIN_TYPES == 10
    tokens, mwt = made_up(spelled_types=9)
    # and multiword tokens whose words do not spell them do not count
    for form, words in {"della": ("di", "la"), "nel": ("in", "il"), "au": ("à", "le")}.items():
        mwt[form] = {words: 2}
        tokens[form] = 2
    sp = train_splitter(tokens, mwt)
    assert not sp.has_segmenter()
    sp.set_segmenter(True)
    assert sp.segmenter is None
    seen = {f: (max(s.items(), key=lambda kv: kv[1])[0]) for f, s in mwt.items()}
    seen.update({f: (f,) for f in tokens if f not in mwt})
    assert train_segmenter(seen) is None
    tokens, mwt = made_up(spelled_types=10)
    assert train_splitter(tokens, mwt).has_segmenter()


def test_training_is_deterministic():
    tokens, mwt = made_up()
    a = train_splitter(tokens, mwt)
    b = train_splitter(dict(reversed(list(tokens.items()))), mwt)
    assert a._spare[0] == b._spare[0]


def test_json_round_trip(splitter):
    d = json.loads(json.dumps(splitter.to_json()))
    assert set(d["segmenter"]) == {"weights", "lexicon"}
    back = MultiwordSplitter.from_json(d)
    assert back.segmenter == splitter.segmenter
    assert back.seen == splitter.seen and back.use_rules == splitter.use_rules
    for token in ["blaboat", "neblahill", "blazorq", "kasee", "zorq", "blame", "Blahouse"]:
        assert back.words(token) == splitter.words(token)


def test_an_old_json_without_segmenter_loads_as_before():
    """A model file written before segmenters existed: no "segmenter" key."""
    old = {"seen": {"nel": ["in", "il"], "Del": ["Del"]}, "rules": [["l", ["", "il"]]],
           "weights": {"('l', ('', 'il'))": 1.5}, "use_rules": True}
    sp = MultiwordSplitter.from_json(old)
    assert sp.segmenter is None
    assert sp.words("nel") == ("in", "il")
    assert sp.words("Del") == ("Del",)
    assert sp.words("sul") == ("su", "il")      # the rule, as before
    assert sp.to_json() == old


@pytest.mark.parametrize("bad", [
    5, "x", [], {"weights": {}}, {"weights": {}, "lexicon": {}, "more": 1},
    {"weights": [], "lexicon": {}}, {"weights": {}, "lexicon": []},
    {"weights": {"b": "1.0"}, "lexicon": {}}, {"weights": {"b": True}, "lexicon": {}},
    {"weights": {"b": math.nan}, "lexicon": {}}, {"weights": {"b": math.inf}, "lexicon": {}},
    {"weights": {"b": None}, "lexicon": {}},
    {"weights": {}, "lexicon": {"bla": 0}}, {"weights": {}, "lexicon": {"bla": 8}},
    {"weights": {}, "lexicon": {"bla": 1.0}}, {"weights": {}, "lexicon": {"bla": "1"}},
    {"weights": {}, "lexicon": {"": 1}}, {"weights": {}, "lexicon": {"b\tla": 1}},
    {"weights": {}, "lexicon": {"bla\n": 1}},
])
def test_a_corrupt_segmenter_is_refused(splitter, bad):
    d = json.loads(json.dumps(splitter.to_json()))
    d["segmenter"] = bad
    with pytest.raises(ValueError):
        MultiwordSplitter.from_json(d)
    with pytest.raises(ValueError):
        Segmenter.from_json(bad)


def test_memo_stays_bounded(splitter, monkeypatch):
    from structkit.tokenizer import mwt as M

    monkeypatch.setattr(M, "MEMO", 4)
    splitter.forget()
    for k in range(20):
        splitter.words(f"blazorq{'x' * k}")
        assert len(splitter._memo) <= 4
    splitter.forget()


def _treebank(path, n: int, seed: int, unseen: bool):
    """CoNLL-U of ``n`` sentences of the made-up language; with ``unseen``, half the tokens are
    the article on nouns that training never saw (which the suffix rules cannot split)."""
    import random

    rng = random.Random(seed)
    tokens, mwt = made_up()
    forms = sorted(tokens)
    new = ["fern", "lake", "pond", "cave", "dune", "reef"]
    out = []
    for k in range(n):
        toks = []
        for _ in range(rng.randint(3, 8)):
            if unseen and rng.random() < 0.5:
                noun = rng.choice(new)
                toks.append(("bla" + noun, ("bla", noun)))
            else:
                form = rng.choice(forms)
                toks.append((form, next(iter(mwt[form])) if form in mwt else (form,)))
        toks.append((".", (".",)))
        out.append(f"# sent_id = {k + 1}\n# text = {' '.join(f for f, _ in toks[:-1])}.")
        i = 1
        for j, (form, words) in enumerate(toks):
            misc = "SpaceAfter=No" if j == len(toks) - 2 else "_"
            if len(words) > 1:
                out.append(f"{i}-{i + len(words) - 1}\t{form}\t_\t_\t_\t_\t_\t_\t_\t{misc}")
                for w in words:
                    out.append(f"{i}\t{w}\t_\tX\t_\t_\t_\t_\t_\t_")
                    i += 1
            else:
                out.append(f"{i}\t{form}\t_\tX\t_\t_\t_\t_\t_\t{misc}")
                i += 1
        out.append("")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def test_dev_chooses_the_segmenter(sk, tmp_path):
    from structkit.tasks import make_config
    from structkit.tokenizer.task import TokenizerModel, train_tokenizer

    train = _treebank(tmp_path / "train.conllu", 300, 1, False)
    dev = _treebank(tmp_path / "dev.conllu", 40, 2, True)
    model = train_tokenizer(make_config({"task": "tokenize", "epochs": 3}), str(train), str(dev))
    info = model.info["mwt_segmenter"]
    assert info["used"] is True and info["dev_words_with"] > info["dev_words_without"]
    assert model.info["mwt_rules"]["used"] is model.tokenizer.mwt.use_rules
    path = tmp_path / "tok.model"
    model.save(str(path))
    m = TokenizerModel.load(str(path))
    assert m.tokenizer.mwt.segmenter == model.tokenizer.mwt.segmenter
    [sent] = list(m.sentences("blabog and blamoon neblabog."))
    assert [t.words for t in sent.tokens] == [("bla", "bog"), ("and",), ("bla", "moon"), ("ne", "bla", "bog"), (".",)]
    r = sk("dump", "-m", path, "--top", "3")
    assert r.code == 0, r.err
    assert "left-to-right segmenter for unseen tokens (before the suffix rules)" in r.out

    # without dev the segmenter is not kept (unless told to, as a refit after --dev-split is)
    plain = train_tokenizer(make_config({"task": "tokenize", "epochs": 1}), str(train))
    assert plain.tokenizer.mwt.segmenter is None and "mwt_segmenter" not in plain.info
    assert plain.tokenizer.mwt.words("blabog") == ("blabog",)
    told = train_tokenizer(make_config({"task": "tokenize", "epochs": 1}), str(train), segment=True)
    assert told.tokenizer.mwt.segmenter is not None and told.tokenizer.mwt.words("blabog") == ("bla", "bog")
    assert json.dumps(plain.tokenizer.mwt.to_json()) == json.dumps(
        train_tokenizer(make_config({"task": "tokenize", "epochs": 1}), str(train)).tokenizer.mwt.to_json())
