"""Web and e-mail addresses are one token in every tokenizer: the English rules and a learnt
tokenizer, which never saw one (the hand-written treebank has none) and would cut them at '.',
'/', ':' and '@'. Trailing punctuation is not part of the address; a sentence may end after it."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from structkit.text.english import addresses
from structkit.text.tokenize import iter_sentences

TEXT = "Vedi https://www.esempio.it/prezzi?x=1&y=2 o scrivi a info@esempio.it. Grazie (www.foo.org)."
TOKENS = [["Vedi", "https://www.esempio.it/prezzi?x=1&y=2", "o", "scrivi", "a", "info@esempio.it", "."],
          ["Grazie", "(", "www.foo.org", ")", "."]]


def test_addresses_are_found_without_trailing_punctuation():
    got = [TEXT[a:b] for a, b in addresses(TEXT)]
    assert got == ["https://www.esempio.it/prezzi?x=1&y=2", "info@esempio.it", "www.foo.org"]
    assert addresses("mario.rossi+news@a-b.co.uk, ftp://x.org/a_(b)).") == [(0, 26), (28, 45)]


def _plain_addresses(text):
    """A reference: ``addresses`` as it was, every match of ``_ADDRESS.finditer`` (quadratic
    in a run of letters with no "@" after it)."""
    from structkit.text.english import _ADDRESS, _trim_url

    out = []
    for m in _ADDRESS.finditer(text):
        end = _trim_url(text, m.start(), m.end())
        if end - m.start() > 1:
            out.append((m.start(), end))
    return out


def test_addresses_are_the_matches_of_the_plain_scan():
    """``addresses`` skips the starts of an e-mail's local part inside a run (linear time) yet
    finds what the plain ``finditer`` scan finds: on random text made of the characters the
    pattern reads, and where a search starts inside a run (an address right after another,
    "mailto:" inside a word)."""
    import random

    for text in ("a@b.c.+x@d.e", "a@b.c..x@d.e f", "xmailto:a@b.c", "a@b.cmailto:x@y.z",
                 "wwwww.a@b.c", "ab.c@d", "a@b.c+@d.e", ".+@a.b", "http://a.b@c.d x@y.z.",
                 "a@bwww.c.d", "+a@b.c+d@e.f+g@h.i", ""):
        assert addresses(text) == _plain_addresses(text), text
    rng = random.Random(4)
    pieces = list("ab1_.+-@:/ w<\"é") + ["mailto:", "http://", "https://", "ftp://", "www.", "www12.", "@b.c"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        assert addresses(text) == _plain_addresses(text), text


@pytest.fixture(scope="module")
def learnt(tmp_path_factory):
    from structkit.cli import main
    from structkit.tokenizer.wing import TOKENIZE

    path = tmp_path_factory.mktemp("tok") / "tok.skm"
    with pytest.raises(SystemExit) as ei:
        main(["train", "--task", "tokenize", "--train", str(FIXTURES / "tiny_ud" / "train.conllu"),
              "--model", str(path), "-q"])
    assert ei.value.code in (0, None)
    return TOKENIZE.load(str(path)).tokenizer


@pytest.mark.parametrize("which", ["rules", "learnt"])
def test_every_tokenizer_keeps_an_address_one_token(which, learnt):
    tok = "en" if which == "rules" else learnt
    got = [[t.form for t in s.tokens] for s in iter_sentences(TEXT, tok)]
    words = [w for s in got for w in s]
    for address in ("https://www.esempio.it/prezzi?x=1&y=2", "info@esempio.it", "www.foo.org"):
        assert address in words, (which, got)
    if which == "rules":
        assert got == TOKENS
