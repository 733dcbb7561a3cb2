"""CoNLL-U for the parser: checked_tree (a read sentence, its HEAD column checked, read through
its columns) and write_parsed (the file written back with only HEAD and DEPREL of word rows
changed)."""
from __future__ import annotations

import io

import pytest

from structkit.errors import UserError
from structkit.io.conllu import checked_tree, read_conllu, write_parsed

# Comments, a multiword range (2-3), an empty node (4.1, with its own DEPS), SpaceAfter=No,
# DEPS on word rows, a trailing comment-only line kept before sentence 2.
UD = """\
# newdoc id = d1
# sent_id = 1
# text = I don't sleep.
1\tI\tI\tPRON\tPRP\tCase=Nom\t4\tnsubj\t4:nsubj\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t4:aux\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_
4\tsleep\tsleep\tVERB\tVB\t_\t0\troot\t0:root\tSpaceAfter=No
4.1\tsleep\tsleep\tVERB\tVB\t_\t_\t_\t4:conj\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t4:punct\t_

# sent_id = 2
# text = Go!
1\tGo\tgo\tVERB\tVB\tMood=Imp\t0\troot\t0:root\tSpaceAfter=No
2\t!\t!\tPUNCT\t.\t_\t1\tpunct\t1:punct\t_

"""


def read(text=UD, name="in.conllu"):
    return list(read_conllu(name, io.StringIO(text)))


def test_checked_tree():
    s1, s2 = (checked_tree(s, "in.conllu") for s in read())
    assert s1.forms == ["I", "do", "n't", "sleep", "."]           # no range, no empty node
    assert s1.lemmas == ["I", "do", "not", "sleep", "."]
    assert s1.upos == ["PRON", "AUX", "PART", "VERB", "PUNCT"]
    assert s1.xpos == ["PRP", "VBP", "RB", "VB", "."]
    assert s1.feats[0] == "Case=Nom"
    assert s1.heads == [4, 4, 4, 0, 4]
    assert s1.deprels == ["nsubj", "aux", "advmod", "root", "punct"]
    assert s1.comments == ["# newdoc id = d1", "# sent_id = 1", "# text = I don't sleep."]
    assert s1.multiword == [(2, 3, "don't")]
    assert s1.line_of(0) == 4                                      # word 1's row
    assert s2.heads == [0, 1] and s2.line_of(0) == 14   # after 11 lines, a blank, 2 comments


def test_checked_tree_matches_read_conllx():
    from structkit.io.conllx import read_conllx

    def view(s):
        return (s.forms, s.lemmas, s.upos, s.xpos, s.feats, s.heads, s.deprels, s.comments, s.multiword,
                s.line_of(0))

    for a, b in zip((checked_tree(s) for s in read()), read_conllx("in.conllu", io.StringIO(UD))):
        assert view(a) == view(b)


def test_checked_tree_without_heads():
    # a tagger's output: HEAD and DEPREL '_'
    text = "1\tGo\t_\tVERB\t_\t_\t_\t_\t_\t_\n2\t!\t_\tPUNCT\t_\t_\t_\t_\t_\t_\n"
    (s,) = (checked_tree(x) for x in read(text))
    assert s.heads is None and s.deprels == ["_", "_"] and s.forms == ["Go", "!"]


@pytest.mark.parametrize("heads, line, needle", [
    (("0", "_"), 2, "HEAD is '_' for word 2"),
    (("0", "x"), 2, "HEAD 'x' of word 2 is not an integer"),
    (("0", "3"), 2, "HEAD 3 of word 2 is out of range"),
    (("0", "-1"), 2, "HEAD -1 of word 2 is out of range"),
    (("2", "1"), 1, "not a tree: token 1 is in a cycle (1 -> 2 -> 1)"),
    (("0", "2"), 2, "not a tree: token 2 is its own head"),
])
def test_checked_tree_bad_heads_name_the_line(heads, line, needle):
    text = (f"# sent_id = x\n1\tGo\t_\tVERB\t_\t_\t{heads[0]}\t_\t_\t_\n"
            f"2\t!\t_\tPUNCT\t_\t_\t{heads[1]}\t_\t_\t_\n")
    (s,) = read(text, "t.conllu")
    with pytest.raises(UserError) as e:
        checked_tree(s, "t.conllu")
    assert str(e.value).startswith(f"t.conllu:{line + 1}: {needle}")


