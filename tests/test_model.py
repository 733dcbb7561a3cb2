"""Tests for model files (structkit.model) through SequenceTagger: round trip, refusing bad
files with a UserError naming the file, no pickle, atomic saves."""
from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

import structkit.model as model_mod
from structkit.errors import UserError
from structkit.io.conll import read_conll
from structkit.model import FORMAT_VERSION, load_model, save_model
from structkit.sequence.task import SequenceTagger, TaggerConfig, train_tagger

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHUNK_TRAIN = str(FIXTURES / "chunk_train.txt")
CHUNK_TEST = str(FIXTURES / "chunk_test.txt")


@pytest.fixture(scope="module")
def tagger() -> SequenceTagger:
    return train_tagger(TaggerConfig(task="chunk", epochs=3), CHUNK_TRAIN)


@pytest.fixture(scope="module")
def model_file(tagger, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("model") / "chunk.npz")
    tagger.save(path)
    return path


def predict(t: SequenceTagger, path: str = CHUNK_TEST) -> list[list[str]]:
    return [labels for _, batch in t.tag_batches(read_conll(path), path) for labels in batch]


def raw_arrays(path: str) -> tuple[dict, dict[str, np.ndarray]]:
    """The header and arrays of a model file, read without any checks."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays.pop("__header__").tobytes().decode("utf-8"))
    return header, arrays


def write_raw(path: str, header: dict, arrays: dict[str, np.ndarray]) -> None:
    blob = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    np.savez_compressed(path, __header__=blob, **arrays)


def load_error(path: str, **kw) -> str:
    with pytest.raises(UserError) as ei:
        SequenceTagger.load(path, **kw)
    msg = str(ei.value)
    assert msg.startswith(f"{path}: "), msg
    assert "\n" not in msg
    return msg


def no_temp_files(folder: Path) -> bool:
    return not [p for p in os.listdir(folder) if p.startswith(".tmp-")]


# ---- round trip ---------------------------------------------------------------------------
def test_round_trip_predicts_identically(tagger, model_file):
    loaded = SequenceTagger.load(model_file)
    assert loaded.labels == tagger.labels
    assert loaded.config == tagger.config
    assert loaded.columns == tagger.columns and loaded.n_columns == tagger.n_columns
    np.testing.assert_array_equal(loaded.weights.W, tagger.weights.W)
    np.testing.assert_array_equal(loaded.weights.T, tagger.weights.T)
    before = predict(tagger)
    assert predict(loaded) == before
    assert len(before) == 4 and all(lab in tagger.labels for s in before for lab in s)
    # The fixture is easy: a 3-epoch chunker gets most of the test tokens right.
    gold = [[r[-1] for r in s.rows] for s in read_conll(CHUNK_TEST)]
    right = sum(g == p for gs, ps in zip(gold, before) for g, p in zip(gs, ps))
    assert right / sum(map(len, gold)) > 0.8


def test_round_trip_of_the_feature_space(tagger, model_file):
    loaded = SequenceTagger.load(model_file)
    assert loaded.features.n_features == tagger.features.n_features
    assert [t.text for t in loaded.features.templates] == [t.text for t in tagger.features.templates]
    assert loaded.features.known_words() == tagger.features.known_words()
    assert loaded.info["train_tokens"] == tagger.info["train_tokens"]


def test_header_records_format_task_and_checksum(model_file):
    header, arrays = raw_arrays(model_file)
    assert header["format"] == "structkit-model"
    assert header["format_version"] == FORMAT_VERSION
    assert header["task"] == "chunk"
    assert len(header["checksum"]) == 64
    assert all(a.dtype != object for a in arrays.values())


def _deflated_as_level_says(path) -> bool:
    """Whether each member of the archive is deflated, or stored where :func:`_level` says of
    its first MB that deflating does not pay, and the header deflated."""
    with zipfile.ZipFile(path) as z:
        for i in z.infolist():
            a = np.load(io.BytesIO(z.read(i)), allow_pickle=False).reshape(-1)
            stored = model_mod._level(a[:model_mod._PROBE_BYTES // max(a.itemsize, 1)].tobytes()) is None
            if i.compress_type != (zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED):
                return False
        return z.getinfo("__header__.npy").compress_type == zipfile.ZIP_DEFLATED


def test_saves_deflate_and_scratch_saves_store(tagger, model_file, tmp_path):
    """Models are deflated (but arrays that do not compress); a scratch save (a model card's
    scoring copy) stores the same arrays uncompressed; both load to the same predictions."""
    assert _deflated_as_level_says(model_file)
    scratch = str(tmp_path / "scratch.npz")
    with model_mod.scratch_saves():
        tagger.save(scratch)
    with zipfile.ZipFile(scratch) as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
    a, b = raw_arrays(model_file), raw_arrays(scratch)
    assert a[0]["checksum"] == b[0]["checksum"] and a[1].keys() == b[1].keys()
    assert all(np.array_equal(a[1][k], b[1][k]) for k in a[1])
    assert predict(SequenceTagger.load(scratch)) == predict(SequenceTagger.load(model_file))
    tagger.save(str(tmp_path / "after.npz"))   # the block is over: deflated again
    assert _deflated_as_level_says(tmp_path / "after.npz")


def test_deflate_level_follows_what_the_data_gives():
    """Level 6 where level 1 shrinks an array's first MB to under a quarter (a table mostly of
    zeros), level 1 where it shrinks it to between a quarter and 70% (the ascending positions
    of a sparse table: about 37%), stored (None) where it does not shrink it by 30% (random
    float weights: about 90%; random bytes, or an already compressed part: 100%)."""
    rng = np.random.default_rng(0)
    assert model_mod._level(bytes(1 << 21)) == model_mod.COMPRESSIBLE_LEVEL
    positions = np.sort(rng.choice(1 << 22, 1 << 18, replace=False)).astype(np.int32).tobytes()
    assert model_mod._level(positions) == model_mod.COMPRESS_LEVEL
    assert model_mod._level(rng.random(1 << 18, dtype=np.float32).tobytes()) is None
    assert model_mod._level(rng.integers(0, 256, 1 << 18, dtype=np.uint8).tobytes()) is None
    assert model_mod._level(b"") == model_mod.COMPRESS_LEVEL


def test_write_npz_keeps_every_array_as_numpy_would(tmp_path):
    """Every kind of array comes back as from np.savez: empty, 0-d, strings, bool, Fortran order
    (kept in Fortran order), strided."""
    arrays = {"empty": np.zeros(0, np.float32), "scalar": np.float64(3.0), "text": np.array(["ab", "c"]),
              "mask": np.ones((3, 2), bool), "transposed": np.arange(6).reshape(2, 3).T,
              "strided": np.arange(24.0)[::3], "zeros": np.zeros(1 << 19, np.float32)}
    for compress in (True, False):
        path = tmp_path / f"a{compress}.npz"
        with open(path, "wb") as f:
            model_mod.write_npz(f, arrays, compress=compress)
        with np.load(path, allow_pickle=False) as z:
            assert sorted(z.files) == sorted(arrays)
            for k, a in arrays.items():
                assert z[k].dtype == np.asarray(a).dtype and z[k].shape == np.shape(a)
                assert np.array_equal(z[k], a)
            assert z["transposed"].flags.f_contiguous and not z["transposed"].flags.c_contiguous


def test_save_model_writes_with_the_permissions_of_a_plain_file(tmp_path):
    path = tmp_path / "m.npz"
    save_model(str(path), {"task": "chunk"}, {"a": np.arange(3)})
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    header, arrays = load_model(str(path))
    np.testing.assert_array_equal(arrays["a"], np.arange(3))


# ---- refusing bad files -------------------------------------------------------------------
def test_missing_model_file(tmp_path):
    assert "no such model file" in load_error(str(tmp_path / "missing.npz"))


def test_directory_is_not_a_model(tmp_path):
    assert "directory" in load_error(str(tmp_path))


@pytest.mark.parametrize("keep", [0, 10, 100, 0.5, -1])
def test_truncated_model_file(model_file, tmp_path, keep):
    data = Path(model_file).read_bytes()
    n = int(len(data) * keep) if isinstance(keep, float) else (len(data) - 1 if keep == -1 else keep)
    path = tmp_path / "truncated.npz"
    path.write_bytes(data[:n])
    load_error(str(path))


def test_random_bytes_file(tmp_path):
    path = tmp_path / "random.npz"
    path.write_bytes(np.random.default_rng(1).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    assert "not a structkit model file" in load_error(str(path))


def test_text_file(tmp_path):
    path = tmp_path / "notes.npz"
    path.write_text("The DT B-NP\n")
    load_error(str(path))


def test_damaged_compressed_data(model_file, tmp_path):
    # Bytes flipped inside a compressed member: zlib or CRC errors, never a traceback.
    data = bytearray(Path(model_file).read_bytes())
    for i in range(len(data) // 3, len(data) // 3 + 64):
        data[i] ^= 0xFF
    path = tmp_path / "flipped.npz"
    path.write_bytes(bytes(data))
    load_error(str(path))


def test_npy_file_is_not_a_model(tmp_path):
    path = tmp_path / "array.npz"
    with open(path, "wb") as f:
        np.save(f, np.arange(5))
    assert "not a structkit model file" in load_error(str(path))


def test_valid_npz_that_is_not_a_model(tmp_path):
    path = str(tmp_path / "other.npz")
    np.savez(path, weights=np.ones((3, 3)))
    assert "no header" in load_error(path)


def test_zip_that_is_not_an_npz(tmp_path):
    path = str(tmp_path / "other.npz")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("__header__", "{}")
        z.writestr("readme.txt", "hello")
    assert "not a structkit model file" in load_error(path)


def test_npz_with_a_foreign_json_header(tmp_path):
    path = str(tmp_path / "other.npz")
    write_raw(path, {"format": "something-else", "format_version": 1}, {"a": np.zeros(2)})
    assert "unknown format" in load_error(path)
    path2 = str(tmp_path / "other2.npz")
    np.savez(path2, __header__=np.frombuffer(b"\xff\xfe not json", dtype=np.uint8))
    assert "unreadable header" in load_error(path2)


def test_other_format_version(model_file, tmp_path):
    header, arrays = raw_arrays(model_file)
    header["format_version"] = FORMAT_VERSION + 1
    path = str(tmp_path / "future.npz")
    write_raw(path, header, arrays)
    msg = load_error(path)
    assert f"format version {FORMAT_VERSION + 1}" in msg and "retrain" in msg


def test_altered_arrays_fail_the_checksum(model_file, tmp_path):
    header, arrays = raw_arrays(model_file)
    arrays["W_vals"] = arrays["W_vals"].copy()
    arrays["W_vals"][0] += 1.0
    path = str(tmp_path / "altered.npz")
    write_raw(path, header, arrays)
    assert "checksum" in load_error(path)


def test_removed_array_fails_the_checksum(model_file, tmp_path):
    header, arrays = raw_arrays(model_file)
    del arrays["T2"]
    path = str(tmp_path / "partial.npz")
    write_raw(path, header, arrays)
    assert "checksum" in load_error(path)


def test_consistent_checksum_but_damaged_contents(model_file, tmp_path):
    # Arrays changed and the checksum recomputed: the structural checks still refuse it.
    header, arrays = raw_arrays(model_file)
    arrays["T"] = np.zeros((2, 2))
    header["checksum"] = model_mod._checksum(arrays)
    path = str(tmp_path / "inconsistent.npz")
    write_raw(path, header, arrays)
    assert "damaged model file" in load_error(path)


def test_model_for_another_task(model_file):
    msg = load_error(model_file, command="tag", tasks=("pos",))
    assert "'chunk'" in msg and "structkit tag" in msg and "pos model" in msg
    # Without a task restriction it loads.
    assert SequenceTagger.load(model_file).config.task == "chunk"


# ---- no pickle ----------------------------------------------------------------------------
def test_load_never_unpickles(model_file, monkeypatch):
    # The loader reads .npy members itself (sizes checked first); neither np.load nor pickle runs.
    import pickle

    def refuse(*args, **kwargs):
        raise AssertionError("np.load or pickle was called")

    monkeypatch.setattr(model_mod.np, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    SequenceTagger.load(model_file)


def test_object_array_is_refused_not_executed(model_file, tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        # Unpickling this would create the marker file.
        def __reduce__(self):
            return (open, (str(marker), "w"))

    header, arrays = raw_arrays(model_file)
    arrays["labels"] = np.array([Evil()], dtype=object)
    path = str(tmp_path / "evil.npz")
    write_raw(path, header, arrays)  # savez pickles object arrays
    with zipfile.ZipFile(path) as z:
        assert "labels.npy" in z.namelist()
    load_error(path)
    assert not marker.exists()


# ---- atomic saves -------------------------------------------------------------------------
def test_failed_save_leaves_nothing_behind(tagger, tmp_path, monkeypatch):
    def boom(f, *args, **kwargs):
        f.write(b"PK\x03\x04 half a model")
        raise OSError("disk full")

    monkeypatch.setattr(model_mod, "write_npz", boom)
    target = tmp_path / "m.npz"
    # a failed write is one line (issue 30 item 6), and nothing is left behind
    with pytest.raises(UserError, match="cannot write the model: disk full"):
        tagger.save(str(target))
    assert not target.exists()
    assert os.listdir(tmp_path) == []


def test_failed_save_keeps_the_previous_model(tagger, tmp_path, monkeypatch):
    target = tmp_path / "m.npz"
    tagger.save(str(target))
    before = target.read_bytes()

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(model_mod, "write_npz", boom)
    with pytest.raises(KeyboardInterrupt):
        tagger.save(str(target))
    assert target.read_bytes() == before
    assert no_temp_files(tmp_path)
    SequenceTagger.load(str(target))


def test_save_to_a_missing_folder_or_a_directory(tagger, tmp_path):
    with pytest.raises(UserError, match="folder does not exist"):
        tagger.save(str(tmp_path / "nope" / "m.npz"))
    (tmp_path / "d").mkdir()
    with pytest.raises(UserError, match="is a directory"):
        tagger.save(str(tmp_path / "d"))
    assert sorted(os.listdir(tmp_path)) == ["d"]
    assert os.listdir(tmp_path / "d") == []
