"""The learnt tokenizer on input without an end: a text longer than one window is labelled a
window at a time (each kernel call sees at most ``WINDOW`` characters) and gives the same
tokens and sentences as one pass; a line of 200,000 characters without a space, and Unicode
junk of every kind, are tokenized with every character accounted for; binary junk is one line."""
from __future__ import annotations

import random

import numpy as np
import pytest

from clitools import assert_one_line_error, leftovers
from test_tokenize_task import sentence, treebank


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from structkit.cli import main  # noqa: F401 (the commands registered)
    from structkit.tasks import make_config
    from structkit.tokenizer.task import train_tokenizer

    d = tmp_path_factory.mktemp("tokb")
    model = train_tokenizer(make_config({"task": "tokenize", "epochs": 6}),
                            str(treebank(d / "train.conllu", 300, 11)), None)
    path = d / "tok.model"
    model.save(str(path))
    return model.tokenizer, path


def segment(tok, text):
    return [[(t.form, t.start, t.end) for t in s] for s, _ in tok.sentences(text)]


def check_covers(text, sents):
    """Every non-space character is in exactly one token, tokens in order, forms = the text."""
    pos = 0
    covered = np.zeros(len(text), dtype=bool)
    for s in sents:
        for form, a, b in s:
            assert a >= pos and b > a and text[a:b] == form
            covered[a:b] = True
            pos = b
    for i, ch in enumerate(text):
        if not ch.isspace():
            assert covered[i], (i, ch)


def spy_lengths(monkeypatch):
    from structkit.tokenizer import model as M

    seen = []
    real = M.tag_chars

    def spy(cps, *args):
        seen.append(len(cps))
        return real(cps, *args)

    monkeypatch.setattr(M, "tag_chars", spy)
    return seen


def test_a_long_text_in_windows_gives_what_one_pass_gives(tokenizer, monkeypatch):
    from structkit.tokenizer import model as M

    tok, _ = tokenizer
    rng = random.Random(5)
    text = " ".join("".join(f + (" " if sp else "") for f, _, sp in sentence(rng)).strip()
                    for _ in range(150))
    whole = segment(tok, text)
    assert len(whole) >= 140 and len(text) > 5000
    monkeypatch.setattr(M, "WINDOW", 600)
    monkeypatch.setattr(M, "OVERLAP", 100)
    seen = spy_lengths(monkeypatch)
    windowed = segment(tok, text)
    assert len(seen) >= len(text) // 600 and max(seen) <= 600
    assert windowed == whole
    check_covers(text, windowed)


def test_a_line_with_no_space_is_cut_into_bounded_windows(tokenizer, monkeypatch):
    from structkit.tokenizer import model as M

    tok, _ = tokenizer
    rng = random.Random(3)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(200_000))
    seen = spy_lengths(monkeypatch)
    sents = segment(tok, text)
    assert max(seen) <= M.WINDOW and sum(seen) < len(text) + len(seen) * M.OVERLAP
    check_covers(text, sents)
    assert all(len(s) <= 1000 for s in sents)   # MAX_SENTENCE_TOKENS


def test_unicode_junk_is_tokenized_with_every_character_accounted_for(tokenizer):
    tok, _ = tokenizer
    rng = random.Random(7)
    pool = [chr(c) for c in list(range(0x20, 0x2000)) + list(range(0x3000, 0x3100)) +
            list(range(0x1F600, 0x1F650)) + [0x200B, 0x200D, 0xFEFF, 0x0301, 0x05D0, 0x0627]]
    text = "".join(rng.choice(pool) if rng.random() > 0.1 else rng.choice(" \t\n\u00a0\u3000")
                   for _ in range(30_000))
    check_covers(text, segment(tok, text))


def test_binary_junk_is_one_line_and_leaves_nothing(sk, tokenizer, tmp_path):
    _, model = tokenizer
    junk = tmp_path / "junk.bin"
    rng = random.Random(1)
    junk.write_bytes(bytes(rng.randrange(256) for _ in range(50_000)))
    out = tmp_path / "out.conllu"
    assert_one_line_error(sk("tokenize", "-m", str(model), str(junk), "-o", str(out)),
                          "not valid UTF-8")
    assert not out.exists() and not leftovers(tmp_path)


def test_a_token_never_spans_a_line_break():
    """Even a model that would keep every space inside a token (as Vietnamese words have them)
    ends a token at a line break: a CoNLL-U form or `# text` cannot hold one."""
    from structkit.tokenizer import features as F
    from structkit.tokenizer.model import LearntTokenizer

    bits = 16
    W = np.zeros((1 << bits, 4))
    W[:, 0] = 1.0          # every feature pushes "inside a token"
    tok = LearntTokenizer(W, np.zeros((5, 5)), F.known_table([]), bits)
    text = "ab cd\nef gh\r\nij\u2028kl mn"
    forms = [t.form for s, _ in tok.sentences(text) for t in s]
    assert forms == ["ab cd", "ef gh", "ij", "kl mn"]


