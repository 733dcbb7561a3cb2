"""Components trained apart and chained (`annotate -m A -m B -m C`, ``structkit.load([...])``).

A tokenizer, a morph model and a parser are each trained on the hand-written treebank
(``tests/fixtures/tiny_ud``), which they learn by heart; chained, they must give the treebank's
own analysis, typed into ``test_pipeline_expected.EXPECTED``. Chains that cannot work are
refused in one line: a parser with nothing before it giving the POS it reads, a tokenizer after
the first place, a tagger whose tags the parser never saw, a parser reading FEATS after a model
that gives none. Each model trains in about a second; no corpus is needed.
"""
from __future__ import annotations

import re

import pytest

import structkit
from clitools import assert_one_line_error
from test_pipeline_expected import EXPECTED, TEXT, TINY, WORDS


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    """Each part trained apart with its task's defaults, and two POS taggers (UPOS, XPOS)."""
    from structkit.cli import main

    folder = tmp_path_factory.mktemp("parts")
    runs = {"tok": ["--task", "tokenize"], "morph": ["--task", "morph"], "parse": ["--task", "parse"],
            "upos": ["--task", "pos"], "xpos": ["--task", "pos", "--label-column", "xpos"]}
    out = {}
    for name, args in runs.items():
        out[name] = folder / f"{name}.skm"
        with pytest.raises(SystemExit) as ei:
            main(["train", *args, "--train", str(TINY), "--model", str(out[name]), "-q"])
        assert ei.value.code in (0, None), name
    out["raw"] = folder / "in.txt"
    out["raw"].write_text(TEXT, encoding="utf-8")
    return out


def test_annotate_chains_models_trained_apart(parts, sk):
    r = sk("annotate", "-m", parts["tok"], "-m", parts["morph"], "-m", parts["parse"], parts["raw"])
    assert r.code == 0, r.err
    assert r.out == EXPECTED


def test_load_chains_a_list_of_model_files(parts):
    nlp = structkit.load([parts["tok"], parts["morph"], parts["parse"]])
    assert nlp.parts == ["tokenize", "morph", "parse"]
    doc = nlp(TEXT)
    assert doc.to_conllu() == EXPECTED
    assert [[(w.form, w.lemma, w.upos, w.xpos, w.feats, w.head, w.deprel) for w in s.words]
            for s in doc.sents] == WORDS
    named = structkit.load(tokenizer=parts["tok"], tagger=parts["morph"], parser=parts["parse"])
    assert named.to_conllu(TEXT) == EXPECTED


def test_each_component_is_called_on_a_doc(parts):
    """``component(doc) -> doc``: the tokenizer makes the sentences, then each later component
    fills its own columns and nothing else."""
    tok, morph, parser = structkit.load([parts["tok"], parts["morph"], parts["parse"]]).components
    doc = tok(TEXT)
    assert [[w.form for w in s.words] for s in doc.sents] == [[w[0] for w in s] for s in WORDS]
    assert all(w.upos is None and w.head is None for w in doc.words)
    doc = morph(doc)
    assert [(w.lemma, w.upos, w.xpos) for w in doc.words] == [w[1:4] for s in WORDS for w in s]
    assert all(w.head is None for w in doc.words)
    doc = parser(doc)
    assert [(w.head, w.deprel) for w in doc.words] == [w[5:7] for s in WORDS for w in s]
    assert parser(morph(tok(TEXT))).to_conllu() == EXPECTED   # what nlp(TEXT) gives
    assert morph.requires == {"words"} and {"lemma", "upos", "xpos", "feats"} <= morph.provides
    assert "words" in parser.requires and parser.provides == {"head", "deprel"}


