"""Feature templates and the vectorised extractor: names, ids, boundaries, cutoff, unseen values."""
import numpy as np
import pytest

from structkit.errors import UserError
from structkit.sequence.features import FeatureSpace, ambiguity_classes
from structkit.sequence.templates import (AMB_FOLDS, AMB_UNKNOWN, parse_template, resolve_templates,
                                         word_attribute, word_case, word_shape)


def _corpus(sents):
    words = [w for s in sents for w, _ in s]
    pos = [p for s in sents for _, p in s]
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sents])]).astype(np.int64)
    return words, pos, offsets


def _names(fs, indptr, indices, t):
    return sorted(fs.feature_name(int(f)) for f in indices[indptr[t]:indptr[t + 1]])


def _reference_names(templates, sents, si, ti):
    """Plain-Python feature names of token ti of sentence si (what the extractor must produce)."""
    sent = sents[si]
    out = []
    for t in templates:
        vals = []
        for attr, off in t.atoms:
            j = ti + off
            if attr == "bias":
                v = "1"
            elif j < 0:
                v = "<S>"
            elif j >= len(sent):
                v = "</S>"
            elif attr == "p":
                v = sent[j][1]
            else:
                v = word_attribute(attr, sent[j][0])
            if v is None:
                break
            vals.append(v)
        else:
            out.append(f"{t.text}={'|'.join(vals)}")
    return sorted(out)


SENTS = [[("The", "DT"), ("dog", "NN"), ("barks", "VBZ")],
         [("Hi", "UH")],
         [("New-York", "NNP"), ("in", "IN"), ("2024", "CD"), ("NASA", "NNP")]]


@pytest.mark.parametrize("tset", ["pos", "chunk", "ner"])
def test_extractor_matches_reference_names(tset):
    words, pos, offsets = _corpus(SENTS)
    fs = FeatureSpace(tset)
    indptr, indices = fs.fit_transform(words, pos, offsets)
    k = 0
    for si, s in enumerate(SENTS):
        for ti in range(len(s)):
            assert _names(fs, indptr, indices, k) == _reference_names(fs.templates, SENTS, si, ti)
            k += 1
    # transform of the same data gives the same ids
    indptr2, indices2 = fs.transform(words, pos, offsets)
    assert np.array_equal(indptr, indptr2) and np.array_equal(indices, indices2)


def test_unseen_values_fire_nothing_and_cutoff_drops_rare():
    words, pos, offsets = _corpus(SENTS)
    fs = FeatureSpace(["w[0]", "p[0]"])
    fs.fit_transform(words, pos, offsets)
    ip, ix = fs.transform(["zebra", "dog"], ["XX", "NN"], np.array([0, 2]))
    assert _names(fs, ip, ix, 0) == []
    assert _names(fs, ip, ix, 1) == ["p[0]=NN", "w[0]=dog"]
    fs2 = FeatureSpace(["p[0]"])
    ip, ix = fs2.fit_transform(words, pos, offsets, cutoff=2)
    # only NNP occurs twice
    assert [fs2.feature_name(i) for i in range(fs2.n_features)] == ["p[0]=NNP"]


def test_word_attributes():
    assert word_shape("New-York2") == "Xx-Xxd"
    assert word_attribute("pre4", "dog") is None and word_attribute("suf2", "dog") == "og"
    assert word_attribute("allcap", "NASA") == "1" and word_attribute("allcap", "123") is None
    assert word_attribute("cap", "dog") is None and word_attribute("digit", "a1") == "1"
    assert word_attribute("lsuf3", "DAMAGES") == "ges" and word_attribute("lsuf6", "Dog") is None
    assert [word_case(w) for w in ("dog", "Dog", "A", "NASA", "iPhone", "2024", "B-52")] == \
        ["lower", "title", "title", "upper", "mixed", "none", "title"]
    assert word_attribute("case", "LICENSOR") == "upper"


def _tagged(sents):
    """(words, labels, offsets) of sentences of (word, label) pairs."""
    return _corpus(sents)


def test_ambiguity_classes_are_jackknifed_by_sentence_folds():
    """On training data a token's class comes from the sentences of the other folds (sentence
    i is in fold i % AMB_FOLDS), lower-cased; the dictionary of the whole data is returned."""
    sents = [[("that", "SCONJ")], [("That", "PRON"), ("dog", "NOUN")], [("that", "SCONJ")]]
    sents += [[("the", "DET")]] * (AMB_FOLDS - 3) + [[("that", "DET")]]  # the last: fold 0 again
    words, labels, offsets = _tagged(sents)
    classes, lexicon = ambiguity_classes(words, labels, offsets)
    assert lexicon["that"] == "DET+PRON+SCONJ" and lexicon["dog"] == "NOUN" and "That" not in lexicon
    assert classes[0] == "PRON+SCONJ"        # fold 0: not its own SCONJ, nor the last sentence's DET
    assert classes[1:3] == ["DET+SCONJ", AMB_UNKNOWN]   # 'dog' is in no other fold
    assert classes[3] == "DET+PRON+SCONJ"    # fold 2 sees SCONJ in fold 0 as well
    assert classes[-1] == "PRON+SCONJ"       # fold 0 again


