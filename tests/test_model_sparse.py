"""Issue 42: the hashed weight tables stored sparse (model format 3), incompressible members
stored, lexicon counts made when first read, and a pipeline's parts read from memory. Expected
values are written by hand."""
from __future__ import annotations

import numpy as np
import pytest

from structkit.errors import UserError
from structkit.lattice.lexicon import PackedCounts
from structkit.model import dense_array, load_model, save_model, sparse_arrays, verified_parts


def test_sparse_arrays_keep_the_non_zero_weights_and_their_flat_positions():
    W = np.zeros((3, 4), dtype=np.float32)
    W[0, 1], W[2, 3], W[1, 0] = 1.5, -2.0, 0.25
    got = sparse_arrays("W", W)
    assert got["W_index"].tolist() == [1, 4, 11] and got["W_index"].dtype == np.int32
    assert got["W_vals"].tolist() == [1.5, 0.25, -2.0] and got["W_vals"].dtype == np.float32
    back = dense_array("W", got, (3, 4))
    assert back.dtype == np.float32 and back.shape == (3, 4) and np.array_equal(back, W)


@pytest.mark.parametrize("index, vals, problem", [
    ([0, 12], [1.0, 2.0], "out of range"),            # position 12 of a 3 x 4 table
    ([-1], [1.0], "out of range"),
    ([0, 1], [1.0], "differ in length"),
    ([0], [np.inf], "not finite"),
    ([0], [np.nan], "not finite"),
    ([0.0], [1.0], "out of range"),                   # positions that are not integers
])
def test_dense_array_refuses_what_sparse_arrays_never_writes(index, vals, problem):
    arrays = {"W_index": np.array(index), "W_vals": np.array(vals, dtype=np.float32)}
    with pytest.raises(ValueError, match=problem):
        dense_array("W", arrays, (3, 4))


def test_packed_counts_read_like_the_dicts_they_stand_for():
    c = PackedCounts({"casa": [3, 10, 7, 2], "di": []})
    assert c["casa"] == {3: 10, 7: 2} and c.get("di") == {} and c.get("xyz") is None
    assert "casa" in c and "xyz" not in c and len(c) == 2 and sorted(c) == ["casa", "di"]
    assert c["casa"] is c["casa"]              # made once: its ranking is cached by identity
    assert dict(c.items()) == {"casa": {3: 10, 7: 2}, "di": {}}
    with pytest.raises(KeyError):
        c["xyz"]


def test_a_verified_part_is_read_from_memory_without_its_checksum(tmp_path, monkeypatch):
    """A model's bytes given to :func:`verified_parts` load under their name with no file; its
    own checksum is not computed again there (the pipeline file's covers the bytes), but a
    file on disk with a wrong checksum is refused."""
    import structkit.model as model_mod

    path = tmp_path / "m.model"
    save_model(str(path), {"task": "demo"}, {"w": np.arange(5, dtype=np.float32)})
    assert load_model(str(path))[1]["w"].tolist() == [0, 1, 2, 3, 4]
    with verified_parts({"<mem>": path.read_bytes()}):
        _, got = load_model("<mem>")
    assert got["w"].tolist() == [0, 1, 2, 3, 4] and not (tmp_path / "<mem>").exists()
    monkeypatch.setattr(model_mod, "_checksum", lambda arrays: "0" * 64)
    save_model(str(tmp_path / "d.model"), {"task": "demo"}, {"w": np.arange(5, dtype=np.float32)})
    monkeypatch.undo()
    with pytest.raises(UserError, match="checksum mismatch"):
        load_model(str(tmp_path / "d.model"))
    with verified_parts({"<mem>": (tmp_path / "d.model").read_bytes()}):
        assert load_model("<mem>")[1]["w"].tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(UserError, match="no such model file"):   # the block is over
        load_model("<mem>")


def test_whole_tables_of_format_2_files_still_load(tmp_path, monkeypatch):
    """A pipeline whose tokenizer and morph model hold their tables whole (what format 2 wrote)
    loads to the same weights as the sparse file, and annotates alike."""
    import structkit
    import structkit.morph.task as morph_task
    import structkit.tokenizer.task as tok_task
    from conftest import FIXTURES
    from structkit.cli import main
    from structkit.pipeline.model import load_pipeline

    sparse = tmp_path / "sparse.model"
    with pytest.raises(SystemExit) as ei:
        main(["train", "--task", "pipeline", "--train", str(FIXTURES / "tiny_ud" / "train.conllu"),
              "--model", str(sparse), "-q"])
    assert ei.value.code in (0, None)
    model = load_pipeline(str(sparse))
    # weights set by hand (the tiny treebank's tagger and lemmatizer make no update)
    model.morph.W_tag[[5, 100, 4000]] = [0.5, -1.25, 2.0]
    model.morph.W_lem[[7, 9]] = [3.0, -0.5]
    W_tag, W_lem, W_tok = model.morph.W_tag.copy(), model.morph.W_lem.copy(), model.tokenizer.tokenizer.W.copy()
    assert np.count_nonzero(W_tok) > 0
    model.save(str(sparse))
    whole = str(tmp_path / "whole.model")
    for mod in (morph_task, tok_task):
        monkeypatch.setattr(mod, "sparse_arrays", lambda name, W: {name: W.astype(np.float32)})
    model.save(whole)
    monkeypatch.undo()
    for path in (whole, str(sparse)):
        got = load_pipeline(path)
        assert np.array_equal(got.morph.W_tag, W_tag) and np.array_equal(got.morph.W_lem, W_lem)
        assert np.array_equal(got.tokenizer.tokenizer.W, W_tok)
    text = "Il gatto dorme. Il cane mangia la mela."
    assert structkit.load(whole).to_conllu(text) == structkit.load(str(sparse)).to_conllu(text)
