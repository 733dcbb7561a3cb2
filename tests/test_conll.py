"""Tests for structkit.io.conll: reading CoNLL column files and raw text, --columns, writing."""
from __future__ import annotations

import hashlib
import io
import sys
from pathlib import Path

import pytest

from structkit.errors import UserError
from structkit.io.conll import Columns, Sentence, read_conll, read_text, write_conll

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def write_bytes(tmp_path: Path, data: bytes, name: str = "in.txt") -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def write(tmp_path: Path, text: str, name: str = "in.txt") -> str:
    return write_bytes(tmp_path, text.encode("utf-8"), name)


def read(path: str, **kw) -> list[Sentence]:
    return list(read_conll(path, **kw))


def words(sents: list[Sentence]) -> list[list[str]]:
    return [[r[0] for r in s.rows] for s in sents]


def error_of(fn, *args, **kw) -> UserError:
    with pytest.raises(UserError) as ei:
        result = fn(*args, **kw)
        if not isinstance(result, list):
            list(result)
    return ei.value


# ---- sentence boundaries ------------------------------------------------------------------
def test_blank_lines_separate_sentences_and_first_lines_are_recorded(tmp_path):
    path = write(tmp_path, "a DT B-NP\nb NN I-NP\n\nc VB B-VP\n")
    sents = read(path)
    assert words(sents) == [["a", "b"], ["c"]]
    assert [s.first_line for s in sents] == [1, 4]
    assert sents[0].rows[1] == ["b", "NN", "I-NP"]
    assert len(sents[0]) == 2


def test_several_blank_lines_and_whitespace_only_lines_are_one_boundary(tmp_path):
    path = write(tmp_path, "\n\na x\n\n\n  \n\t\nb y\nc z\n\n\n\n")
    sents = read(path)
    assert words(sents) == [["a"], ["b", "c"]]
    assert [s.first_line for s in sents] == [3, 8]


@pytest.mark.parametrize("marker", ["-DOCSTART- -X- O", "-DOCSTART- -X- -X- O", "###MEDLINE:12345"])
def test_document_markers_are_boundaries_not_tokens(tmp_path, marker):
    # The marker sits directly after a token row (no blank line) and before the next one.
    path = write(tmp_path, f"{marker}\n\na x\nb y\n{marker}\nc z\n")
    sents = read(path)
    assert words(sents) == [["a", "b"], ["c"]]
    assert [s.first_line for s in sents] == [3, 6]


def test_final_sentence_without_trailing_newline(tmp_path):
    path = write(tmp_path, "a x\n\nb y\nc z")
    sents = read(path)
    assert words(sents) == [["a"], ["b", "c"]]
    assert sents[-1].rows[-1] == ["c", "z"]


# ---- separators and encodings -------------------------------------------------------------
def test_tab_separated_columns_keep_spaces_inside_a_column(tmp_path):
    path = write(tmp_path, "New York\tNNP\tB-LOC\nis\tVBZ\tO\n")
    (s,) = read(path)
    assert s.rows == [["New York", "NNP", "B-LOC"], ["is", "VBZ", "O"]]


def test_space_separated_columns_split_on_runs_of_whitespace(tmp_path):
    path = write(tmp_path, "a   DT  B-NP\n  b NN I-NP  \n")
    (s,) = read(path)
    assert s.rows == [["a", "DT", "B-NP"], ["b", "NN", "I-NP"]]


def test_crlf_line_endings(tmp_path):
    path = write_bytes(tmp_path, b"a\tx\r\nb\tY\r\n\r\nc\tz\r\n")
    sents = read(path)
    assert [s.rows for s in sents] == [[["a", "x"], ["b", "Y"]], [["c", "z"]]]
    assert [s.first_line for s in sents] == [1, 4]


def test_utf8_bom_is_dropped(tmp_path):
    path = write_bytes(tmp_path, "\ufeffé x\nb y\n".encode("utf-8"))
    (s,) = read(path)
    assert s.rows[0] == ["é", "x"]


def test_non_ascii_utf8(tmp_path):
    path = write(tmp_path, "Zürich NNP B-LOC\n東京 NNP B-LOC\n")
    (s,) = read(path)
    assert [r[0] for r in s.rows] == ["Zürich", "東京"]


