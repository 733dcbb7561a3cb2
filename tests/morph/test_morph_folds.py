"""The morph tagger's training sees its dictionary as new text does: sentence k's words are
looked up in a lexicon built from the other folds only (k % FOLDS is its fold), so a word that
occurs in no other fold is unknown to it, and one that occurs elsewhere is known."""
from __future__ import annotations


def _treebank(path, n: int) -> list[list[str]]:
    """n sentences 'The cat sees <name>.', each name its own: the shared words are in every
    fold, each name in one sentence only."""
    lines, sents = [], []
    for i in range(n):
        words = ["The", "cat", "sees", f"Name{i}", "."]
        sents.append(words)
        lines += [f"# sent_id = {i + 1}", f"# text = The cat sees Name{i}."]
        rows = [("the", "DET", "DT", 2, "det"), ("cat", "NOUN", "NN", 3, "nsubj"),
                ("see", "VERB", "VBZ", 0, "root"), (f"Name{i}", "PROPN", "NNP", 3, "obj"),
                (".", "PUNCT", ".", 3, "punct")]
        for j, (w, (lemma, upos, xpos, head, rel)) in enumerate(zip(words, rows), 1):
            misc = "SpaceAfter=No" if j == 4 else "_"
            lines.append("\t".join([str(j), w, lemma, upos, xpos, "_", str(head), rel, "_", misc]))
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return sents


def test_training_lookups_are_jackknifed(monkeypatch, tmp_path):
    import structkit.morph.task as T
    from structkit.tasks import make_config

    sents = _treebank(tmp_path / "t.conllu", 12)
    seen = {}
    real = T.encode

    def spy(sentences, tables, lexicons, types, gold_tags=None, gold_rules=None):
        if gold_tags is not None:          # the training corpus, not dev
            seen["sentences"] = sentences     # the lexicons live only during the call
            seen["lexicons"] = [lexicons(k) for k in range(len(sentences))]
        return real(sentences, tables, lexicons, types, gold_tags, gold_rules)

    monkeypatch.setattr(T, "encode", spy)
    T.train_morph(make_config({"task": "morph", "epochs": 1}), str(tmp_path / "t.conllu"))
    assert seen["sentences"] == sents
    for k, words in enumerate(sents):
        lex = seen["lexicons"][k]
        assert [lex.tags(w)[1] for w in words] == [True, True, True, False, True], k
        # another sentence's name: known where that sentence is in another fold
        for j in range(len(sents)):
            assert lex.tags(f"Name{j}")[1] is (j % T.FOLDS != k % T.FOLDS), (k, j)
