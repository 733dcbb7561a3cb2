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


# --- the fast segmenter (``Segmenter.cuts``, weight tables per template) against the plain one
# (``plain_cuts``, a feature string per boundary looked up in ``weights``)

# letters whose lower case is longer (Turkish dotted capital I) or depends on what follows (Greek
# capital sigma), the characters the feature strings join with ("|", "=", "~"), digits
ALPHABET = "abeklnİIıΣσς|=~" + "07" + "AB"
GARBAGE = ["kp=x|True", "p|b1=", "zz=1", "b=", "b=1", "=", "", "kp=8|True", "kp=1|Maybe", "kp=01|True",
           "len=9|1", "len=1|", "ns=4", "ns=", "kr=8", "kw=x", "k=1|8", "k=1", "kr|a2=x|ab", "kp|b2=|",
           "kp|rm=9|1", "aab=|", "aab=||", "abb=a|", "abb=a", "p|s=abc|Maybe", "p|s=", "a1", "len",
           "p|b1=ab", "aab=ab", "abb=abc",
           # one character off what a template gives (the wrong part would find a real key)
           "aab=ab~e", "aab=ee~e", "aab=a|be", "p|b1=ab~e", "p|b1=e~e", "p|b1=a~b", "p|b1=~|ab",
           "abb=a~b", "abb=ab|b", "kp|rm=1~x", "kp|b2=1~ab", "kr|a2=7~a", "kr|a2=71|a", "p|s=ab|true",
           "p|s=ab|false", "p|s=a|False|", "kp=1|true", "len=1|08", "ns=03"]


def _scores(seg: Segmenter, token: str) -> list[float]:
    """Every boundary's score as ``plain_cuts`` adds it, one weight at a time in order."""
    from structkit.tokenizer.mwt import _low, _rest_pieces, _seg_features

    low = _low(token)
    flags = lambda w: seg.lexicon.get(w, 0)   # noqa: E731
    rest = _rest_pieces(low, flags, max(map(len, seg.lexicon), default=0))
    out, start, splits = [], 0, 0
    for i in range(1, len(low)):
        score = 0.0
        for f in _seg_features(low, i, start, splits, flags, rest):
            score += seg.weights.get(f, 0.0)
        out.append(score)
        if score > 0.0:
            start, splits = i, splits + 1
    return out


def _same_cuts(seg: Segmenter, tokens) -> int:
    differ = [(t, seg.cuts(t), seg.plain_cuts(t)) for t in tokens if seg.cuts(t) != seg.plain_cuts(t)]
    assert not differ, differ[:10]
    return sum(1 for t in tokens if seg.plain_cuts(t))


def _random_word(rng, lo: int, hi: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(lo, hi)))


def test_fast_cuts_same_as_plain_on_the_made_up_language(splitter):
    import random

    rng = random.Random(5)
    seg = splitter.segmenter
    tokens, _ = made_up()
    forms = list(tokens) + [t.upper() for t in tokens] + ["blaboat", "neblahill", "nebladoor", "blazorq",
                                                          "Blaboat", "kasee", "karun", "zorq", "x", ""]
    stems = NOUNS + VERBS + OTHERS + ONLY_AFTER_BLA + ["bla", "ne", "ka"]
    forms += ["".join(rng.choice(stems) for _ in range(rng.randint(1, 5))) for _ in range(500)]
    forms += [_random_word(rng, 0, 14) for _ in range(500)]
    assert _same_cuts(seg, forms) > 100
    back = Segmenter.from_json(json.loads(json.dumps(seg.to_json())))
    assert [back.cuts(t) for t in forms] == [seg.plain_cuts(t) for t in forms]
    for spelled in (10, 12):   # the segmenters of fewer forms
        tokens, mwt = made_up(spelled_types=spelled)
        sp = train_splitter(tokens, mwt)
        _same_cuts(sp._spare[0], forms)


def test_fast_cuts_same_as_plain_with_random_weights_ties_and_garbage():
    """Weights on every template's features (those the random tokens give, at any word end so
    far and any count of words before), small integers so that sums of exactly 0.0 (no word
    end) are common, then floats of mixed sizes (whose sums depend on the order they are added
    in), and names no template gives, which must be ignored."""
    import random

    from structkit.tokenizer.mwt import _low, _rest_pieces, _seg_features

    rng = random.Random(13)
    ties = 0
    for trial in range(12):
        words = {_random_word(rng, 1, 4) for _ in range(40)} | {_random_word(rng, 11, 13) for _ in range(4)}
        lexicon = {_low(w): rng.randint(1, 7) for w in words}   # as training gives it: lower case
        flags = lambda w: lexicon.get(w, 0)   # noqa: E731
        # tokens spelled by lexicon words, and random ones (some longer than 10 and 8 characters)
        toks = ["".join(rng.choice(sorted(words)) for _ in range(rng.randint(1, 5))) for _ in range(150)]
        toks += [_random_word(rng, 0, 16) for _ in range(150)]
        toks += [t.upper() for t in toks[:40]]
        feats = set()
        for t in toks:
            low = _low(t)
            rest = _rest_pieces(low, flags, max(map(len, lexicon)))
            for i in range(1, len(low)):
                start = rng.randint(0, i - 1)
                feats.update(_seg_features(low, i, start, rng.randint(0, 5), flags, rest))
        kinds = {f.partition("=")[0] for f in feats}
        assert kinds == {"b", "a1", "b1", "a2", "b2", "a3", "b3", "ab", "aab", "abb", "p", "p|b1", "p|s",
                         "kp", "kr", "kw", "k", "rm", "kp|rm", "kp|b2", "kr|a2", "len", "ns"}
        feats = sorted(feats)
        weights = {f: float(rng.randint(-2, 2)) for f in feats if rng.random() < 0.6}
        weights.update({g: rng.choice([-1e6, 1e6]) for g in GARBAGE})
        seg = Segmenter(weights, lexicon)
        split = _same_cuts(seg, toks)
        assert 0 < split < len(toks)
        ties += sum(1 for t in toks for s in _scores(seg, t) if s == 0.0)
        # another weights dict: the tables are made again (so is a dict that grew); weights
        # whose sums are not the same in another order (1e16 + 1 - 1e16 is 0.0, 1e16 - 1e16 + 1
        # is 1.0), then floats of mixed sizes
        seg.weights = {f: rng.choice([1e16, -1e16, 1.0, -1.0, 0.5, 3.0]) for f in feats + GARBAGE}
        _same_cuts(seg, toks)
        seg.weights = {f: rng.choice([1e16, -1e16, 1.0, -1.0, 0.5, 3.0]) * rng.random()
                       for f in feats + GARBAGE if f != "b"}
        _same_cuts(seg, toks)
        seg.weights["b"] = -1e30
        assert _same_cuts(seg, toks) == 0
        seg.lexicon = {w: f for w, f in lexicon.items() if rng.random() < 0.5}
        _same_cuts(seg, toks)
    assert ties > 1000