def test_a_pos_tagger_can_stand_before_the_parser_where_their_tags_agree(parts, sk):
    """The UPOS tagger's tags are the parser's: the chain runs on CoNLL-U columns it fills
    (UPOS and XPOS both get the tagger's tag); only FEATS-reading is then refused on text."""
    r = sk("annotate", "-m", parts["tok"], "-m", parts["upos"], parts["raw"])
    assert r.code == 0, r.err
    rows = [ln.split("\t") for ln in r.out.splitlines() if ln and not ln.startswith("#") and "-" not in
            ln.split("\t")[0]]
    assert [(x[1], x[3], x[4]) for x in rows] == [(w[0], w[2], w[2]) for s in WORDS for w in s]


@pytest.mark.parametrize("order, expect", [
    (("parse",), "reads UPOS, which no model before it"),
    (("tok", "parse"), "reads UPOS, which no model before it"),
    (("tok", "parse", "morph"), "reads UPOS, which no model before it"),
    (("morph", "tok"), "a tokenizer can only come first"),
    (("tok", "xpos", "parse"), "tag sets do not match"),
    (("tok", "upos", "parse"), "reads FEATS and LEMMA"),
])
def test_a_chain_that_cannot_work_is_refused_in_one_line(parts, sk, order, expect):
    args = [x for name in order for x in ("-m", parts[name])]
    assert_one_line_error(sk("annotate", *args, parts["raw"]), expect)
    with pytest.raises(structkit.UserError, match=expect.split(",")[0]) as ei:
        structkit.load([parts[name] for name in order])
    assert "\n" not in str(ei.value)