def test_amb_features_use_the_whole_dictionary_on_new_text_and_are_stored():
    sents = [[("The", "DET"), ("dog", "NOUN"), ("barks", "VERB")]] * 6 + [[("Hi", "INTJ")]]
    words, labels, offsets = _tagged(sents)
    fs = FeatureSpace(["amb[0]", "amb[-1]|amb[0]", "w[0]"])
    ip, ix = fs.fit_transform(words, None, offsets, labels=labels)
    # 'Hi' is in one sentence only: unknown to the other folds, so its training class is '?'
    assert _names(fs, ip, ix, len(words) - 1) == ["amb[-1]|amb[0]=<S>|?", "amb[0]=?", "w[0]=Hi"]
    ip, ix = fs.transform(["the", "hi", "cat"], None, np.array([0, 3]))
    assert _names(fs, ip, ix, 0) == ["amb[-1]|amb[0]=<S>|DET", "amb[0]=DET"]   # lower-cased
    assert _names(fs, ip, ix, 2) == ["amb[0]=?"]      # a new word: known class '?', no pair seen
    assert _names(fs, ip, ix, 1) == []   # 'hi' is INTJ for new text, a class training never saw
    header, arrays = fs.to_arrays()
    fs2 = FeatureSpace.from_arrays(header, arrays)
    assert fs2.lexicon == fs.lexicon == {"the": "DET", "dog": "NOUN", "barks": "VERB", "hi": "INTJ"}
    ip2, ix2 = fs2.transform(["the", "hi", "cat"], None, np.array([0, 3]))
    assert np.array_equal(ip, ip2) and np.array_equal(ix, ix2)
    with pytest.raises(UserError, match="amb"):
        FeatureSpace(["amb[0]"]).fit_transform(words, None, offsets)


def test_templates_parse_and_errors():
    assert parse_template(" w[-1] | w[0] ").text == "w[-1]|w[0]"
    assert len(resolve_templates(["pos", "w[0]"])) == len(resolve_templates("pos"))
    for bad in ["x(0)", "w[0", "w[9]", "w", "bias[0]", "lemma.[0]", "1x[0]"]:
        with pytest.raises(UserError):
            parse_template(bad)


def test_column_templates_read_named_columns():
    """A template over a column the code has never seen: its values are features like any
    other, and input without that column is an error naming it."""
    words, pos, offsets = _corpus(SENTS)
    flags = [("G" if w[:1].isupper() else None) for w in words]
    fs = FeatureSpace(["gazetteer[0]", "gazetteer[-1]|w[0]"])
    ip, ix = fs.fit_transform(words, pos, offsets, extra={"gazetteer": flags})
    names = {fs.feature_name(int(i)) for i in ix}
    assert "gazetteer[0]=G" in names
    assert any(n.startswith("gazetteer[-1]|w[0]=G|") for n in names)
    # A token fires something when it has the flag, or when the token before it has one or is
    # the sentence start (<S> is a value of gazetteer[-1]); '_'-like None fires nothing.
    starts = set(offsets[:-1].tolist())
    expected = [f is not None or k in starts or flags[k - 1] is not None for k, f in enumerate(flags)]
    assert (np.diff(ip) > 0).tolist() == expected
    assert not all(expected)
    assert fs.column_attrs == ["gazetteer"]
    with pytest.raises(UserError, match="gazetteer"):
        fs.transform(words, pos, offsets)


def test_pos_templates_need_pos_column():
    fs = FeatureSpace("chunk")
    with pytest.raises(UserError, match="POS"):
        fs.fit_transform(["a"], None, np.array([0, 1]))


def test_storage_round_trip():
    words, pos, offsets = _corpus(SENTS)
    fs = FeatureSpace("ner")
    ip, ix = fs.fit_transform(words, pos, offsets)
    header, arrays = fs.to_arrays()
    fs2 = FeatureSpace.from_arrays(header, arrays)
    ip2, ix2 = fs2.transform(words, pos, offsets)
    assert np.array_equal(ip, ip2) and np.array_equal(ix, ix2)
    assert [fs2.feature_name(i) for i in range(fs2.n_features)] == \
        [fs.feature_name(i) for i in range(fs.n_features)]
