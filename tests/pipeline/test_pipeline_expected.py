"""The pipeline against expectations written by hand, not against another path of our own code.

``tests/fixtures/tiny_ud/train.conllu`` is a treebank written by hand: eight English sentences
(UPOS and XPOS differ on every word, one multiword token ``cannot`` = ``can not``), each in
several paragraphs. A pipeline trained on it with the defaults learns it by heart, so raw text
made of its sentences must come out as the treebank has them. ``EXPECTED`` below is that
output, typed from the treebank's rows; the token offsets are counted by hand in ``TEXT``. A
swapped column, a dropped or moved word, a wrong head or an offset off by one fails these tests
on every path that writes the analysis: `structkit annotate` (CoNLL-U and JSON lines, one block
or many), ``structkit.load(model)(text)``, the server's /pipeline answer and the picture.
"""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

import structkit
from conftest import FIXTURES

TINY = FIXTURES / "tiny_ud" / "train.conllu"
TEXT = "Dogs see cats. Tom reads the books.\n\nThe dogs cannot sleep.\n"

# (form, lemma, upos, xpos, feats, head, deprel) of every word, sentence by sentence
WORDS = [
    [("Dogs", "dog", "NOUN", "NNS", "Number=Plur", 2, "nsubj"),
     ("see", "see", "VERB", "VBP", "Mood=Ind|Number=Plur|Person=3|Tense=Pres|VerbForm=Fin", 0, "root"),
     ("cats", "cat", "NOUN", "NNS", "Number=Plur", 2, "obj"),
     (".", ".", "PUNCT", ".", None, 2, "punct")],
    [("Tom", "Tom", "PROPN", "NNP", "Number=Sing", 2, "nsubj"),
     ("reads", "read", "VERB", "VBZ", "Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin", 0, "root"),
     ("the", "the", "DET", "DT", "Definite=Def|PronType=Art", 4, "det"),
     ("books", "book", "NOUN", "NNS", "Number=Plur", 2, "obj"),
     (".", ".", "PUNCT", ".", None, 2, "punct")],
    [("The", "the", "DET", "DT", "Definite=Def|PronType=Art", 2, "det"),
     ("dogs", "dog", "NOUN", "NNS", "Number=Plur", 5, "nsubj"),
     ("can", "can", "AUX", "MD", "VerbForm=Fin", 5, "aux"),
     ("not", "not", "PART", "RB", "Polarity=Neg", 5, "advmod"),
     ("sleep", "sleep", "VERB", "VB", "VerbForm=Inf", 0, "root"),
     (".", ".", "PUNCT", ".", None, 5, "punct")],
]
# (form, start, end) of every surface token in TEXT, counted by hand
TOKENS = [
    [("Dogs", 0, 4), ("see", 5, 8), ("cats", 9, 13), (".", 13, 14)],
    [("Tom", 15, 18), ("reads", 19, 24), ("the", 25, 28), ("books", 29, 34), (".", 34, 35)],
    [("The", 37, 40), ("dogs", 41, 45), ("cannot", 46, 52), ("sleep", 53, 58), (".", 58, 59)],
]
SENTENCE_SPANS = [(0, 14), (15, 35), (37, 59)]

EXPECTED = """\
# newdoc
# newpar
# sent_id = 1
# text = Dogs see cats.
1	Dogs	dog	NOUN	NNS	Number=Plur	2	nsubj	_	_
2	see	see	VERB	VBP	Mood=Ind|Number=Plur|Person=3|Tense=Pres|VerbForm=Fin	0	root	_	_
3	cats	cat	NOUN	NNS	Number=Plur	2	obj	_	SpaceAfter=No
4	.	.	PUNCT	.	_	2	punct	_	_

# sent_id = 2
# text = Tom reads the books.
1	Tom	Tom	PROPN	NNP	Number=Sing	2	nsubj	_	_
2	reads	read	VERB	VBZ	Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin	0	root	_	_
3	the	the	DET	DT	Definite=Def|PronType=Art	4	det	_	_
4	books	book	NOUN	NNS	Number=Plur	2	obj	_	SpaceAfter=No
5	.	.	PUNCT	.	_	2	punct	_	_

# newpar
# sent_id = 3
# text = The dogs cannot sleep.
1	The	the	DET	DT	Definite=Def|PronType=Art	2	det	_	_
2	dogs	dog	NOUN	NNS	Number=Plur	5	nsubj	_	_
3-4	cannot	_	_	_	_	_	_	_	_
3	can	can	AUX	MD	VerbForm=Fin	5	aux	_	_
4	not	not	PART	RB	Polarity=Neg	5	advmod	_	_
5	sleep	sleep	VERB	VB	VerbForm=Inf	0	root	_	SpaceAfter=No
6	.	.	PUNCT	.	_	5	punct	_	_

"""


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """The pipeline of the hand-written treebank (defaults; a few seconds)."""
    from structkit.cli import main

    path = tmp_path_factory.mktemp("tiny") / "tiny.skm"
    with pytest.raises(SystemExit) as ei:
        main(["train", "--task", "pipeline", "--train", str(TINY), "--model", str(path), "-q"])
    assert ei.value.code in (0, None)
    return path