def _plain_probe(table, key):
    """A reference: the slot of ``key``, or the first empty slot after its home, scanning the
    table once; None when neither is there."""
    n = len(table)
    for k in range(n):
        slot = (int(key) + k) % n
        if int(table[slot]) in (int(key), 0):
            return slot
    return None


def test_a_full_known_table_ends_the_probe_and_is_refused(sk, tokenizer, tmp_path):
    """Issue 41, item 2: a crafted model whose known-token table is all 0xff (no empty slot)
    loaded and hung the probe loop for ever, deaf to SIGTERM. The loader refuses a table fuller
    than any training writes, and the probe makes at most one pass over a table (checked
    against a plain scan on random tables, full ones included)."""
    from structkit.tokenizer.features import _probe, known_lookup
    from structkit.tokenizer.task import TokenizerModel

    rng = np.random.default_rng(3)
    for size in (2, 8, 64):
        for fill in (0.0, 0.5, 1.0):
            table = np.zeros(size, dtype=np.uint64)
            used = rng.choice(size, int(size * fill), replace=False)
            table[used] = rng.integers(1, 1 << 20, used.size).astype(np.uint64) * 2 + 1
            for key in [*table[used][:5], *(rng.integers(1, 1 << 20, 5) * 2 + 1)]:
                key = np.uint64(key)
                want = _plain_probe(table, key)
                slot = int(_probe(table, key))
                if want is not None:
                    assert slot == want
                assert bool(known_lookup(table, key)) == (want is not None and int(table[want]) == int(key))
    model = TokenizerModel.load(str(tokenizer[1]))
    model.tokenizer.known = np.full_like(model.tokenizer.known, np.uint64(0xFFFFFFFFFFFFFFFF))
    bad = tmp_path / "full.model"
    model.save(str(bad))
    assert_one_line_error(sk("tokenize", "-m", bad, "-"), "damaged model file", "known-token table")


def test_multiword_words_with_control_characters_are_refused(sk, tokenizer, tmp_path):
    """Issue 41, item 8: a tokenizer whose multiword tokens expand to words holding a line break
    or a tab (which `tokenize` wrote as an injected line, and `annotate` ended in IndexError) is
    a damaged model file, one line; a format character (ZWNJ, in Persian words) is a word."""
    from structkit.tokenizer.mwt import MultiwordSplitter
    from structkit.tokenizer.task import TokenizerModel

    for words, ok in ((("a\nb", "c"), False), (("a", "b\tc"), False), (("mi\u200cx", "y"), True)):
        model = TokenizerModel.load(str(tokenizer[1]))
        t = model.tokenizer
        t.mwt = t.mwt or MultiwordSplitter({}, {}, {}, False)
        t.mwt.seen["zzz"] = words
        path = tmp_path / "mwt.model"
        model.save(str(path))
        if ok:
            assert TokenizerModel.load(str(path)).tokenizer.mwt.seen["zzz"] == words
        else:
            assert_one_line_error(sk("tokenize", "-m", path, "-"), "damaged model file", "no word")


def test_a_sentence_longer_than_analysis_reads_at_once_is_refused_in_training(sk, tmp_path, monkeypatch):
    """Issue 41, item 3: training on a 10 MB token ended in MemoryError (memory follows the
    characters read). A sentence longer than tokenizer.gold.MAX_SENTENCE_CHARS (the paragraph
    analysis reads at once) is refused in one line naming the constant and the sentence's line."""
    from structkit.tokenizer import gold

    text = "Una frase " + "molto " * 20 + "lunga ."
    words = text.split(" ")
    rows = "".join(f"{i}\t{w}\t{w}\tX\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t_\t_\n"
                   for i, w in enumerate(words, 1))
    f = tmp_path / "long.conllu"
    f.write_text("# text = Breve .\n1\tBreve\tbreve\tX\t_\t_\t0\troot\t_\t_\n2\t.\t.\tX\t_\t_\t1\tpunct\t_\t_\n\n"
                 f"# text = {text}\n{rows}\n", encoding="utf-8")
    monkeypatch.setattr(gold, "MAX_SENTENCE_CHARS", 100)
    assert len(text) > 100
    r = sk("train", "--task", "tokenize", "--train", str(f), "--model", str(tmp_path / "t.skm"))
    assert_one_line_error(r, f"{f}:5:", f"a sentence of {len(text):,} characters", "MAX_SENTENCE_CHARS")
    assert not (tmp_path / "t.skm").exists()
