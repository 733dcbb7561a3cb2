"""A request's answer written out, from its sentences (``Options.sents``) and what its models
gave them (``Options.results``): each sentence as JSON (tokens with their labels, scores and
explanations, spans, and with ``render`` its picture and the span colours:
``structkit.rendering``, the one renderer of the page, notebooks and ``render()``) or as
CoNLL-U.
"""
from __future__ import annotations

import io
import json
from typing import Any

from structkit import rendering
from structkit.io.document import Sentence, new_sentence, write_conllu
from structkit.rendering import MULTIWORD_COLOUR, View, ViewSpan, ViewWord, sentence_svg
from structkit.serve.inputs import Options
from structkit.serve.registry import Served
from structkit.serving import forms, input_pos

_PARTS = ("lemma", "upos", "xpos", "feats")   # a pipeline's analysis of a word


def _dumps(obj: Any) -> bytes:
    # as Starlette's JSONResponse writes it
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=None,
                      separators=(",", ":")).encode("utf-8")


def to_json(opts: Options, warnings: list[str]) -> dict:
    colours = span_colours(opts.models) if opts.render else None
    out: dict = {"models": [{"name": m.name, "task": m.task} for m in opts.models]}
    if colours is not None:
        out["legend"] = _legend(colours)
    out["sentences"] = [_sentence_json(opts, k, colours) for k in range(len(opts.sents))]
    out["warnings"] = warnings
    return out


def span_colours(models: list[Served]) -> dict[tuple[str, str], str]:
    """The colour of each (span model, type) of a request: the palette over the types of its
    span models (their labels without the B-/I- prefix), in the request's order."""
    return rendering.span_colours((sv.name, types) for sv in models
                                  for types in [sv.serving.span_types(sv)] if types)


def _legend(colours: dict[tuple[str, str], str]) -> list[dict]:
    return [{"model": m, "type": t, "colour": c} for (m, t), c in colours.items()]


def _shown(s: Sentence, text: str | None) -> tuple[str, int, list[int], list[int], list[dict]]:
    """How the answer places a request's sentence: its text, where that begins in the request's
    text, each word's offsets (from the same start) and its multiword tokens. Of the request's
    ``text``, its surface tokens (a multiword token's words have its offsets); of token lists or
    CoNLL-U (``text`` None), each word on its own, in the text the words spell (with the space
    after each that its MISC does not take away)."""
    if text is None:
        rows = s.rows
        if s.held_as_lines:
            own, starts, ends = _joined([r[1] for r in rows],
                                        ["SpaceAfter=No" not in r[9].split("|") for r in rows])
        else:
            own, starts, ends = _joined([r[0] for r in rows], [True] * len(rows))
        return own, 0, starts, ends, []
    # its surface tokens (a multiword token's range line, or a word outside one), found in the
    # text from its start as ``Doc`` finds them: the tokenizer's forms are the text's
    # characters, in order, with only spaces between
    starts: list[int] = []
    ends: list[int] = []
    multiword = []
    at, inside = s.start, 0
    for line in s.lines:
        if line.startswith("#"):
            continue
        tid, form, _ = line.split("\t", 2)
        first, dash, last = tid.partition("-")
        if not dash and int(first) <= inside:
            continue   # a word of the multiword token before it
        start = text.find(form, at)
        at = start + len(form)
        n = 1
        if dash:
            inside = int(last)
            n = inside - int(first) + 1
            multiword.append({"first": int(first), "last": inside, "form": form, "start": start, "end": at})
        starts += [start] * n
        ends += [at] * n
    return text[s.start:s.end], s.start, starts, ends, multiword


def _joined(words: list[str], space_after: list[bool]) -> tuple[str, list[int], list[int]]:
    """A sentence's text rebuilt from its words, and each word's offsets in it."""
    parts, starts, ends, at = [], [], [], 0
    for w, sp in zip(words, space_after):
        starts.append(at)
        ends.append(at + len(w))
        parts.append(w + (" " if sp else ""))
        at += len(w) + (1 if sp else 0)
    return "".join(parts).rstrip(" "), starts, ends


def _tip(opts: Options, k: int, i: int, word: str, start: int, end: int, analysis: list | None) -> str:
    """The plain-text tip of word ``i`` of sentence ``k`` (the SVG's <title>): form, id,
    offsets, a pipeline's analysis, each model's label (with margin, runner-up and top features
    when explained), head and label."""
    lines = [f"{word}  #{i + 1} [{start}-{end})"]
    if analysis is not None:
        lines += [f"{p}: {v}" for p, v in zip(_PARTS, analysis[i]) if v != "_"]
    for sv in opts.models:
        lines += sv.serving.tip(sv, opts.results.get(sv.name), k, i)
    return "\n".join(lines)


