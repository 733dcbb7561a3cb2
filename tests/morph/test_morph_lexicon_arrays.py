"""Model format 4 keeps the morph lexicon's [id, count, ...] lists in arrays (the keys stay in
the header); a file that holds them in its header, as format 3 wrote, loads to the same counts
and weights, and arrays that ``save`` never writes are refused in one line. Expected values come
from the training file (counted here by hand) and the format 3 layout."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from test_morph_task import data, trained  # noqa: F401 (the small inflecting treebank and its model)

from structkit.errors import UserError
from structkit.model import load_model, save_model
from structkit.morph.task import COUNTS, MorphModel

KEEP = ("format", "format_version", "checksum", "structkit")


def _format_3(header: dict, arrays: dict) -> tuple[dict, dict]:
    """The same model as format 3 laid it out: the lists in the header, the tables' positions."""
    h = {k: v for k, v in header.items() if k not in KEEP}
    lx = h["lexicon"] = dict(h["lexicon"])
    out = {}
    for name, a in arrays.items():
        if name.startswith("lex_"):
            continue
        if name.endswith("_gaps"):
            out[name[:-5] + "_index"] = (np.cumsum(a, dtype=np.int64) + np.arange(len(a))).astype(np.int32)
        else:
            out[name] = a
    for name in COUNTS:
        ptr, pairs = arrays[f"lex_{name}_ptr"], arrays[f"lex_{name}_pairs"]
        lx[name] = {k: pairs[ptr[i]:ptr[i + 1]].tolist() for i, k in enumerate(lx[name])}
    return h, out


def test_the_lexicon_counts_are_arrays_and_a_format_3_file_reads_the_same(trained, data, tmp_path):  # noqa: F811
    header, arrays = load_model(str(trained), ("morph",))
    assert header["format_version"] == 4
    assert all(isinstance(header["lexicon"][name], list) for name in COUNTS)
    assert "W_tag_gaps" in arrays and "W_tag_index" not in arrays
    new = MorphModel.load(str(trained))
    # the training file's forms with their (upos, xpos, feats) seen, counted here from the file
    seen: dict[str, Counter] = {}
    for line in (data[0] / "train.conllu").read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if len(cols) == 10 and cols[0].isdigit():
            seen.setdefault(cols[1], Counter())["\t".join(cols[3:6])] += 1
    tags = new.tables.tags
    form_tags = new.tables.lexicon.form_tags
    assert set(form_tags) == set(seen)
    for form, counts in seen.items():
        assert {tags[t]: n for t, n in form_tags[form].items()} == dict(counts), form

    h3, a3 = _format_3(header, arrays)
    old_path = tmp_path / "format3.model"
    save_model(str(old_path), h3, a3)
    old = MorphModel.load(str(old_path))
    assert np.array_equal(old.W_tag, new.W_tag) and np.array_equal(old.W_lem, new.W_lem)
    for name in COUNTS:
        a, b = getattr(old.tables.lexicon, name), getattr(new.tables.lexicon, name)
        assert list(a) == list(b) and all(a[k] == b[k] for k in a), name
    sents = [["casa", "nuova"], list(seen)[:5]]
    assert old.analyse(sents) == new.analyse(sents)


@pytest.mark.parametrize("edit, problem", [
    (lambda h, a: a.__setitem__("lex_form_tags_ptr", a["lex_form_tags_ptr"] + 1), "offsets are inconsistent"),
    (lambda h, a: a.__setitem__("lex_form_tags_ptr", a["lex_form_tags_ptr"][:-1]), "offsets are inconsistent"),
    (lambda h, a: a.__setitem__("lex_suffix_rules_pairs", a["lex_suffix_rules_pairs"] * 0 + 10 ** 6),
     "lexicon ids out of range"),
    (lambda h, a: a.__setitem__("lex_class_tags_pairs", -a["lex_class_tags_pairs"] - 1), "lexicon ids out of range"),
    (lambda h, a: h["lexicon"]["form_rules"].__setitem__(1, h["lexicon"]["form_rules"][0]), "not distinct strings"),
    (lambda h, a: h["lexicon"]["form_rules"].__setitem__(0, 7), "not distinct strings"),
    (lambda h, a: a.__setitem__("lex_form_tags_pairs", a["lex_form_tags_pairs"].astype(np.float32)),
     "offsets are inconsistent"),
])
def test_lexicon_arrays_save_never_writes_are_refused_in_one_line(trained, tmp_path, edit, problem):  # noqa: F811
    header, arrays = load_model(str(trained), ("morph",))
    h = {k: v for k, v in header.items() if k not in KEEP}
    h["lexicon"] = {k: list(v) if isinstance(v, list) else v for k, v in h["lexicon"].items()}
    a = dict(arrays)
    edit(h, a)
    bad = tmp_path / "bad.model"
    save_model(str(bad), h, a)
    with pytest.raises(UserError) as ei:
        MorphModel.load(str(bad))
    assert problem in ei.value.message and "\n" not in ei.value.message
