"""Issue 42: the hashed weight tables stored sparse (model format 3), incompressible members
stored, lexicon counts made when first read, and a pipeline's parts read from memory. Expected
values are written by hand."""
from __future__ import annotations

import numpy as np
import pytest

from structkit.errors import UserError
from structkit.lattice.lexicon import PackedCounts
from structkit.model import dense_array, load_model, save_model, sparse_arrays, verified_parts


def test_sparse_arrays_keep_the_non_zero_weights_and_the_gaps_between_them():
    W = np.zeros((3, 4), dtype=np.float32)
    W[0, 1], W[2, 3], W[1, 0] = 1.5, -2.0, 0.25
    got = sparse_arrays("W", W)
    # flat positions 1, 4, 11: one zero before the first, two between it and the next, six after
    assert got["W_gaps"].tolist() == [1, 2, 6] and got["W_gaps"].dtype == np.uint8
    assert got["W_vals"].tolist() == [1.5, 0.25, -2.0] and got["W_vals"].dtype == np.float32
    back = dense_array("W", got, (3, 4))
    assert back.dtype == np.float32 and back.shape == (3, 4) and np.array_equal(back, W)


@pytest.mark.parametrize("positions, gaps, kind", [
    ([], [], np.uint8),                              # no weight at all
    ([0, 1, 2], [0, 0, 0], np.uint8),                # no zero between them
    ([255], [255], np.uint8),                        # the largest gap a byte holds
    ([256], [256], np.uint16),
    ([0, 70_000], [0, 69_999], np.uint32),
])
def test_the_gaps_take_the_narrowest_unsigned_type_that_holds_them(positions, gaps, kind):
    W = np.zeros(70_001, dtype=np.float32)
    W[positions] = 1.0
    got = sparse_arrays("W", W)
    assert got["W_gaps"].tolist() == gaps and got["W_gaps"].dtype == kind
    assert np.array_equal(dense_array("W", got, W.shape), W)


@pytest.mark.parametrize("gaps, vals, problem", [
    (np.array([0, 12], dtype=np.uint8), [1.0, 2.0], "out of range"),    # positions 0 and 13 of 12
    (np.array([11, 0], dtype=np.uint8), [1.0, 2.0], "out of range"),    # 11 and 12
    (np.array([12], dtype=np.uint16), [1.0], "out of range"),
    (np.array([1 << 63, 1 << 63], dtype=np.uint64), [1.0, 2.0], "out of range"),  # a sum that wraps
    (np.array([0, 1], dtype=np.int8), [1.0, 2.0], "out of range"),      # signed gaps
    (np.array([0.0]), [1.0], "out of range"),                           # not integers
    (np.array([0, 1], dtype=np.uint8), [1.0], "differ in length"),
    (np.zeros(13, dtype=np.uint8), [1.0] * 13, "out of range"),         # more weights than places
    (np.array([0], dtype=np.uint8), [np.inf], "not finite"),
])
def test_dense_array_refuses_gaps_sparse_arrays_never_writes(gaps, vals, problem):
    arrays = {"W_gaps": gaps, "W_vals": np.array(vals, dtype=np.float32)}
    with pytest.raises(ValueError, match=problem):
        dense_array("W", arrays, (3, 4))


def test_format_3_positions_are_still_read():
    arrays = {"W_index": np.array([1, 4, 11], dtype=np.int32), "W_vals": np.array([1.5, 0.25, -2.0], np.float32)}
    want = np.zeros(12, dtype=np.float32)
    want[[1, 4, 11]] = [1.5, 0.25, -2.0]
    assert np.array_equal(dense_array("W", arrays, (3, 4)), want.reshape(3, 4))


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


def test_packed_counts_from_arrays_read_like_the_dicts_they_stand_for():
    """Format 4: key i's [id, count, ...] list is pairs[ptr[i]:ptr[i + 1]]."""
    c = PackedCounts.from_arrays(["casa", "di", "a"], np.array([0, 4, 4, 6]), np.array([3, 10, 7, 2, 0, 1]))
    assert c["casa"] == {3: 10, 7: 2} and c["di"] == {} and c.get("a") == {0: 1} and c.get("xyz") is None
    assert "di" in c and "xyz" not in c and len(c) == 3 and list(c) == ["casa", "di", "a"]
    assert c["casa"] is c["casa"]
    assert all(type(k) is int and type(v) is int for k, v in c["casa"].items())   # not numpy scalars
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


def _depth_by_hand(text: str) -> int:
    """The reference: a character-by-character scan of JSON text, as its grammar reads it."""
    depth = best = 0
    inside = escaped = False
    for ch in text:
        if inside:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                inside = False
        elif ch == '"':
            inside = True
        elif ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth -= 1
    return best


@pytest.mark.parametrize("text, depth", [
    ("", 0),
    ('{"a": [1, [2]]}', 3),
    ('{"a": "[[[[", "b": [1]}', 2),                  # brackets in a string do not nest
    ('["\\"[[[", 1]', 1),                             # nor after an escaped quote
    ('["\\\\", [[0]]]', 3),                           # an escaped backslash ends before the quote
    ('["\\\\\\"[[", [0]]', 2),                        # three backslashes: the quote is escaped
    ('{"k": "é]]]]", "x": [[["ü"]]]}', 4),            # multi-byte characters
    ('["]]]", "[[[", [["a\\\\"]]]', 3),
])
def test_header_depth_counts_brackets_outside_strings(text, depth):
    from structkit.model import _max_depth

    assert _depth_by_hand(text) == depth                 # the reference agrees with the hand value
    assert _max_depth(text.encode("utf-8")) == depth


def test_header_depth_and_digit_runs_agree_with_the_reference_on_random_json():
    import json
    import random

    from structkit.model import _longest_digit_run, _max_depth

    rng = random.Random(7)
    alphabet = ['"', "\\", "[", "]", "{", "}", "a", "1", "é", " "]

    def value(d):
        r = rng.random()
        if d > 5 or r < 0.3:
            return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        if r < 0.4:
            return rng.randint(0, 10 ** rng.randint(0, 25))
        if r < 0.7:
            return [value(d + 1) for _ in range(rng.randint(0, 3))]
        return {str(value(6)): value(d + 1) for _ in range(rng.randint(0, 3))}

    for _ in range(300):
        text = json.dumps(value(0), ensure_ascii=rng.random() < 0.5)
        raw = text.encode("utf-8")
        assert _max_depth(raw) == _depth_by_hand(text), text
        runs = [len(m) for m in "".join(c if c.isascii() and c.isdigit() else " " for c in text).split()]
        assert _longest_digit_run(raw) == max(runs, default=0), text