def test_garbage_weights_are_ignored():
    seg = Segmenter({g: 7.0 for g in GARBAGE}, {"ab": 1})
    assert seg.cuts("abab") == seg.plain_cuts("abab") == ()
    seg = Segmenter({**{g: -7.0 for g in GARBAGE}, "ab=ba": 1.0}, {"ab": 1})
    assert seg.cuts("abab") == seg.plain_cuts("abab") == (2,)


def test_fast_cuts_with_flags_no_model_holds():
    """A lexicon flag outside 1..7 (``from_json`` refuses it) leaves ``cuts`` to ``plain_cuts``."""
    seg = Segmenter({"kp=9|True": 1.0}, {"ab": 9})
    assert seg.cuts("abab") == seg.plain_cuts("abab") == (2,)


def test_fast_cuts_same_as_plain_on_a_trained_treebank(tmp_path):
    """The segmenter learnt from a small treebank (the made-up language with nouns training never
    saw), on its tokens, the unseen tokens of another, and random glued words."""
    import random

    from structkit.tokenizer.gold import read_treebank

    tb = read_treebank(str(_treebank(tmp_path / "train.conllu", 200, 3, True)))
    tokens: dict[str, int] = {}
    for p in tb.paragraphs:
        for f in p.tokens:
            tokens[f] = tokens.get(f, 0) + 1
    sp = train_splitter(tokens, tb.mwt)
    assert sp.has_segmenter()
    seg = sp._spare[0]
    dev = read_treebank(str(_treebank(tmp_path / "dev.conllu", 50, 4, True)))
    forms = sorted({f for p in dev.paragraphs for f in p.tokens} | set(tokens))
    rng = random.Random(2)
    parts = sorted(seg.lexicon) + ["zorq", "İ", "ΣΑ", "|", "="]
    forms += ["".join(rng.choice(parts) for _ in range(rng.randint(1, 4))) for _ in range(1000)]
    forms += [f.capitalize() for f in forms[:300]]
    assert _same_cuts(seg, forms) > 300


def test_fast_cuts_remembers_within_bounds(splitter, monkeypatch):
    """What ``cuts`` remembers of windows and rests stays bounded (cleared when full), is cleared
    by ``forget`` (the splitter's too), and changes no answer."""
    import random

    from structkit.tokenizer import mwt as M

    seg = splitter.segmenter
    rng = random.Random(8)
    stems = NOUNS + VERBS + OTHERS + ["bla", "ne", "ka", "zorq"]
    forms = ["".join(rng.choice(stems) for _ in range(rng.randint(1, 4))) for _ in range(300)]
    want = [seg.plain_cuts(t) for t in forms]
    assert [seg.cuts(t) for t in forms] == want
    windows, rests = seg._fast[4][-2:]
    assert windows[3] and rests
    splitter.forget()
    assert not any(windows) and not rests
    monkeypatch.setattr(M, "SEG_MEMO", 8)
    for t, cuts in zip(forms, want):
        assert seg.cuts(t) == cuts
        assert sum(map(len, windows)) <= 8 + len(t) and len(rests) <= 8 + len(t)
    assert [seg.cuts(t) for t in forms] == want


@pytest.mark.parametrize("seen, bad", [
    ({"del": ["de", "el"]}, None),
    ({"de\u200cl": ["de\u200c", "l"]}, None),          # a format character (ZWNJ, Cf) is kept
    ({"d\x85l": ["d", "l"]}, "'d\\x85l'"),              # NEL, a C1 control character
    ({"del": ["de", "e\tl"]}, "'e\\tl'"),
    ({"del": ["de", 5]}, "5"),
    ({"del": ["de", None]}, "None"),                     # JSON null: refused, not taken for "none bad"
    ({"x\x7f": ["x"]}, "'x\\x7f'"),
])
def test_the_splitter_from_a_model_file_refuses_control_characters(seen, bad):
    from structkit.tokenizer.mwt import MultiwordSplitter

    d = {"seen": seen, "rules": [["dal", ["da", "il"]]], "weights": {}, "use_rules": False}
    if bad is None:
        assert MultiwordSplitter.from_json(d).seen == {k: tuple(v) for k, v in seen.items()}
    else:
        with pytest.raises(ValueError, match="which is no word") as ei:
            MultiwordSplitter.from_json(d)
        assert bad in str(ei.value)