def test_stdin_dash_reads_bytes_stream(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a x\nb y\n\nc z\n"), encoding="utf-8"))
    sents = read("-")
    assert words(sents) == [["a", "b"], ["c"]]


def test_stdin_dash_reads_text_stream_without_buffer(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("a x\r\n\r\nb y"))
    assert words(read("-")) == [["a"], ["b"]]


def test_stdin_errors_are_named_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a x\nb\n"), encoding="utf-8"))
    e = error_of(read, "-")
    assert str(e) == "<stdin>:2: expected 2 columns, found 1"


def test_explicit_stream_argument(tmp_path):
    sents = list(read_conll("whatever.txt", io.StringIO("a x\n\nb y\n")))
    assert words(sents) == [["a"], ["b"]]


def test_digest_is_updated_with_every_line(tmp_path):
    path = write(tmp_path, "a x\n\nb y\n")
    d = hashlib.sha256()
    read(path, digest=d)
    assert d.hexdigest() == hashlib.sha256(b"a x\n\nb y\n").hexdigest()


def test_sentences_are_streamed(tmp_path):
    # The first sentence is yielded before the malformed row further down is read.
    path = write(tmp_path, "a x\n\nb y z\n")
    it = read_conll(path)
    assert next(it).rows == [["a", "x"]]
    with pytest.raises(UserError, match=r":3: expected 2 columns, found 3"):
        next(it)


# ---- errors with exact locations ----------------------------------------------------------
def test_inconsistent_column_count_names_the_line(tmp_path):
    path = write(tmp_path, "a DT B-NP\nb NN I-NP\n\nc VB B-VP\nd NN\n")
    e = error_of(read, path)
    assert str(e) == f"{path}:5: expected 3 columns, found 2"
    assert (e.path, e.line) == (path, 5)


def test_inconsistent_column_count_across_sentences(tmp_path):
    path = write(tmp_path, "a x\n\n\nb y z\n")
    assert str(error_of(read, path)) == f"{path}:4: expected 2 columns, found 3"


def test_n_columns_is_enforced_from_the_first_row(tmp_path):
    path = write(tmp_path, "a x y\n")
    assert str(error_of(read, path, n_columns=2)) == f"{path}:1: expected 2 columns, found 3"


def test_empty_file(tmp_path):
    path = write(tmp_path, "")
    assert str(error_of(read, path)) == f"{path}: empty file: no sentences found"


def test_file_with_only_blank_lines_and_markers_is_empty(tmp_path):
    path = write(tmp_path, "\n\n-DOCSTART- -X- O\n\n")
    assert "empty file" in str(error_of(read, path))


def test_invalid_utf8_on_line_2(tmp_path):
    path = write_bytes(tmp_path, b"a x\nb\xff y\nc z\n")
    e = error_of(read, path)
    assert str(e).startswith(f"{path}:2: not valid UTF-8 text")
    assert e.line == 2


def test_empty_column_from_double_tab(tmp_path):
    path = write(tmp_path, "a\tx\tB-NP\nb\t\tI-NP\n")
    e = error_of(read, path)
    assert str(e).startswith(f"{path}:2: empty column")


def test_trailing_tab_is_an_empty_column(tmp_path):
    path = write(tmp_path, "a\tx\n\nb\tx\t\n")
    assert str(error_of(read, path)).startswith(f"{path}:3: empty column")


def test_missing_file_and_directory(tmp_path):
    missing = str(tmp_path / "nope.txt")
    assert str(error_of(read, missing)) == f"{missing}: no such file"
    assert str(error_of(read, str(tmp_path))) == f"{tmp_path}: is a directory, not a file"


# ---- --columns ----------------------------------------------------------------------------
@pytest.mark.parametrize("spec, expected", [
    ("word,pos,label", Columns(0, 1, 2)),
    ("word,label", Columns(0, None, 1)),
    ("word,-,label", Columns(0, None, 2)),
    ("word,-,pos,label", Columns(0, 2, 3)),
    ("label, word , POS", Columns(1, 2, 0)),
    ("word", Columns(0, None, None)),
    ("-,word", Columns(1, None, None)),
])
def test_columns_parse_good(spec, expected):
    assert Columns.parse(spec) == expected


@pytest.mark.parametrize("spec", ["", "pos,label", "word,pos,pos", "word,word", "word,lemma,lemma",
                                  "word,label,label", "word;pos", "words,pos", "word,shape,label",
                                  "word,feats.Number"])
def test_columns_parse_bad(spec):
    with pytest.raises(UserError, match="--columns"):
        Columns.parse(spec)


def test_columns_named_by_the_user():
    """Names other than word, pos and label are columns feature templates can read."""
    c = Columns.parse("word,pos,cluster,label")
    assert (c.word, c.pos, c.label) == (0, 1, 3) and c.index("cluster") == 2
    sents = [Sentence.from_rows([["a", "DT", "c7", "O"], ["b", "NN", "_", "O"]], 1)]
    assert c.values(sents, "cluster") == ["c7", None]  # '_' fires nothing
    assert c.values(sents, "lemma") is None
    assert c.to_spec(4) == "word,pos,cluster,label"


def test_columns_default_and_spec_round_trip():
    assert Columns.default(3) == Columns(0, 1, 2)
    assert Columns.default(2) == Columns(0, None, 1)
    assert Columns.default(1) == Columns(0, None, None)
    assert Columns.default(2, labelled=False) == Columns(0, 1, None)
    assert Columns.default(1, labelled=False) == Columns(0, None, None)
    assert Columns(0, 1, 2).to_spec(3) == "word,pos,label"
    assert Columns(0, None, 2).to_spec(3) == "word,-,label"
    assert Columns.parse(Columns(0, 2, 3).to_spec(4)) == Columns(0, 2, 3)
    assert Columns(0, 2, 3).max_index() == 3


# ---- raw text -----------------------------------------------------------------------------
def test_read_text(tmp_path):
    path = write(tmp_path, "The cat  sat .\n\n   \nA dog\tbarked\r\n")
    sents = list(read_text(path))
    assert [s.rows for s in sents] == [[["The"], ["cat"], ["sat"], ["."]], [["A"], ["dog"], ["barked"]]]
    assert [s.first_line for s in sents] == [1, 4]


def test_read_text_stdin_and_empty(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbfHello world\n")))
    assert [s.rows for s in read_text("-")] == [[["Hello"], ["world"]]]
    path = write(tmp_path, "\n \n")
    with pytest.raises(UserError, match="empty file"):
        list(read_text(path))


def test_read_text_invalid_utf8(tmp_path):
    path = write_bytes(tmp_path, b"fine\n\xc3(\n")
    with pytest.raises(UserError, match=r":2: not valid UTF-8"):
        list(read_text(path))


# ---- writing ------------------------------------------------------------------------------
def test_write_conll_appends_one_column_and_a_blank_line_per_sentence():
    sents = [Sentence.from_rows([["The", "DT"], ["cat", "NN"]], 1), Sentence.from_rows([["Hi", "UH"]], 4)]
    out = io.StringIO()
    write_conll(sents, [["B-NP", "I-NP"], ["O"]], out)
    assert out.getvalue() == "The DT B-NP\ncat NN I-NP\n\nHi UH O\n\n"


def test_write_conll_custom_separator():
    out = io.StringIO()
    write_conll([Sentence.from_rows([["a"]], 1)], [["X"]], out, sep="\t")
    assert out.getvalue() == "a\tX\n\n"


def test_write_conll_output_reads_back(tmp_path):
    src = write(tmp_path, "New York\tNNP\nis\tVBZ\n\nOK\tUH\n")
    sents = read(src)
    out = io.StringIO()
    write_conll(sents, [["B-LOC", "O"], ["O"]], out)
    back = list(read_conll("out", io.StringIO(out.getvalue())))
    assert [s.rows for s in back] == [[["New York", "NNP", "B-LOC"], ["is", "VBZ", "O"]],
                                      [["OK", "UH", "O"]]]


def test_fixtures_are_well_formed():
    for name, n_cols in [("chunk_train.txt", 3), ("chunk_test.txt", 3), ("pos_train.txt", 2),
                         ("ner_train.txt", 3)]:
        sents = read(str(FIXTURES / name))
        assert len(sents) >= 4
        assert all(len(r) == n_cols for s in sents for r in s.rows)