def _word_tuples(words) -> list[tuple]:
    return [(w.form, w.lemma, w.upos, w.xpos, w.feats, w.head, w.deprel) for w in words]


def test_the_fixture_is_what_the_expectations_say():
    """The expectations are the treebank's own rows: every expected sentence is in it."""
    doc = structkit.read_conllu(str(TINY))
    known = {s.text: _word_tuples(s.words) for s in doc.sents}
    assert [known[s] for s in ("Dogs see cats.", "Tom reads the books.", "The dogs cannot sleep.")] == WORDS
    assert all(w.upos != w.xpos for w in doc.words)   # a UPOS/XPOS swap cannot go unseen


def test_annotate_writes_the_expected_conllu(tiny_model, sk, tmp_path):
    raw = tmp_path / "in.txt"
    raw.write_text(TEXT, encoding="utf-8")
    r = sk("annotate", "-m", tiny_model, raw)
    assert r.code == 0, r.err
    assert r.out == EXPECTED


def test_annotate_json_lines_hold_the_expected_words(tiny_model, sk):
    r = sk("annotate", "-m", tiny_model, "--format", "json", "-", stdin=TEXT.encode())
    assert r.code == 0, r.err
    sents = [json.loads(line) for line in r.out.splitlines()]
    assert [s["sent_id"] for s in sents] == [1, 2, 3]
    assert [s["text"] for s in sents] == ["Dogs see cats.", "Tom reads the books.", "The dogs cannot sleep."]
    got = [[(w["form"], w["lemma"], w["upos"], w["xpos"], None if w["feats"] == "_" else w["feats"],
             w["head"], w["deprel"]) for w in s["words"]] for s in sents]
    assert got == WORDS
    assert [s.get("multiword") for s in sents] == [None, None, [{"first": 3, "last": 4, "form": "cannot"}]]


def test_nlp_gives_the_expected_doc_and_offsets(tiny_model):
    nlp = structkit.load(tiny_model)
    doc = nlp(TEXT)
    assert doc.to_conllu() == EXPECTED
    assert [_word_tuples(s.words) for s in doc.sents] == WORDS
    assert [[(t.form, t.start, t.end) for t in s.tokens] for s in doc.sents] == TOKENS
    assert [(s.start, s.end) for s in doc.sents] == SENTENCE_SPANS
    assert [[w.form for w in t.words] for t in doc.sents[2].tokens] == [
        ["The"], ["dogs"], ["can", "not"], ["sleep"], ["."]]


def test_a_doc_read_from_the_expected_conllu_has_the_hand_counted_offsets():
    """Read back, the CoNLL-U's own text is the sentences' ``# text`` joined (a space, then a
    blank line before the ``# newpar``): the same offsets as in TEXT."""
    doc = structkit.Doc.from_conllu(EXPECTED)
    assert doc.text == TEXT.rstrip("\n")
    assert [(s.start, s.end) for s in doc.sents] == SENTENCE_SPANS
    assert [[(t.form, t.start, t.end) for t in s.tokens] for s in doc.sents] == TOKENS
    assert all(doc.text[s.start:s.end] == s.text for s in doc.sents)


def test_annotate_in_many_blocks_numbers_the_sentences_on(tiny_model, tmp_path):
    """A file cut into blocks (a few hundred bytes each here) is annotated block by block:
    the sentence ids run on across the blocks, and every sentence is the treebank's."""
    from structkit.batch import collect_inputs, run
    from structkit.pipeline.annotate import AnnotateJob
    from structkit.components import chain

    raw = tmp_path / "long.txt"
    raw.write_text(TEXT * 6, encoding="utf-8")
    out = tmp_path / "out.conllu"
    run(AnnotateJob(chain([str(tiny_model)])), collect_inputs([str(raw)]), output=str(out),
        block_bytes=100)
    doc = structkit.Doc.from_conllu(out.read_text(encoding="utf-8"))
    assert [s.sent_id for s in doc.sents] == [str(k) for k in range(1, 19)]
    assert [_word_tuples(s.words) for s in doc.sents] == WORDS * 6
    # one document: "# newdoc" once, at the start
    assert out.read_text(encoding="utf-8").count("# newdoc") == 1


