"""The bias on sentence ends (structkit.tokenizer.model.favour_sentence_ends, chosen on dev by
structkit.tokenizer.task._choose_sentence_bias): what it adds, what it changes in decoding, the
rule dev applies, and how a model file keeps it. Expected values are worked out by hand here."""
from __future__ import annotations

import numpy as np
import pytest

from clitools import assert_one_line_error
from structkit.tokenizer.model import NEG, favour_sentence_ends, tag_emissions


def test_the_bias_is_added_to_sentence_ends_where_they_are_allowed():
    E = np.array([[0.0, 1.0, 0.5, NEG],     # a letter: N, T, S allowed
                  [NEG, NEG, NEG, 0.0],     # a space: only W here (S not allowed)
                  [0.25, -1.0, -2.0, NEG]])
    out = favour_sentence_ends(E.copy(), 0.75)
    assert out[:, 2].tolist() == [1.25, NEG, -1.25]
    assert out[:, [0, 1, 3]].tolist() == E[:, [0, 1, 3]].tolist()   # the other labels untouched
    assert favour_sentence_ends(E.copy(), 0.0).tolist() == E.tolist()


def test_a_bias_turns_a_close_token_end_into_a_sentence_end_and_back():
    # two characters, no transition scores: the first is a token end (T 1.0 against S 0.8), the
    # last may only end a sentence; +0.5 on S makes the first S (1.3 > 1.0), -0.5 keeps it T
    T = np.zeros((5, 5))
    E = np.array([[0.0, 1.0, 0.8, NEG], [NEG, NEG, 1.0, NEG]])
    assert tag_emissions(E.copy(), T).tolist() == [1, 2]
    assert tag_emissions(favour_sentence_ends(E.copy(), 0.5), T).tolist() == [2, 2]
    assert tag_emissions(favour_sentence_ends(E.copy(), -0.5), T).tolist() == [1, 2]
    # a sentence end the model scores clearly (S 3.0 against T 1.0) survives a bias of -1.5
    E2 = np.array([[0.0, 1.0, 3.0, NEG], [NEG, NEG, 1.0, NEG]])
    assert tag_emissions(favour_sentence_ends(E2, -1.5), T).tolist() == [2, 2]


def _dev(table):
    """A stand-in for training's score_dev: the scores of each bias from ``table``."""
    def score(w, bias=0.0):
        words, sentences, tokens = table[bias]
        return {"words": words, "sentences": sentences, "tokens": tokens}
    return score


BIASES = (-2.0, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0)


def _table(base, changed):
    """Every bias scoring as ``base`` (words, sentences, tokens), but those in ``changed``."""
    return {**{b: base for b in (0.0, *BIASES)}, **changed}


def test_dev_keeps_the_best_bias_that_gains_a_point():
    from structkit.tokenizer import task

    assert task.SENTENCE_BIASES == BIASES and task.MIN_SENTENCE_GAIN == 1.0
    # +0.5 gains 3.3 points of sentences, +1.0 more but loses words: +0.5 is kept
    got = task._choose_sentence_bias(_dev(_table((93.0, 20.6, 100.0), {0.5: (93.0, 23.9, 100.0),
                                                                      1.0: (92.9, 24.5, 100.0)})), None)
    assert got["bias"] == 0.5 and got["used"] is True
    assert got["dev_sentences_without"] == 20.6 and got["dev_sentences_with"]["0.5"] == 23.9
    assert got["dev_sentences_with"]["1.0"] == 24.5 and got["dev_words_with"]["1.0"] == 92.9


