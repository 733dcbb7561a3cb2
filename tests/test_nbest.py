"""Reading n-best lists: the HyPoradise JSON layout, our JSON lines, Kaldi-style directories,
grouping/histories, and every malformed input as a UserError naming the file."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from structkit.errors import UserError
from structkit.io.nbest import read_chosen, read_nbest

FIX = Path(__file__).resolve().parent / "fixtures" / "nbest"


def test_hyporadise_layout_groups_by_id_prefix():
    ns = read_nbest(str(FIX / "train_hyporadise.json"))
    assert len(ns) == 12
    u = ns.utterances[0]
    assert u.id == "a01011ss" and u.group == "a01"
    assert u.hypotheses[0] == "show me us air flights to boston"
    assert u.reference == "show me u s air flights to boston"
    assert np.allclose(u.scores, [-0.30, -0.34, -0.41])
    assert ns.groups[:3] == ["a01"] * 3 and len(set(ns.groups)) == 4
    assert ns.history[0] == [] and ns.history[1] == [0] and ns.history[2] == [0, 1]
    assert ns.history[3] == []          # b02: a new speaker
    assert not ns.windowed


def test_hyporadise_orders_by_id_within_group(tmp_path):
    rows = [{"id": "x01003", "input": ["c"], "output": "c"},
            {"id": "y01001", "input": ["q"], "output": "q"},
            {"id": "x01001", "input": ["a"], "output": "a"},
            {"id": "x01002", "input": ["b"], "output": "b"}]
    p = tmp_path / "h.json"
    p.write_text(json.dumps(rows))
    ns = read_nbest(str(p))
    assert ns.history[2] == []           # x01001 comes first in its group
    assert ns.history[3] == [2]
    assert ns.history[0] == [2, 3]
    assert ns.history[1] == []
    assert not ns.has_scores


def test_hyporadise_without_ids_uses_windows(tmp_path):
    p = tmp_path / "h.json"
    p.write_text(json.dumps([{"input": [f"w{i}"], "output": f"w{i}"} for i in range(5)]))
    ns = read_nbest(str(p), window=2)
    assert ns.windowed
    assert ns.history == [[], [0], [0, 1], [1, 2], [2, 3]]
    assert ns.groups == ["block0", "block0", "block1", "block1", "block2"]


def test_jsonl_layout():
    ns = read_nbest(str(FIX / "small.jsonl"))
    assert len(ns) == 4
    assert [u.id for u in ns.utterances] == ["u1", "u2", "u3", "u4"]
    assert ns.groups == ["conv1", "conv2", "conv1", "conv2"]
    assert ns.history == [[], [], [0], [1]]
    assert ns.utterances[3].hypotheses == ["a dog barked", "a dog parked"]   # spaces normalised
    assert ns.utterances[3].reference is None
    assert ns.utterances[3].line == 5                                          # blank line 4
    assert np.allclose(ns.utterances[1].scores, [-0.5, -0.7, -0.9])
    with pytest.raises(UserError, match="utterance 4 \\(u4\\) has no reference"):
        ns.require_references("eval")


def test_jsonl_plain_strings_without_groups():
    ns = read_nbest(str(FIX / "nogroups.jsonl"), window=3)
    assert ns.windowed and not ns.has_scores
    assert ns.history[4] == [1, 2, 3]
    assert ns.utterances[1].hypotheses == ["for five", "four five"]


def test_kaldi_directory():
    ns = read_nbest(str(FIX / "kaldi"))
    assert [u.id for u in ns.utterances] == ["s1-utt1", "s2-utt1"]
    u = ns.utterances[0]
    assert u.hypotheses == ["the cat sad", "the cat sat"]          # reordered by rank
    assert np.allclose(u.scores, [-13.0, -14.5])                    # -(ac_cost + lm_cost)
    assert u.reference == "the cat sat"
    assert ns.groups == ["s1", "s2"]
    assert np.allclose(ns.utterances[1].scores, [-8.0, -8.5, -9.5])


def test_kaldi_bare_nbest_file():
    ns = read_nbest(str(FIX / "kaldi" / "nbest"))
    assert len(ns) == 2 and ns.utterances[1].hypotheses == ["a dog ran", "the dog ran", "a dog"]
    assert not ns.has_scores and ns.utterances[0].reference is None


def test_subset_keeps_histories_inside():
    ns = read_nbest(str(FIX / "train_hyporadise.json"))
    sub = ns.subset([1, 2, 5])
    assert sub.history == [[], [0], []]
    assert sub.groups == ["a01", "a01", "b02"]


# ---- malformed input ---------------------------------------------------------------------
BAD = {
    "empty_input.json": ('[{"id": "a01", "input": [], "output": "x"}]', "has no hypotheses"),
    "no_input.json": ('[{"id": "a01", "output": "x"}]', "has no hypotheses"),
    "scores.json": ('[{"input": ["a", "b"], "output": "a", "am_score": [1.0]}]',
                    "has 2 hypotheses but 1 scores"),
    "invalid.json": ('[{"input": ["a", "b"], "output": "a"},\n {"input": ]', "not valid JSON"),
    "not_obj.json": ('[["a", "b"]]', "expected a JSON object"),
    "hyp_type.json": ('[{"input": ["a", 3], "output": "a"}]', "must be a string"),
    "empty.jsonl": ('{"hypotheses": []}\n', "has no hypotheses"),
    "partial.jsonl": ('{"hypotheses": [{"text": "a", "score": 1}, {"text": "b"}]}\n',
                      "has 2 hypotheses but 1 scores"),
    "badline.jsonl": ('{"hypotheses": ["a"]}\n{"hypotheses": ["a"\n', "not valid JSON"),
    "mixed.jsonl": ('{"hypotheses": [{"text": "a", "score": 1}]}\n{"hypotheses": ["b"]}\n',
                    "no scores while other utterances do"),
    "nothing.json": ("[]", "no utterances"),
    "blank.txt": ("\n\n", "no utterances"),
    "kaldi.txt": ("utt1 a b c\n", "expected 'UTTERANCE-RANK"),
    "ranks.txt": ("u-1 a\nu-3 b\n", "ranks must be 1..2"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_inputs_are_user_errors(tmp_path, name):
    text, needle = BAD[name]
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(UserError) as ei:
        read_nbest(str(p))
    assert needle in str(ei.value)
    assert str(p) in str(ei.value)


def test_bad_json_names_the_line(tmp_path):
    p = tmp_path / "b.jsonl"
    p.write_text('{"hypotheses": ["a"]}\n{"hypotheses": ["a"\n')
    with pytest.raises(UserError) as ei:
        read_nbest(str(p))
    assert ei.value.line == 2


def test_kaldi_score_count_mismatch(tmp_path):
    d = tmp_path / "k"
    d.mkdir()
    for f in ("nbest", "text"):
        (d / f).write_text((FIX / "kaldi" / f).read_text())
    (d / "ac_cost").write_text("s1-utt1-1 1.0\ns1-utt1-2 2.0\ns2-utt1-1 1.0\n")
    with pytest.raises(UserError, match="has 3 hypotheses but 1 scores"):
        read_nbest(str(d))
    (d / "ac_cost").write_text("s9-utt1-1 1.0\n")
    with pytest.raises(UserError, match="not a hypothesis"):
        read_nbest(str(d))


def test_read_chosen(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("a  b\nc\n")
    assert read_chosen(str(p), 2) == ["a b", "c"]
    p.write_text('{"text": "x y", "index": 1}\n{"text": "z"}\n')
    assert read_chosen(str(p), 2) == ["x y", "z"]
    with pytest.raises(UserError, match="has 2 lines but the n-best input has 3"):
        read_chosen(str(p), 3)