def test_the_server_answers_the_expected_words(tiny_model):
    from structkit.serve import Tokenizers, answer, load_models, pipeline_tokenizers

    served = load_models([f"tiny={tiny_model}"])
    toks = Tokenizers()
    pipeline_tokenizers(served, toks)

    from structkit.serve import Job   # no deadline

    body, _ = answer({"text": TEXT, "models": ["tiny"]}, "pipeline", served, Job(), tokenizers=toks)
    got = json.loads(body)
    assert [s["text"] for s in got["sentences"]] == ["Dogs see cats.", "Tom reads the books.",
                                                     "The dogs cannot sleep."]
    words = [[(t["form"], t["lemma"], t["upos"], t["xpos"], None if t["feats"] == "_" else t["feats"],
               t["head"], t["deprel"]) for t in s["tokens"]] for s in got["sentences"]]
    assert words == WORDS
    conllu, _ = answer({"text": TEXT, "models": ["tiny"], "format": "conllu"}, "pipeline", served, Job(),
                       tokenizers=toks)
    rows = [ln.split("\t") for ln in conllu.decode().splitlines() if ln and not ln.startswith("#")]
    want = [ln.split("\t") for ln in EXPECTED.splitlines() if ln and not ln.startswith("#")]
    assert [r[:8] for r in rows] == [r[:8] for r in want]


class _SVG(HTMLParser):
    """The words, tags and arcs of the renderer's SVG, read from its elements."""

    def __init__(self):
        super().__init__()
        self.sents: list[dict] = []
        self._cls = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class", "")
        if tag == "svg":
            self.sents.append({"words": [], "tags": [], "arcs": [], "roots": []})
        elif tag == "path" and cls == "arc":
            self.sents[-1]["arcs"].append((int(a["data-dep"]), int(a["data-head"]), a["data-label"]))
        elif tag == "line" and cls == "root":
            self.sents[-1]["roots"].append(int(a["data-dep"]))
        self._cls = cls if tag == "text" else None

    def handle_data(self, data):
        if self._cls == "word":
            self.sents[-1]["words"].append(data)
        elif self._cls == "pos":
            self.sents[-1]["tags"].append(data)
        self._cls = None


def test_the_picture_draws_the_expected_words_tags_and_arcs(tiny_model):
    doc = structkit.load(tiny_model)(TEXT)
    p = _SVG()
    p.feed(structkit.render(doc))
    assert len(p.sents) == 3
    for s, words in zip(p.sents, WORDS):
        assert s["words"] == [w[0] for w in words]
        assert s["tags"] == [w[2] for w in words]            # UPOS under each word
        assert sorted(s["arcs"]) == sorted((i, w[5], w[6]) for i, w in enumerate(words, 1) if w[5])
        assert s["roots"] == [i for i, w in enumerate(words, 1) if w[5] == 0]
    # the same picture in a notebook
    assert re.sub(r"\s+", " ", doc._repr_html_()) == re.sub(r"\s+", " ", structkit.render(doc))


def test_the_servers_tokenizer_of_a_pipeline_is_described_by_the_models_card(tiny_model):
    """/models lists a pipeline's tokenizer with the training file and checksum of the
    pipeline's own card (it named the tokenizer part's file and no checksum)."""
    import hashlib

    from structkit.serve import Tokenizers, load_models, pipeline_tokenizers

    served = load_models([f"tiny={tiny_model}"])
    toks = Tokenizers()
    pipeline_tokenizers(served, toks)
    meta = toks.models["tiny"].meta
    assert meta["train_file"].endswith("train.conllu")
    assert meta["train_sha256"] == hashlib.sha256(TINY.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", ["annotate", "eval"])
def test_a_full_temporary_folder_is_named_not_standard_output(tiny_model, tmp_path, command):
    """Issue 41, item 11: with TMPDIR on a full disk, annotate (a pipeline unpacked its parts
    there) said 'standard output: no space left'. A file-size limit makes every write past 4 KB
    fail (EFBIG) in the child, as a full disk would: the error names the temporary folder.
    Issue 42: a pipeline's parts are read from memory, so annotate writes nothing there and
    works; eval still keeps standard input in a temporary file."""
    import os
    import resource
    import signal
    import subprocess
    import sys

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    args = {"annotate": ["annotate", "-m", str(tiny_model), "-"],     # unpacks the pipeline's parts
            "eval": ["eval", "--task", "ud", str(TINY), "-"]}[command]   # keeps stdin in a file
    stdin = b"Il gatto dorme.\n" if command == "annotate" else TINY.read_bytes()
    r = subprocess.run([sys.executable, "-c", "from structkit.cli import main; main()", *args],
                       input=stdin, capture_output=True, preexec_fn=limited, env={**os.environ, "TMPDIR": str(tmp)})
    err = r.stderr.decode()
    if command == "annotate":
        assert r.returncode == 0 and err == "", err
        assert [line.split("\t")[1] for line in r.stdout.decode().splitlines() if line[:1].isdigit()] \
            == ["Il", "gatto", "dorme", "."]
        assert list(tmp.iterdir()) == []
        return
    assert r.returncode == 1 and err.count("\n") == 1, err
    assert err.startswith(f"structkit: error: <stdin>: cannot keep standard input in a temporary file in {tmp}: "), err
    assert "set TMPDIR" in err and "standard output" not in err and r.stdout == b""
    assert list(tmp.iterdir()) == []     # nothing left there
