"""The beam parser's time grows with the square of a sentence's length (each beam item's state,
arrays as long as the sentence, is copied at every step), so a sentence over
``MAX_SENTENCE_WORDS`` is refused in one line naming the file and line, in parse, train (train
and dev files) and the API; one at the limit is parsed (issue 30, item 4)."""
from __future__ import annotations

import os

import pytest

from clitools import assert_one_line_error
from structkit.errors import UserError
from structkit.parse.labelled import MAX_SENTENCE_WORDS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UD = os.path.join(ROOT, "structkit", "data", "sample", "ud")


def chain(n: int) -> str:
    rows = [f"{i}\tw{i % 50}\t_\t{('NOUN', 'VERB', 'ADP')[i % 3]}\t_\t_\t{i - 1}\t{'root' if i == 1 else 'dep'}\t_\t_"
            for i in range(1, n + 1)]
    return "\n".join(rows) + "\n\n"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from structkit.parse.parser import ParserConfig, train_parser

    p = tmp_path_factory.mktemp("m") / "p.model"
    train_parser(ParserConfig(algo="beam", epochs=1), os.path.join(UD, "train.conllu")).save(str(p))
    return str(p)


def test_parse_refuses_a_sentence_over_the_limit(sk, model, tmp_path):
    f = tmp_path / "long.conllu"
    f.write_text(chain(3) + chain(MAX_SENTENCE_WORDS + 1))
    assert_one_line_error(sk("parse", "--model", model, str(f)), f"{f}:5:",
                          f"a sentence of {MAX_SENTENCE_WORDS + 1:,} words", "at most 5,000")


def test_a_sentence_at_the_limit_is_parsed(sk, model, tmp_path):
    f = tmp_path / "limit.conllu"
    f.write_text(chain(MAX_SENTENCE_WORDS))
    r = sk("parse", "--model", model, str(f))
    assert r.code == 0, r.err
    assert len([ln for ln in r.out.splitlines() if ln and not ln.startswith("#")]) == MAX_SENTENCE_WORDS


def test_train_refuses_a_long_training_or_dev_sentence(sk, tmp_path):
    train = tmp_path / "train.conllu"
    train.write_text(open(os.path.join(UD, "train.conllu")).read() + chain(MAX_SENTENCE_WORDS + 1))
    assert_one_line_error(sk("train", "--task", "parse", "--train", str(train), "-m", str(tmp_path / "m")),
                          f"{train}:", "at most 5,000")
    dev = tmp_path / "dev.conllu"
    dev.write_text(chain(MAX_SENTENCE_WORDS + 1))
    assert_one_line_error(sk("train", "--task", "parse", "--train", os.path.join(UD, "train.conllu"),
                             "--dev", str(dev), "-m", str(tmp_path / "m")), f"{dev}:1:", "at most 5,000")
    assert not (tmp_path / "m").exists()


def test_api_refuses_too(model):
    import structkit

    parser = structkit.Parser.load(model)
    with pytest.raises(UserError, match="at most 5,000"):
        parser.predict([[("w", "NOUN")] * (MAX_SENTENCE_WORDS + 1)])


def test_a_model_with_too_many_labels_is_refused(sk, model, tmp_path):
    """A crafted beam model of 3,000 labels (one of 200,000 made parse hang and dump allocate
    1 TiB): refused on load, by every command."""
    import numpy as np

    import structkit
    from structkit.parse.labelled import MAX_LABELS, LabelledParser

    p = structkit.Parser.load(model).model_
    n = MAX_LABELS + 1
    W = np.zeros((1 << p.config.hash_bits) + 2 * n + 1, dtype=np.float32)
    path = tmp_path / "big.model"
    LabelledParser(p.config, p.vocabs, [f"l{i}" for i in range(n)], W, p.info).save(str(path))
    for cmd in (["parse", "--model", str(path), os.path.join(UD, "test.conllu")], ["dump", "--model", str(path)]):
        assert_one_line_error(sk(*cmd), "damaged model file", f"{n:,} labels, over the {MAX_LABELS:,}")


def test_training_refuses_too_many_labels(sk, tmp_path, monkeypatch):
    import structkit.parse.labelled as labelled

    monkeypatch.setattr(labelled, "MAX_LABELS", 5)
    assert_one_line_error(sk("train", "--task", "parse", "--train", os.path.join(UD, "train.conllu"),
                             "-m", str(tmp_path / "m")), "dependency labels (lifted ones included)",
                          "takes at most 5")
    assert not (tmp_path / "m").exists()