def test_an_empty_text_is_an_empty_document_on_every_path(parts, sk, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    r = sk("annotate", "-m", parts["tok"], "-m", parts["morph"], "-m", parts["parse"], empty)
    assert (r.code, r.out) == (0, "")
    nlp = structkit.load([parts["tok"], parts["morph"], parts["parse"]])
    assert nlp.to_conllu("\n\n") == "" and len(nlp("")) == 0


def test_a_long_sentence_is_cut_with_a_warning_on_every_path(parts, sk, tmp_path, capsys):
    """As the server does: a sentence of over 1,000 tokens is cut into pieces of at most 1,000,
    and stderr says so in one line (it was silent in annotate)."""
    long = tmp_path / "long.txt"
    long.write_text("word " * 2500 + "\n", encoding="utf-8")
    r = sk("annotate", "-m", parts["tok"], long)
    assert r.code == 0, r.err
    sizes = [len([ln for ln in block.splitlines() if ln and not ln.startswith("#")])
             for block in r.out.split("\n\n") if block.strip()]
    assert sizes == [1000, 1000, 500]
    assert r.err.splitlines() == [f"structkit: warning: {long}: 1 sentence(s) of the text had over 1000 tokens: "
                                  "each was cut into pieces of at most 1000 tokens"]
    capsys.readouterr()
    doc = structkit.load([parts["tok"]])("word " * 2500)
    assert [len(s.words) for s in doc.sents] == [1000, 1000, 500]
    assert "1 sentence(s) of the text had over 1000 tokens" in capsys.readouterr().err


def test_the_long_sentence_warning_is_said_once_an_input_not_once_a_block(parts, tmp_path):
    """Found by the hostile harness of issue 41: `yes | annotate -` said the warning for every
    block read (16 lines a second). A batch run says it once an input. (A process of its own:
    the blocks are made small there.)"""
    import subprocess
    import sys

    long = tmp_path / "long.txt"
    long.write_text(("word " * 1500 + "\n\n") * 4, encoding="utf-8")
    code = ("import sys; from structkit import batch; from structkit.cli import main\n"
            "batch.run.__kwdefaults__['block_bytes'] = 4096   # a block a paragraph\n"
            "main(sys.argv[1:])")
    r = subprocess.run([sys.executable, "-c", code, "annotate", "-m", str(parts["tok"]), str(long)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("# text") == 8                                   # each cut in two
    assert r.stderr.splitlines() == [f"structkit: warning: {long}: 1 sentence(s) of the text had over 1000 "
                                     "tokens: each was cut into pieces of at most 1000 tokens"]


def test_components_run_in_the_order_given(parts, sk):
    """Later components write over earlier ones: a UPOS tagger then the morph model leaves the
    morph model's XPOS (the treebank's NNS, VBP...), the other way round the tagger's tag (NOUN,
    VERB...) in both UPOS and XPOS."""
    r = sk("annotate", "-m", parts["tok"], "-m", parts["upos"], "-m", parts["morph"], parts["raw"])
    assert r.code == 0, r.err
    rows = [ln.split("\t") for ln in r.out.splitlines() if ln and not ln.startswith("#") and "-" not in
            ln.split("\t")[0]]
    assert [(x[3], x[4]) for x in rows] == [(w[2], w[3]) for s in WORDS for w in s]
    r = sk("annotate", "-m", parts["tok"], "-m", parts["morph"], "-m", parts["upos"], parts["raw"])
    assert r.code == 0, r.err
    rows = [ln.split("\t") for ln in r.out.splitlines() if ln and not ln.startswith("#") and "-" not in
            ln.split("\t")[0]]
    assert [(x[2], x[3], x[4]) for x in rows] == [(w[1], w[2], w[2]) for s in WORDS for w in s]


def test_components_pipe_docs_through_forked_processes(parts):
    """``component.pipe(docs, jobs=2)``: each Doc analysed as the component alone does it, in
    order (the first in this process, the others in two forked workers)."""
    nlp = structkit.load([parts["tok"], parts["morph"], parts["parse"]])
    tok, morph, parser = nlp.components
    texts = [TEXT, "The dogs cannot sleep.\n", TEXT]
    docs = list(parser.pipe(morph.pipe(tok.pipe(texts, jobs=2), jobs=2), jobs=2))
    third = EXPECTED[EXPECTED.index("# sent_id = 3"):].replace("# sent_id = 3", "# sent_id = 1")
    assert [d.to_conllu() for d in docs] == [EXPECTED, "# newdoc\n# newpar\n" + third, EXPECTED]
    assert [d.to_conllu() for d in nlp.chain.pipe(texts, jobs=2)] == [d.to_conllu() for d in docs]
    with pytest.raises(structkit.UserError, match="jobs must be"):
        list(tok.pipe(texts, jobs=0))
    with pytest.raises(structkit.UserError, match="pipe takes texts"):
        list(nlp.pipe([TEXT, ["not", "text"]], jobs=2))


def test_annotate_refuses_conllu_read_as_text_and_analyses_it_with_input_conllu(parts, sk, tmp_path):
    """CoNLL-U given to `annotate` is not tokenised as words ('#', 'sent_id', '1', ...): one line
    naming the file and the first token row, and the option that reads it. With --input conllu
    its tokens, sentences, comments and MISC stay as given and the models fill LEMMA..DEPREL:
    the typed-in analysis, under the file's own sentence ids."""
    blank = []
    for line in EXPECTED.splitlines():
        cols = line.split("\t")
        if len(cols) == 10 and "-" not in cols[0]:
            cols[2:8] = ["_"] * 6
        blank.append("\t".join(cols))
    src = tmp_path / "in.conllu"
    src.write_text("\n".join(blank).replace("# sent_id = ", "# sent_id = mine-") + "\n", encoding="utf-8")
    first_row = next(k for k, line in enumerate(blank, 1) if line and not line.startswith("#"))
    r = sk("annotate", "-m", parts["tok"], "-m", parts["morph"], "-m", parts["parse"], src)
    assert_one_line_error(r, f"{src}:{first_row}:", "give --input conllu")
    r = sk("annotate", "-m", parts["tok"], "-m", parts["morph"], "-m", parts["parse"], "--input", "conllu", src)
    assert r.code == 0, r.err
    assert r.out == EXPECTED.replace("# sent_id = ", "# sent_id = mine-")


def test_pipe_analyses_many_short_texts_together(parts, monkeypatch):
    """Issue 40, item 14: ``nlp.pipe`` over many short texts analyses their sentences a group at a
    time, as `annotate` does those of one file, not one text at a time (each call pays the models'
    per-call costs: the word types' features, the kernel calls). The answers are those of one
    text at a time, written by hand in ``EXPECTED``; with jobs=1 the morph model and the parser
    are called once for 40 texts; a bad item is still refused in one line."""
    import structkit.components as C

    nlp = structkit.load([parts["tok"], parts["morph"], parts["parse"]])
    _, morph, parser = nlp.components
    calls = []
    for c in (morph, parser):
        real = c.process
        monkeypatch.setattr(c, "process", lambda sents, name="-", real=real: (calls.append(len(sents)),
                                                                                 real(sents, name))[1])
    docs = list(nlp.pipe([TEXT] * 40))
    assert [d.to_conllu() for d in docs] == [EXPECTED] * 40
    n = len(docs[0].sents)
    assert calls == [40 * n, 40 * n]
    for d in docs:   # offsets point into each text
        tok = d.sents[-1].tokens[-1]
        assert d.text[tok.start:tok.end] == tok.form
    monkeypatch.setattr(C, "GROUP_TEXTS", 16)   # groups of 16 texts: 3 calls each, same answers
    calls.clear()
    assert [d.to_conllu() for d in nlp.pipe([TEXT] * 40)] == [EXPECTED] * 40
    assert calls == [16 * n, 16 * n, 16 * n, 16 * n, 8 * n, 8 * n]
    with pytest.raises(structkit.UserError, match="pipe takes texts"):
        list(nlp.pipe([TEXT, 3]))


def test_pipe_with_jobs_reads_its_input_as_it_goes(parts, monkeypatch):
    """Issue 41, item 9: ``nlp.pipe(texts, jobs=2)`` reads ``texts`` as results are taken, a few
    groups ahead (it read them all first: an endless iterator ended in MemoryError). Groups of 10
    texts here: after 5 results, at most the first text and 2 * jobs + 1 groups have been read."""
    import itertools

    import structkit.components as C

    monkeypatch.setattr(C, "GROUP_TEXTS", 10)
    nlp = structkit.load([parts["tok"], parts["morph"], parts["parse"]])
    pulled = []

    def texts():
        for k in range(100_000):
            pulled.append(k)
            yield TEXT

    got = list(itertools.islice(nlp.pipe(texts(), jobs=2), 5))
    assert [d.to_conllu() for d in got] == [EXPECTED] * 5
    assert len(pulled) <= 1 + 10 * (2 * 2 + 1), len(pulled)
    for bad in (None, 5):
        with pytest.raises(structkit.UserError, match="pipe takes an iterable"):
            list(nlp.pipe(bad, jobs=2))


def test_pipe_workers_end_with_their_parent(parts, tmp_path):
    """Issue 41, item 14: a process using ``nlp.pipe(texts, jobs=2)`` ended by SIGKILL (no clean-up
    runs) leaves no worker behind: the workers exit when their parent is gone."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "run.py"
    script.write_text(
        "import itertools, os, sys, structkit\n"
        f"nlp = structkit.load([{str(parts['tok'])!r}, {str(parts['morph'])!r}, {str(parts['parse'])!r}])\n"
        f"it = nlp.pipe(itertools.repeat({TEXT!r}), jobs=2)\n"
        "next(it); next(it)\n"
        "print('started', flush=True)\n"
        "import time\n"
        "while True: time.sleep(1)\n", encoding="utf-8")
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "started"
        children = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
        assert len(children) >= 2, children
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        deadline = time.monotonic() + 20
        alive = children
        while alive and time.monotonic() < deadline:
            time.sleep(0.2)
            alive = [c for c in alive if os.path.exists(f"/proc/{c}") and
                     open(f"/proc/{c}/stat").read().split(")")[1].split()[0] != "Z"]
        assert not alive, f"workers {alive} outlived their parent"
    finally:
        if p.poll() is None:
            p.kill()


def test_bad_values_given_to_the_api_are_one_line_errors(parts):
    """Issue 41, item 10: what the API raised bare (TypeError, UnicodeEncodeError) is one
    UserError line saying what is wrong."""
    nlp = structkit.load([parts["tok"], parts["morph"], parts["parse"]])
    cases = {"a model file path": lambda: structkit.load(5),
             "U+D800) at character 4": lambda: nlp("Il \ud800 gatto."),
             "U+DC80) at character 3": lambda: list(nlp.pipe(["a \udc80 b", TEXT])),
             "U+DC81": lambda: nlp.to_conllu("a \udc81 b"),
             "expected text as a str, got int": lambda: structkit.Doc.from_conllu(
                 "1\tA\t_\t_\t_\t_\t0\troot\t_\t_\n\n", text=5),
             "CoNLL-U is not Unicode text": lambda: structkit.Doc.from_conllu(
                 "1\tA\ud800\t_\t_\t_\t_\t0\troot\t_\t_\n\n")}
    for want, call in cases.items():
        with pytest.raises(structkit.UserError, match=re.escape(want)) as ei:
            call()
        assert "\n" not in str(ei.value)


def test_annotate_streams_a_text_that_has_not_ended(parts):
    """Issue 41, item 1: `yes | structkit annotate -m M -` held its input (up to 64 MB a block,
    four blocks before writing) and printed nothing in 200 s. A text with no blank line is
    analysed 64 KB at a time and each block is written when done: the first sentences come out
    while the input is still open."""
    import os
    import select
    import subprocess
    import sys
    import threading
    import time

    p = subprocess.Popen([sys.executable, "-m", "structkit", "annotate", "-m", str(parts["tok"]), "-"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    def feed():   # 1.2 MB, and the input stays open
        try:
            p.stdin.write(b"The dog sleeps .\n" * 70_000)
            p.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    threading.Thread(target=feed, daemon=True).start()
    try:
        deadline, got = time.monotonic() + 60, b""
        while b"# sent_id = 1\n" not in got and time.monotonic() < deadline:
            if select.select([p.stdout], [], [], 1)[0]:
                got += os.read(p.stdout.fileno(), 65536)
        assert b"# sent_id = 1\n" in got and p.poll() is None
    finally:
        p.kill()
        p.wait()


def test_forked_workers_get_the_models_frozen_and_the_caller_keeps_its_collector():
    """Issue 42: ``fork_map`` freezes what is alive when its workers are forked (their collector
    never walks the shared models) and unfreezes it here right after, unless the caller had
    frozen objects itself (a command, the server), which then stay frozen. Checked with
    ``gc.get_freeze_count`` (what the permanent generation holds) and what each worker reports
    of its own."""
    import gc

    from structkit.components import fork_map

    def frozen_in_worker(_):
        return gc.get_freeze_count()

    gc.unfreeze()   # what in-process commands of earlier tests froze (a command freezes for its exit)
    assert gc.get_freeze_count() == 0
    got = list(fork_map(frozen_in_worker, range(4), jobs=2, warm=False))
    assert all(n > 1000 for n in got), got          # the parent's objects, frozen for the workers
    assert gc.get_freeze_count() == 0               # and thawed here
    assert list(fork_map(frozen_in_worker, [], jobs=2, warm=False)) == [] and gc.get_freeze_count() == 0
    gc.freeze()                                      # a caller's own freeze is left alone
    try:
        before = gc.get_freeze_count()
        list(fork_map(frozen_in_worker, range(2), jobs=2, warm=False))
        assert gc.get_freeze_count() >= before > 0
    finally:
        gc.unfreeze()


def test_gc_paused_restores_the_collector_as_it_was():
    import gc

    from structkit.io.document import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()                   # the inner block did not turn it back on
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()                   # off before: left off
    finally:
        gc.enable()
    with pytest.raises(ZeroDivisionError):
        with gc_paused():
            1 / 0
    assert gc.isenabled()