def sentence_view(opts: Options, k: int, colours: dict[tuple[str, str], str]):
    """What the picture of sentence ``k`` shows: its words, the first POS model's tags under
    them (else a morph model's UPOS, else the input's POS), the parser's arcs, one row of spans
    per span model, then a row of its multiword tokens."""
    s, results = opts.sents[k], opts.results
    own, offset, starts, ends, multiword = _shown(s, opts.text)
    tags = results.pos(k)
    if tags is None:
        analyses = results.analyses(k)
        tags = [a["upos"] for a in analyses] if analyses and "upos" in analyses[0] else input_pos(s)
    heads, deprels = results.tree(k) or (None, None)
    analysis = results.analysis(k)
    words = forms(s)
    shown = [ViewWord(w, None if tags is None else tags[i], None if heads is None else heads[i],
                      None if deprels is None else deprels[i],
                      _tip(opts, k, i, w, starts[i], ends[i], analysis))
             for i, w in enumerate(words)]
    spans, row = [], 0
    for sv in opts.models:
        if not sv.serving.span_types(sv):
            continue
        for typ, a, b in sv.serving.spans(sv, results.get(sv.name), k):
            text = own[starts[a] - offset:ends[b - 1] - offset]
            spans.append(ViewSpan(row, a, b, typ, sv.name, colours.get((sv.name, typ), "#5b6673"),
                                  f'{sv.name}: {typ} "{text}"'))
        row += 1
    if multiword:   # a row of the multiword tokens, as a Doc's picture has
        for m in multiword:
            spans.append(ViewSpan(row, m["first"] - 1, m["last"], m["form"], "token", MULTIWORD_COLOUR,
                                  f"token {m['form']!r}: " + " ".join(words[m["first"] - 1:m["last"]])))
        row += 1
    return View(own, shown, spans, row)


def _sentence_json(opts: Options, k: int, colours: dict | None = None) -> dict:
    s, results = opts.sents[k], opts.results
    own, offset, starts, ends, multiword = _shown(s, opts.text)
    pos = input_pos(s)
    outs = results.outputs.items()
    labels = [(name, o.labels[k]) for name, o in outs if o.labels is not None]
    scores = [(name, o.scores[k]) for name, o in outs if o.scores is not None]
    explained = [(name, o.explanations[k]) for name, o in outs if o.explanations is not None]
    analysis = results.analysis(k)
    tree = results.tree(k)
    toks = []
    for i, w in enumerate(forms(s)):
        t: dict = {"id": i + 1, "form": w, "start": starts[i], "end": ends[i]}
        if pos is not None:
            t["input_pos"] = pos[i]
        t["labels"] = {name: lab[i] for name, lab in labels}
        if opts.scores:
            t["scores"] = {name: (m[i] if m is not None else None) for name, m in scores}
        if opts.explain:
            t["explanations"] = {name: (e[i] if e is not None else None) for name, e in explained}
        if analysis is not None:
            t.update(zip(_PARTS, analysis[i]))
        if tree is not None:
            t["head"] = tree[0][i]
            t["deprel"] = tree[1][i]
        toks.append(t)
    spans = []
    for sv in opts.models:
        for typ, a, b in sv.serving.spans(sv, results.get(sv.name), k):
            spans.append({"model": sv.name, "task": sv.task, "type": typ, "start": a,
                          "end": b, "char_start": starts[a], "char_end": ends[b - 1],
                          "text": own[starts[a] - offset:ends[b - 1] - offset]})
    sent = {"text": own, "tokens": toks, "spans": spans}
    if multiword:
        sent["multiword"] = multiword
    if colours is not None:
        sent["svg"] = sentence_svg(sentence_view(opts, k, colours), k)
    return sent


def to_conllu(opts: Options, first: int = 0, end: int | None = None) -> str:
    """CoNLL-U of sentences ``first`` to ``end``: their lines (as read, or made of the request's
    text), or fresh ones of token lists, with each model's column filled where its command would
    put it (``Serving.fill``), then a pipeline's LEMMA to FEATS and the tree's HEAD/DEPREL."""
    buf = io.StringIO()
    results = opts.results
    for k in range(first, len(opts.sents) if end is None else end):
        s = opts.sents[k]
        if s.held_as_lines:
            out = Sentence.from_lines([list(r) for r in s.rows], list(s.lines), list(s.word_at))
        else:   # token lists: a word per token, the POS of [word, POS] pairs as XPOS
            words = forms(s)
            pos = input_pos(s)
            out = new_sentence(((w, [w], True) for w in words),
                               [f"# sent_id = {k + 1}", f"# text = {' '.join(words)}"],
                               None if not pos else [("_", "_", p, "_", "_", "_") for p in pos])
        rows = out.rows
        for sv in opts.models:
            sv.serving.fill(sv, results.get(sv.name), k, rows)   # its columns, as its command writes them
        analysis = results.analysis(k)
        if analysis is not None:
            for r, a in zip(rows, analysis):
                r[2:6] = a
        tree = results.tree(k)
        if tree is not None:
            for r, h, d in zip(rows, *tree):
                r[6], r[7] = str(h), d
        for at, r in zip(out.word_at, rows):
            out.lines[at] = "\t".join(r)
        write_conllu([out], buf)
    return buf.getvalue()
