"""Smoke tests on the real corpora (skipped where $STRUCTKIT_DATA is absent). They train on
small slices only; full-corpus runs are `make experiments`."""
import itertools

import numpy as np
import pytest

from structkit.io.conll import read_conll
from structkit.sequence.task import (SequenceTagger, TaggerConfig, read_labelled, score_labels,
                                      train_tagger)

pytestmark = pytest.mark.corpus


@pytest.mark.parametrize("rel,n_sent,n_tok", [
    ("conll2000/train.txt", 8936, 211727),
    ("conll2000/test.txt", 2012, 47377),
    ("jnlpba/Genia4ERtask2.iob2", 18546, 492551),
    ("jnlpba/Genia4EReval2.iob2", 3856, 101039),
    ("ptb-pos/train.txt", 3068, 73842),
])
def test_corpus_counts_match_sources(corpus, rel, n_sent, n_tok):
    sents = list(read_conll(str(corpus(rel))))
    assert (len(sents), sum(len(s) for s in sents)) == (n_sent, n_tok)


def _slice(src, dst, n_sentences):
    with open(dst, "w") as out:
        for s in itertools.islice(read_conll(str(src)), n_sentences):
            out.write("\n".join(" ".join(r) for r in s.rows) + "\n\n")
    return str(dst)


@pytest.mark.parametrize("task,train,test,algo,floor", [
    ("chunk", "conll2000/train.txt", "conll2000/test.txt", "perceptron", 85.0),
    ("chunk", "conll2000/train.txt", "conll2000/test.txt", "greedy", 83.0),
    ("pos", "ptb-pos/train.txt", "ptb-pos/test.txt", "perceptron", 90.0),
    ("ner", "conll2002/esp.train", "conll2002/esp.testb", "perceptron", 50.0),
])
def test_small_slice_learns(corpus, tmp_path, task, train, test, algo, floor):
    """1,000 training sentences, 3 epochs: far from the full-corpus figures, but a broken
    learner or decoder would land near the majority-label baseline, well below the floor."""
    tr = _slice(corpus(train), tmp_path / "train.txt", 1000)
    te = _slice(corpus(test), tmp_path / "test.txt", 300)
    tagger = train_tagger(TaggerConfig(task=task, algo=algo, epochs=3), tr)
    tagger.save(str(tmp_path / "m.model"))
    tagger = SequenceTagger.load(str(tmp_path / "m.model"))
    c = read_labelled(te, None)
    ids = tagger.predict_ids(tagger.encode(c.words, c.pos, c.offsets))
    o = c.offsets
    pred = [[tagger.labels[i] for i in ids[o[k]:o[k + 1]]] for k in range(len(o) - 1)]
    score = score_labels(task, c.label_sentences(), pred)
    key = "accuracy" if task == "pos" else "f1"
    assert score[key] > floor
    # the majority label alone scores far lower: the floor is above it
    maj = max(set(c.labels), key=c.labels.count)
    base = score_labels(task, c.label_sentences(), [[maj] * len(s) for s in c.label_sentences()])
    assert base[key] < floor
