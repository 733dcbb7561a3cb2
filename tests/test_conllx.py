"""Tests for structkit.io.conllx: CoNLL-X / CoNLL-U / `word POS` reading, validation, writing."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from structkit.errors import UserError
from structkit.io.conllx import check_tree, is_projective, read_conllx, write_conllx
from structkit.io.document import Sentence



def rows(*lines: str) -> str:
    """Join rows written with '|' for tabs (keeps fixtures readable), one per line."""
    return "".join(line.replace("|", "\t") + "\n" for line in lines)


def write(tmp_path: Path, text: str, name: str = "in.conll") -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def read(path: str) -> list[Sentence]:
    return list(read_conllx(path))


CONLLX = rows(
    "1|Ms.|_|NNP|NNP|_|2|_|_|_",
    "2|Haag|_|NNP|NNP|_|3|_|_|_",
    "3|plays|_|VBZ|VBZ|_|0|_|_|_",
    "4|Elianti|_|NNP|NNP|_|3|_|_|_",
    "5|.|_|.|.|_|3|_|_|_",
    "",
    "1|Hi|hi|UH|UH|_|0|ROOT|_|_",
    "2|!|!|.|.|_|1|P|_|_",
)

CONLLU = rows(
    "# newdoc id = d1",
    "# sent_id = 1",
    "# text = I wanna go.",
    "1|I|I|PRON|PRP|Case=Nom|2|nsubj|_|_",
    "2-3|wanna|_|_|_|_|_|_|_|_",
    "2|wan|want|VERB|VBP|_|0|root|_|_",
    "3|na|to|PART|TO|_|4|mark|_|_",
    "4|go|go|VERB|VB|VerbForm=Inf|2|xcomp|_|SpaceAfter=No",
    "4.1|went|go|VERB|VBD|_|_|_|2:conj|CopyOf=4",
    "5|.|.|PUNCT|.|_|2|punct|_|_",
    "",
    "",
    "# sent_id = 2",
    "1|Sue|Sue|PROPN|NNP|_|2|nsubj|_|_",
    "2|likes|like|VERB|VBZ|_|0|root|_|_",
    "2.1|likes|like|VERB|VBZ|_|_|_|0:root|_",
    "3|coffee|coffee|NOUN|NN|_|2|obj|_|_",
    "",
)


# ----------------------------------------------------------------------------- reading

def test_conllx_basic(tmp_path):
    sents = read(write(tmp_path, CONLLX))
    assert len(sents) == 2
    s = sents[0]
    assert s.forms == ["Ms.", "Haag", "plays", "Elianti", "."]
    assert s.heads == [2, 3, 0, 3, 3]
    assert s.upos == s.xpos == ["NNP", "NNP", "VBZ", "NNP", "."]
    assert s.lemmas == ["_"] * 5 and s.deprels == ["_"] * 5
    assert s.line_of(0) == 1 and s.comments == [] and s.multiword == []
    # The last sentence has no trailing blank line and still counts.
    assert sents[1].forms == ["Hi", "!"] and sents[1].deprels == ["ROOT", "P"]
    assert sents[1].line_of(0) == 7


def test_reader_is_lazy(tmp_path):
    # An error late in the file only surfaces once the reader gets there.
    path = write(tmp_path, CONLLX + "\n1|x|_|X|X|_|nope|_|_|_\n".replace("|", "\t"))
    it = read_conllx(path)
    assert next(it).forms[0] == "Ms."
    assert next(it).forms[0] == "Hi"
    with pytest.raises(UserError):
        next(it)


def test_conllu_comments_ranges_empty_nodes(tmp_path):
    sents = read(write(tmp_path, CONLLU, "in.conllu"))
    assert len(sents) == 2
    s = sents[0]
    assert s.comments == ["# newdoc id = d1", "# sent_id = 1", "# text = I wanna go."]
    assert s.forms == ["I", "wan", "na", "go", "."]  # no range line, no empty node
    assert s.multiword == [(2, 3, "wanna")]
    assert s.heads == [2, 0, 4, 2, 2]
    assert s.upos == ["PRON", "VERB", "PART", "VERB", "PUNCT"]
    assert s.xpos == ["PRP", "VBP", "TO", "VB", "."]
    assert s.feats[0] == "Case=Nom" and s.lemmas[1] == "want"
    assert s.deprels == ["nsubj", "root", "mark", "xcomp", "punct"]
    assert s.line_of(0) == 4
    t = sents[1]
    assert t.comments == ["# sent_id = 2"] and t.forms == ["Sue", "likes", "coffee"]
    assert t.heads == [2, 0, 2] and t.line_of(0) == 14


def test_missing_heads_are_none(tmp_path):
    path = write(tmp_path, rows("1|a|_|DT|DT|_|_|_|_|_", "2|b|_|NN|NN|_|_|_|_|_"))
    (s,) = read(path)
    assert s.heads is None and s.forms == ["a", "b"]


def test_simple_two_column_layout(tmp_path):
    # Tab- or space-separated; '#' is a real PTB word here, not a comment.
    text = "#\t#\nThe DT\ncat\tNN\n\n\n\nsat VBD\n# #\n"
    sents = read(write(tmp_path, text, "tagged.txt"))
    assert [s.forms for s in sents] == [["#", "The", "cat"], ["sat", "#"]]
    assert sents[0].upos == sents[0].xpos == ["#", "DT", "NN"]
    assert all(s.heads is None and s.comments == [] for s in sents)
    assert sents[0].line_of(0) == 1 and sents[1].line_of(0) == 7


def test_whitespace_separated_conll_and_stream(tmp_path):
    text = "1 Hi _ UH UH _ 0 _ _ _\n"
    (s,) = read_conllx("stdin-like", io.StringIO(text))
    assert s.forms == ["Hi"] and s.heads == [0]


def test_byte_order_mark_and_trailing_tab(tmp_path):
    path = write(tmp_path, "\ufeff" + rows("1|Hi|_|UH|UH|_|0|_|_|_|"))
    (s,) = read(path)
    assert s.forms == ["Hi"]


# ----------------------------------------------------------------------------- errors

def assert_error(tmp_path: Path, text: str, line: int, *words: str, name: str = "bad.conll"):
    path = write(tmp_path, text, name)
    with pytest.raises(UserError) as err:
        read(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:{line}: "), msg
    assert name in msg
    for w in words:
        assert w in msg, msg


GOOD = "1|a|_|X|X|_|0|_|_|_"


def test_error_wrong_column_count(tmp_path):
    assert_error(tmp_path, rows(GOOD, "", "1|a|_|X|X|_|0|_|_"), 3, "9 columns")
    assert_error(tmp_path, rows("1|a|X|0"), 1, "found 4")
    assert_error(tmp_path, "a b c\n", 1, "found 3")


def test_error_inconsistent_columns(tmp_path):
    assert_error(tmp_path, rows(GOOD, "", "word POS"), 3, "found 2", "have 10", "line 1")
    assert_error(tmp_path, rows("w|POS", "1|a|_|X|X|_|0|_|_|_"), 2, "found 10", "have 2")


def test_error_id_not_integer(tmp_path):
    assert_error(tmp_path, rows(GOOD, "x|b|_|X|X|_|1|_|_|_"), 2, "ID 'x'", "not an integer")
    assert_error(tmp_path, rows("1.a|b|_|X|X|_|0|_|_|_"), 1, "not an integer")


def test_error_id_out_of_sequence(tmp_path):
    assert_error(tmp_path, rows(GOOD, "3|b|_|X|X|_|1|_|_|_"), 2, "expected 2")
    assert_error(tmp_path, rows(GOOD, "", "2|b|_|X|X|_|0|_|_|_"), 3, "expected 1")
    assert_error(tmp_path, rows(GOOD, "1|b|_|X|X|_|1|_|_|_"), 2, "expected 2")


def test_error_head_not_integer(tmp_path):
    assert_error(tmp_path, rows(GOOD, "2|b|_|X|X|_|one|_|_|_"), 2, "HEAD 'one'")
    assert_error(tmp_path, rows(GOOD, "2|b|_|X|X|_|1.5|_|_|_"), 2, "not an integer")


def test_error_head_partly_missing(tmp_path):
    assert_error(tmp_path, rows(GOOD, "2|b|_|X|X|_|_|_|_|_"), 2, "'_'")


def test_error_head_out_of_range(tmp_path):
    assert_error(tmp_path, rows(GOOD, "2|b|_|X|X|_|3|_|_|_", "3|c|_|X|X|_|9|_|_|_"),
                 3, "HEAD 9", "out of range")
    assert_error(tmp_path, rows(GOOD, "2|b|_|X|X|_|-1|_|_|_"), 2, "out of range")


def test_error_own_head(tmp_path):
    assert_error(tmp_path, rows(GOOD, "2|b|_|X|X|_|2|_|_|_"), 2, "token 2 is its own head")


def test_error_cycle(tmp_path):
    text = rows(GOOD, "", "# c", "1|a|_|X|X|_|0|_|_|_", "2|b|_|X|X|_|4|_|_|_",
                "3|c|_|X|X|_|2|_|_|_", "4|d|_|X|X|_|3|_|_|_")
    assert_error(tmp_path, text, 4, "cycle", "token 2", "2 -> 4 -> 3 -> 2")
    # No root at all is a cycle too.
    assert_error(tmp_path, rows("1|a|_|X|X|_|2|_|_|_", "2|b|_|X|X|_|1|_|_|_"), 1, "cycle")


def test_error_bad_multiword_range(tmp_path):
    assert_error(tmp_path, rows(GOOD, "3-4|bc|_|_|_|_|_|_|_|_"), 2, "3-4")
    assert_error(tmp_path, rows("1-2|ab|_|_|_|_|_|_|_|_", GOOD), 1, "1-2", "past")


@pytest.mark.parametrize("text", ["", "\n\n  \n", "# just a comment\n\n"])
def test_error_empty_file(tmp_path, text):
    assert_error(tmp_path, text, 1, "empty file")


def test_error_missing_file(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        read(str(tmp_path / "absent.conll"))


def test_error_invalid_utf8(tmp_path):
    p = tmp_path / "latin1.conll"
    p.write_bytes(rows(GOOD, "2|caf\xe9|_|X|X|_|1|_|_|_").encode("latin-1"))
    # The line number comes from structkit.io.files.iter_lines, which decodes in chunks.
    with pytest.raises(UserError, match="UTF-8") as err:
        read(str(p))
    assert str(err.value).startswith(f"{p}:")


# ----------------------------------------------------------------------------- writing

def test_round_trip_conllx(tmp_path):
    sents = read(write(tmp_path, CONLLX))
    out = io.StringIO()
    assert write_conllx(sents, out) == 2
    assert out.getvalue() == CONLLX + "\n"  # every sentence gets its blank line
    again = read(write(tmp_path, out.getvalue(), "again.conll"))
    assert [(s.forms, s.heads, s.upos, s.deprels) for s in again] == \
        [(s.forms, s.heads, s.upos, s.deprels) for s in sents]


def test_round_trip_conllu_keeps_comments_and_ranges(tmp_path):
    sents = read(write(tmp_path, CONLLU, "in.conllu"))
    out = io.StringIO()
    write_conllx(sents, out)
    text = out.getvalue()
    assert "2-3\twanna\t_" in text and "4.1" not in text
    assert all(len(line.split("\t")) == 10 for line in text.splitlines()
               if line and not line.startswith("#"))
    again = read(write(tmp_path, text, "again.conllu"))
    for a, b in zip(again, sents, strict=True):
        assert (a.forms, a.lemmas, a.upos, a.xpos, a.feats, a.heads, a.deprels, a.comments,
                a.multiword) == (b.forms, b.lemmas, b.upos, b.xpos, b.feats, b.heads,
                                 b.deprels, b.comments, b.multiword)


def test_write_predicted_heads_and_missing_values():
    s = Sentence.from_rows([["1", "a", "", "X", "Y", "_", "_", "_", "_", "_"],
                            ["2", "b", "_", "X", "Y", "_", "_", "_", "_", "_"]])
    out = io.StringIO()
    write_conllx([s], out)
    assert out.getvalue() == "1\ta\t_\tX\tY\t_\t_\t_\t_\t_\n2\tb\t_\tX\tY\t_\t_\t_\t_\t_\n\n"
    out = io.StringIO()
    write_conllx([s], out, heads=[[2, 0]])
    assert [line.split("\t")[6] for line in out.getvalue().splitlines() if line] == ["2", "0"]
    with pytest.raises(ValueError):
        write_conllx([s], io.StringIO(), heads=[[0]])
    with pytest.raises(ValueError):
        write_conllx([s], io.StringIO(), heads=[[2, 0], [0]])
    with pytest.raises(ValueError):
        write_conllx([s, s], io.StringIO(), heads=[[2, 0]])


# ----------------------------------------------------------------------------- tree helpers

def test_is_projective():
    # "John saw a dog yesterday which was a Yorkshire Terrier": the relative clause attaches
    # to "dog" across "yesterday" -> non-projective.
    assert is_projective([2, 0, 4, 2, 2])
    assert is_projective([2, 0, 2, 3, 4])
    assert not is_projective([2, 0, 4, 2, 2, 7, 4])
    assert not is_projective([3, 0, 2, 1])   # arc 1-4 over the root arc 0-2
    assert is_projective([0])
    assert is_projective([])


def test_check_tree():
    assert check_tree([2, 0, 2]) is None
    assert check_tree([0, 0]) is None
    assert "exactly 1" in check_tree([0, 0], single_root=True)
    assert "own head" in check_tree([1])
    assert "outside" in check_tree([0, 5])
    assert check_tree([3, 1, 2, 0]) == "token 1 is in a cycle (1 -> 3 -> 2 -> 1)"


# ----------------------------------------------------------------------------- real corpora

@pytest.mark.corpus
def test_corpus_ptb_dep_train(corpus):
    sents = read(str(corpus("ptb-dep/train.conll")))
    assert len(sents) == 3068
    assert sum(len(s) for s in sents) == 73842
    assert all(s.heads is not None and s.heads.count(0) == 1 for s in sents)


@pytest.mark.corpus
def test_corpus_ud_partut_dev(corpus):
    sents = read(str(corpus("ud-english-partut/en_partut-ud-dev.conllu")))
    assert len(sents) == 156
    assert sum(len(s) for s in sents) == 2722
    assert all(s.comments for s in sents)
    assert sum(len(s.multiword) for s in sents) > 0
