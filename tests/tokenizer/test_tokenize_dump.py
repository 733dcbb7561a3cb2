"""structkit dump on a tokenizer model (was a traceback: the tokenizer wing had no dump): its
facts, the transition weights the model holds, and the multiword tokens of its training data."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

UD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                  "structkit", "data", "sample", "ud", "train.conllu")


@pytest.fixture(scope="module")
def tok_model(tmp_path_factory):
    from structkit.tasks import make_config
    from structkit.tokenizer.task import train_tokenizer

    path = tmp_path_factory.mktemp("tokdump") / "tok.model"
    train_tokenizer(make_config({"task": "tokenize", "epochs": 2}), UD).save(str(path))
    return path


def training_multiwords() -> dict[str, list[str]]:
    """Each multiword token of the training file with its words."""
    out: dict[str, list[str]] = {}
    rows = [ln.split("\t") for ln in open(UD, encoding="utf-8") if ln.strip() and not ln.startswith("#")]
    for k, r in enumerate(rows):
        m = re.fullmatch(r"(\d+)-(\d+)", r[0])
        if m:
            n = int(m.group(2)) - int(m.group(1)) + 1
            out[r[1]] = [x[1] for x in rows[k + 1:k + 1 + n]]
    return out


def test_dump_of_a_tokenizer(sk, tok_model):
    from structkit.tokenizer.task import TokenizerModel

    r = sk("dump", "-m", tok_model, "--top", "50")
    assert r.code == 0, r.err
    assert r.out.startswith("task tokenize, algo pa")
    assert "Traceback" not in r.out + r.err
    model = TokenizerModel.load(str(tok_model))
    # the transition rows are the model's T (previous label by row, next by column)
    lines = r.out.splitlines()
    at = lines.index("label transitions (row: previous, column: next):")
    shown = np.array([[float(x) for x in ln.split()[1:]] for ln in lines[at + 2:at + 7]])
    assert shown == pytest.approx(np.asarray(model.tokenizer.T)[:, :4], abs=1e-3)
    # every multiword token of the training data is listed with its words
    mwt = training_multiwords()
    assert mwt
    for form, words in mwt.items():
        assert f"  {form} -> {' '.join(words)}" in lines


def test_dump_feature_filter_and_top(sk, tok_model):
    r = sk("dump", "-m", tok_model, "--top", "1", "--feature", "n't")
    assert r.code == 0, r.err
    listed = [ln for ln in r.out.splitlines() if " -> " in ln]
    assert listed and all("n't" in ln.split(" -> ")[0] for ln in listed)
    assert len([ln for ln in listed if not ln.lstrip().startswith("-")]) <= 1