def test_write_parsed_changes_only_head_and_deprel():
    sents = read()
    heads = [[2, 0, 2, 2, 4], [0, 1]]
    rels = [["a", "b", "c:sub", "d", "e"], ["root", "punct"]]
    out = io.StringIO()
    assert write_parsed(sents, heads, rels, out) == 2
    got, want = out.getvalue().splitlines(), UD.splitlines()
    assert len(got) == len(want)
    changed = {}
    for k, (g, w) in enumerate(zip(got, want)):
        if g != w:
            gc, wc = g.split("\t"), w.split("\t")
            # only columns 7 and 8 (HEAD, DEPREL) differ, and only on word rows
            assert [c for i, c in enumerate(gc) if i not in (6, 7)] == \
                   [c for i, c in enumerate(wc) if i not in (6, 7)]
            changed[k] = (gc[0], gc[6], gc[7])
    # sentence 1 word rows are lines 4, 6, 7, 8, 10 (1-based); line 9 is the empty node
    assert changed == {3: ("1", "2", "a"), 5: ("2", "0", "b"), 6: ("3", "2", "c:sub"),
                       7: ("4", "2", "d"), 9: ("5", "4", "e")}
    # what was written reads back with the new heads and labels
    back = [checked_tree(s) for s in read(out.getvalue())]
    assert [b.heads for b in back] == heads and [b.deprels for b in back] == rels
    assert "SpaceAfter=No" in got[7] and got[8] == want[8]


def test_write_parsed_round_trip_with_its_own_heads_is_identical():
    sents = read()
    views = [checked_tree(s) for s in sents]
    out = io.StringIO()
    write_parsed(sents, [v.heads for v in views], [v.deprels for v in views], out)
    assert out.getvalue() == UD


def test_write_parsed_without_labels_writes_underscore():
    sents = read()
    out = io.StringIO()
    write_parsed(sents, [[4, 4, 4, 0, 4], [0, 1]], None, out)
    rows = [ln.split("\t") for ln in out.getvalue().splitlines() if ln and not ln.startswith("#")]
    words = [r for r in rows if "-" not in r[0] and "." not in r[0]]
    assert [r[7] for r in words] == ["_"] * 7
    assert [r[6] for r in words] == ["4", "4", "4", "0", "4", "0", "1"]


@pytest.mark.parametrize("heads, rels, needle", [
    ([[4, 4, 4, 0, 4]], None, "fewer head"),
    ([[4, 4, 4, 0, 4], [0, 1], [0]], None, "more head"),
    ([[4, 4, 4, 0], [0, 1]], None, "4 heads"),
    ([[4, 4, 4, 0, 9], [0, 1]], None, "head 9 of word 5"),
    ([[4, 4, 4, 0, 4], [0, 1]], [["a"] * 5, ["a", "b c"]], "DEPREL 'b c'"),
    ([[4, 4, 4, 0, 4], [0, 1]], [["a"] * 5, ["a", ""]], "DEPREL ''"),
])
def test_write_parsed_mismatch_is_value_error(heads, rels, needle):
    with pytest.raises(ValueError, match=needle):
        write_parsed(read(), heads, rels, io.StringIO())


def test_write_parsed_needs_conllu_sentences():
    from structkit.io.conll import Sentence

    with pytest.raises(ValueError, match="read_conllu"):
        write_parsed([Sentence.from_rows([["Go"]], 1)], [[0]], None, io.StringIO())
