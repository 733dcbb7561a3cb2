"""A request's answer written out: each sentence as JSON (tokens with their labels, scores and
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
from structkit.serve.inputs import Sent
from structkit.serve.registry import Served


def _dumps(obj: Any) -> bytes:
    # as Starlette's JSONResponse writes it
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=None,
                      separators=(",", ":")).encode("utf-8")


def to_json(sents: list[Sent], models: list[Served], scores: bool, explain: bool,
            warnings: list[str], render: bool = False) -> dict:
    colours = span_colours(models) if render else None
    out: dict = {"models": [{"name": m.name, "task": m.task} for m in models]}
    if colours is not None:
        out["legend"] = _legend(colours)
    out["sentences"] = [_sentence_json(s, models, scores, explain, colours, k)
                        for k, s in enumerate(sents)]
    out["warnings"] = warnings
    return out


def span_colours(models: list[Served]) -> dict[tuple[str, str], str]:
    """The colour of each (span model, type) of a request: the palette over the types of its
    span models (their labels without the B-/I- prefix), in the request's order."""
    return rendering.span_colours((sv.name, types) for sv in models
                                  for types in [sv.serving.span_types(sv)] if types)


def _legend(colours: dict[tuple[str, str], str]) -> list[dict]:
    return [{"model": m, "type": t, "colour": c} for (m, t), c in colours.items()]


def _tip(s: Sent, i: int, models: list[Served]) -> str:
    """The plain-text tip of word ``i`` (the SVG's <title>): form, id, offsets, each model's
    label (with margin, runner-up and top features when explained), head and label."""
    lines = [f"{s.words[i]}  #{i + 1} [{s.starts[i]}-{s.ends[i]})"]
    analysis = getattr(s, "analysis", None)   # a pipeline model's (lemma, upos, xpos, feats)
    if analysis is not None:
        lines += [f"{k}: {v}" for k, v in zip(("lemma", "upos", "xpos", "feats"), analysis[i]) if v != "_"]
    for sv in models:
        lines += sv.serving.tip(sv, s, i)
    return "\n".join(lines)


def sentence_view(s: Sent, models: list[Served], colours: dict[tuple[str, str], str]):
    """What the picture of a sentence shows: its words, the first POS model's tags under them
    (else the input's POS), the parser's arcs, one row of spans per span model, then a row of
    its multiword tokens."""

    tags = s.tagger_pos()   # the first POS model's of the request, else the input's
    if s.predicted_pos is None and s.analyses and "upos" in s.analyses[0]:
        tags = [a["upos"] for a in s.analyses]   # else a morph model's UPOS
    words = [ViewWord(w, None if tags is None else tags[i],
                      None if s.heads is None else s.heads[i],
                      None if s.deprels is None else s.deprels[i], _tip(s, i, models))
             for i, w in enumerate(s.words)]
    spans, row = [], 0
    for sv in models:
        if not sv.serving.span_types(sv):
            continue
        for typ, a, b in sv.serving.spans(sv, s):
            text = s.text[s.starts[a] - s.offset:s.ends[b - 1] - s.offset]
            spans.append(ViewSpan(row, a, b, typ, sv.name, colours.get((sv.name, typ), "#5b6673"),
                                  f'{sv.name}: {typ} "{text}"'))
        row += 1
    if s.multiword:   # a row of the multiword tokens, as a Doc's picture has
        for m in s.multiword:
            spans.append(ViewSpan(row, m["first"] - 1, m["last"], m["form"], "token", MULTIWORD_COLOUR,
                                  f"token {m['form']!r}: " + " ".join(s.words[m["first"] - 1:m["last"]])))
        row += 1
    return View(s.text, words, spans, row)


def _sentence_json(s: Sent, models: list[Served], scores: bool, explain: bool,
                   colours: dict | None = None, k: int = 0) -> dict:
    toks = []
    for i, w in enumerate(s.words):
        t: dict = {"id": i + 1, "form": w, "start": s.starts[i], "end": s.ends[i]}
        if s.pos is not None:
            t["input_pos"] = s.pos[i]
        t["labels"] = {name: lab[i] for name, lab in s.labels.items()}
        if scores:
            t["scores"] = {name: (m[i] if m is not None else None) for name, m in s.scores.items()}
        if explain:
            t["explanations"] = {name: (e[i] if e is not None else None)
                                 for name, e in s.explanations.items()}
        if s.analysis is not None:
            t.update(zip(("lemma", "upos", "xpos", "feats"), s.analysis[i]))
        if s.heads is not None:
            t["head"] = s.heads[i]
            t["deprel"] = s.deprels[i]
        toks.append(t)
    spans = []
    for sv in models:
        for typ, a, b in sv.serving.spans(sv, s):
            spans.append({"model": sv.name, "task": sv.task, "type": typ, "start": a,
                          "end": b, "char_start": s.starts[a], "char_end": s.ends[b - 1],
                          "text": s.text[s.starts[a] - s.offset:s.ends[b - 1] - s.offset]})
    sent = {"text": s.text, "tokens": toks, "spans": spans}
    if s.multiword:
        sent["multiword"] = s.multiword
    if colours is not None:
        sent["svg"] = sentence_svg(sentence_view(s, models, colours), k)
    return sent


def to_conllu(sents: list[Sent], models: list[Served], first: int = 1) -> str:
    """CoNLL-U: the input's lines (CoNLL-U in) or fresh ones, with each model's column filled
    where its command would put it (``Serving.fill``) and HEAD/DEPREL from the parser."""
    buf = io.StringIO()
    for k, s in enumerate(sents):
        if s.conllu is not None:
            out = Sentence.from_lines([list(r) for r in s.conllu.rows], list(s.conllu.lines),
                                      list(s.conllu.word_at))
        else:
            out = new_sentence(_tokens(s), [f"# sent_id = {first + k}", f"# text = {' '.join(s.text.split())}"],
                               None if not s.pos else [("_", "_", p, "_", "_", "_") for p in s.pos])
        rows = out.rows
        for sv in models:
            sv.serving.fill(sv, s, rows)   # its columns, as its command writes them
        if s.analysis is not None:
            for r, a in zip(rows, s.analysis):
                r[2:6] = a
        if s.heads is not None:
            for r, h, d in zip(rows, s.heads, s.deprels):
                r[6], r[7] = str(h), d
        for at, r in zip(out.word_at, rows):
            out.lines[at] = "\t".join(r)
        write_conllu([out], buf)
    return buf.getvalue()


def _tokens(s: Sent):
    """The request sentence's surface tokens: (form, words, space after), a multiword token's
    words together."""
    mwt = {m["first"]: m for m in s.multiword}
    i = 0
    while i < len(s.words):
        m = mwt.get(i + 1)
        last = m["last"] if m is not None else i + 1
        yield (m["form"] if m is not None else s.words[i], s.words[i:last],
               s.space_after[last - 1] if s.space_after else True)
        i = last