def test_dev_keeps_no_bias_for_a_gain_under_a_point_or_one_that_costs_tokens():
    from structkit.tokenizer import task

    # -0.25 gains 0.96 (English ParTUT's dev: 99.04 -> 100.00): under a point, not kept
    got = task._choose_sentence_bias(_dev(_table((99.8, 99.04, 99.8), {-0.25: (99.8, 100.0, 99.8)})), None)
    assert got["bias"] == 0.0 and got["used"] is False
    # +2.0 gains 10 points of sentences but loses tokens: not a candidate, and nothing else gains
    got = task._choose_sentence_bias(_dev(_table((95.0, 80.0, 99.0), {2.0: (95.0, 90.0, 98.5)})), None)
    assert got["bias"] == 0.0 and got["used"] is False
    # on a tie in sentences the better words win: -1.0 (words 95.2) over -0.5 (95.1)
    got = task._choose_sentence_bias(_dev(_table((95.0, 80.0, 99.0), {-0.5: (95.1, 85.0, 99.0),
                                                                  -1.0: (95.2, 85.0, 99.0)})), None)
    assert got["bias"] == -1.0 and got["used"] is True


def test_no_bias_is_tried_where_dev_sentences_cannot_gain_a_point():
    from structkit.tokenizer import task

    calls = []

    def score(w, bias=0.0):
        calls.append(bias)
        return {"words": 99.0, "sentences": 99.5, "tokens": 99.0}

    got = task._choose_sentence_bias(score, None)
    assert calls == [0.0] and got["bias"] == 0.0 and got["used"] is False
    assert got["dev_sentences_without"] == 99.5 and "dev_sentences_with" not in got


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    """A small tokenizer trained on dev-less synthetic text (bias 0), saved; and its header."""
    from structkit.model import load_model
    from structkit.tasks import make_config
    from structkit.tokenizer.task import train_tokenizer

    d = tmp_path_factory.mktemp("bias")
    train = d / "train.conllu"
    rows = []
    for k in range(60):
        rows += [f"# text = ab cd{k % 3}.", "1\tab\t_\tX\t_\t_\t_\t_\t_\t_",
                 f"2\tcd{k % 3}\t_\tX\t_\t_\t_\t_\t_\tSpaceAfter=No", "3\t.\t_\tPUNCT\t_\t_\t_\t_\t_\t_", ""]
    train.write_text("\n".join(rows) + "\n", encoding="utf-8")
    m = train_tokenizer(make_config({"task": "tokenize", "epochs": 2}), str(train))
    path = d / "plain.model"
    m.save(str(path))
    return d, path, load_model(str(path), ("tokenize",))


def test_the_bias_is_saved_only_where_dev_kept_one(model_files):
    import numpy as np

    from structkit.model import save_model
    from structkit.tokenizer.task import TokenizerModel

    d, path, (header, arrays) = model_files
    assert "sentence_bias" not in header           # no dev: no bias, the header as before
    assert TokenizerModel.load(str(path)).tokenizer.sentence_bias == 0.0
    biased = d / "biased.model"
    save_model(str(biased), {**header, "sentence_bias": 0.5}, {k: np.asarray(v) for k, v in arrays.items()})
    m = TokenizerModel.load(str(biased))
    assert m.tokenizer.sentence_bias == 0.5
    again = d / "again.model"
    m.save(str(again))
    assert TokenizerModel.load(str(again)).tokenizer.sentence_bias == 0.5
    from structkit.tokenizer.dump import tokenizer_lines

    said = [line for line in tokenizer_lines(m, 5, None) if "sentence ends" in line]
    assert said == ["bias on sentence ends (kept on dev): +0.5, added to the score of S wherever it is allowed"]
    assert not [line for line in tokenizer_lines(TokenizerModel.load(str(path)), 5, None) if "bias" in line]


@pytest.mark.parametrize("bad", ["0.5", True, None, [1]])
def test_a_damaged_bias_is_one_line(sk, model_files, bad):
    import numpy as np

    from structkit.model import save_model

    d, _, (header, arrays) = model_files
    path = d / "bad.model"
    save_model(str(path), {**header, "sentence_bias": bad}, {k: np.asarray(v) for k, v in arrays.items()})
    r = sk("tokenize", "-m", path, stdin=b"ab cd1.\n")
    assert_one_line_error(r, str(path), "damaged model file")
