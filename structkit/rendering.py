"""The one renderer of an analysis: words, their tags, labelled spans and dependency arcs as
SVG, drawn in Python so that every place shows the same picture and a static page needs no
script. ``structkit serve``'s page inserts the SVG its ``/pipeline`` answer carries (it only
adds the hover tips), ``Doc._repr_html_`` is what a notebook shows, and ``structkit.render(doc)``
writes it for a static page (``structkit.doc.render``).

A sentence is first put in a neutral form, a ``View`` (words with one tag line, arcs, spans in
rows), from a ``structkit.Doc`` sentence (``view_of_sentence``) or from the server's JSON
(``structkit.serve``). ``sentence_svg`` lays a view out: word columns as wide as their word or
tag, each arc one level above every arc it covers, the root as a dashed line, one row of
coloured boxes per span model. Widths of text are estimated from Unicode character classes
(a browser measures them; Python has no fonts), generously, so labels do not collide.

Everything from the data (forms, tags, labels, titles) is escaped: forms are untrusted text.
The SVG carries its presentation as attributes (fills, strokes, font sizes) so that it looks the
same where no style sheet applies (GitHub's notebook viewer strips <style>); the classes and
``data-*`` attributes (``path.arc[data-dep][data-head][data-label]``, ``g.token[data-id]``,
``g.span[data-model][data-type][data-start][data-end]``) let a page style it and a test read it.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from html import escape
from typing import Any, Iterable

from structkit.spans import detect_scheme, phrases, split_tag

__all__ = ["View", "ViewWord", "ViewSpan", "PALETTE", "span_colours", "sentence_svg",
           "sentence_html", "view_of_sentence", "render_html", "text_width"]

PALETTE = ("#2f7ed8", "#d9534f", "#3aa655", "#e08b1a", "#8e5cc4", "#1ba3a3", "#c4477e",
           "#7a8c1f", "#5c6bc0", "#a0522d", "#00897b", "#6d4c41")
MULTIWORD_COLOUR = "#8a949f"

# Layout, in px (as the page drew it before the renderer moved to Python).
GAP, MINW, STEP, SPANH = 18, 34, 26, 18
WORD_PX, TAG_PX, LABEL_PX, SPAN_PX = 15, 11, 11, 10
FG, ACCENT, ARC, LABEL = "#1d232b", "#2861c9", "#6b7785", "#384350"


@dataclass
class ViewWord:
    form: str
    tag: str | None = None        # the line under the word (UPOS)
    head: int | None = None       # 1-based, 0 = root, None = not parsed
    deprel: str | None = None
    title: str = ""               # hover text (plain)


@dataclass
class ViewSpan:
    row: int                      # which row of spans (one per span model)
    start: int                    # first word, 0-based
    end: int                      # one past the last word
    type: str
    model: str
    colour: str
    title: str = ""


@dataclass
class View:
    text: str
    words: list[ViewWord]
    spans: list[ViewSpan] = field(default_factory=list)
    rows: int = 0                 # rows of spans drawn (a row may be empty in a sentence)


def span_colours(models: Iterable[tuple[str, Iterable[str]]]) -> dict[tuple[str, str], str]:
    """A colour for each (model, type): the palette in order over the models' types (each
    model's types sorted), so that a legend and the spans agree."""
    out: dict[tuple[str, str], str] = {}
    for name, types in models:
        for t in sorted(set(types)):
            out[(name, t)] = PALETTE[len(out) % len(PALETTE)]
    return out


def text_width(text: str, px: float) -> float:
    """An estimate of the width of ``text`` in a sans-serif font of ``px`` pixels: a full
    em for wide (CJK) characters, none for combining marks, less for narrow Latin letters and
    punctuation, more for capitals; on the generous side."""
    em = 0.0
    for ch in text or "":
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        if unicodedata.east_asian_width(ch) in ("W", "F"):
            em += 1.0
        elif ch in "iljIft.,;:'!|()[]{}`\" ":
            em += 0.34
        elif ch in "mwMW@%":
            em += 0.9
        elif ch.isupper() or ch.isdigit():
            em += 0.68
        else:
            em += 0.58
    return em * px


def _num(x: float) -> str:
    s = f"{x:.1f}"
    return s[:-2] if s.endswith(".0") else s


def _attrs(**kw: object) -> str:
    parts = []
    for k, v in kw.items():
        if v is None:
            continue
        name = k.rstrip("_").replace("_", "-")
        value = _num(v) if isinstance(v, float) else str(v)
        parts.append(f' {name}="{escape(value, quote=True)}"')
    return "".join(parts)


def _arc_levels(arcs: list[tuple[int, int, str]]) -> list[int]:
    """Each arc's level: one above the highest arc it covers (arcs as (dependent, head, label),
    0-based positions)."""
    order = sorted(range(len(arcs)), key=lambda a: abs(arcs[a][0] - arcs[a][1]))
    level: dict[int, int] = {}
    for a in order:
        d, h, _ = arcs[a]
        lo, hi = min(d, h), max(d, h)
        lvl = 1
        for b, lb in level.items():
            bd, bh, _ = arcs[b]
            if min(bd, bh) >= lo and max(bd, bh) <= hi:
                lvl = max(lvl, lb + 1)
        level[a] = lvl
    return [level[a] for a in range(len(arcs))]


def sentence_svg(view: View, k: int = 0) -> str:
    """The SVG of one sentence (``data-sent`` = ``k``)."""
    words = view.words
    parsed = bool(words) and all(w.head is not None for w in words)
    xs, ws = [], []
    x = 10.0
    for w in words:
        width = max(MINW, text_width(w.form, WORD_PX), text_width(w.tag or "", TAG_PX) + 4)
        xs.append(x + width / 2)
        ws.append(width)
        x += width + GAP
    W = max(x, 60.0)
    arcs = [(i, w.head - 1, w.deprel or "_") for i, w in enumerate(words)
            if parsed and w.head and 0 < w.head <= len(words)]  # type: ignore[operator]
    levels = _arc_levels(arcs)
    max_level = max(levels, default=0)
    top = 18 + max(1, max_level) * STEP if parsed else 4
    word_y, tag_y = top + 18, top + 34
    span_top = tag_y + 10
    H = span_top + view.rows * (SPANH + 4) + 4
    out = [f'<svg xmlns="http://www.w3.org/2000/svg"{_attrs(width=W, height=float(H))} '
           f'viewBox="0 0 {_num(W)} {H}"{_attrs(class_="tree", data_sent=k, role="img", aria_label=view.text)}'
           ' style="display:block;font-family:system-ui,-apple-system,\'Segoe UI\',Roboto,sans-serif">']
    for (d, h, label), lvl in zip(arcs, levels):
        x1, x2 = xs[h], xs[d]
        y0, y = top + 2, top - lvl * STEP + 6
        sx, ex = x1 + (3 if x2 > x1 else -3), x2 + (-3 if x2 > x1 else 3)
        r = min(10.0, abs(ex - sx) / 2)
        sign = 1 if ex > sx else -1
        path = (f"M{_num(sx)},{y0} L{_num(sx)},{_num(y + r)} Q{_num(sx)},{y} {_num(sx + sign * r)},{y} "
                f"L{_num(ex - sign * r)},{y} Q{_num(ex)},{y} {_num(ex)},{_num(y + r)} L{_num(ex)},{y0}")
        lx, lw = (sx + ex) / 2, text_width(label, LABEL_PX) + 6
        out.append(
            '<g class="dep">'
            f'<path{_attrs(d=path, class_="arc", data_dep=d + 1, data_head=h + 1, data_label=label)}'
            f' fill="none" stroke="{ARC}" stroke-width="1.4"/>'
            f'<polygon class="arrow" fill="{ARC}" points="{_num(ex - 4)},{y0 - 6} {_num(ex + 4)},{y0 - 6} '
            f'{_num(ex)},{y0 + 1}"/>'
            f'<rect{_attrs(class_="arc-label-bg", x=lx - lw / 2, y=float(y - 7), width=lw, height=13.0)}'
            ' fill="#fff"/>'
            f'<text{_attrs(class_="arc-label", x=lx, y=float(y + 4), text_anchor="middle", data_dep=d + 1)}'
            f' font-size="{LABEL_PX}" fill="{LABEL}">{escape(label, quote=False)}</text></g>')
    if parsed:
        for i, w in enumerate(words):
            if w.head == 0:
                label = w.deprel or "_"
                out.append(f'<line{_attrs(class_="root", x1=xs[i], x2=xs[i], y1=4.0, y2=float(top + 2), data_dep=i + 1)}'
                           f' stroke="{ARC}" stroke-dasharray="3 2"/>'
                           f'<text{_attrs(class_="arc-label root-label", x=xs[i] + 4, y=12.0, data_dep=i + 1)}'
                           f' font-size="{LABEL_PX}" fill="{LABEL}">{escape(label, quote=False)}</text>')
    for i, w in enumerate(words):
        out.append(f'<g{_attrs(class_="token", data_id=i + 1)}>'
                   f'<text{_attrs(class_="word", x=xs[i], y=float(word_y), text_anchor="middle")}'
                   f' font-size="{WORD_PX}" fill="{FG}">{escape(w.form, quote=False)}</text>')
        if w.tag is not None:
            out.append(f'<text{_attrs(class_="pos", x=xs[i], y=float(tag_y), text_anchor="middle")}'
                       f' font-size="{TAG_PX}" fill="{ACCENT}">{escape(w.tag, quote=False)}</text>')
        out.append(f'<rect{_attrs(class_="hit", x=xs[i] - ws[i] / 2 - 4, y=float(top + 2), width=ws[i] + 8, height=float(H - top - 2), rx=4)}'
                   f' fill="transparent"><title>{escape(w.title or w.form, quote=False)}</title></rect></g>')
    for s in view.spans:
        if not 0 <= s.start < s.end <= len(words):
            continue
        y = span_top + s.row * (SPANH + 4)
        x1 = xs[s.start] - ws[s.start] / 2 - 3
        x2 = xs[s.end - 1] + ws[s.end - 1] / 2 + 3
        out.append(f'<g{_attrs(class_="span", data_model=s.model, data_type=s.type, data_start=s.start, data_end=s.end)}>'
                   f'<rect{_attrs(x=x1, y=float(y), width=x2 - x1, height=float(SPANH), rx=4, fill=s.colour)}/>'
                   f'<text{_attrs(class_="span-label", x=x1 + 5, y=float(y + 13))} font-size="{SPAN_PX}" '
                   f'font-weight="600" fill="#fff">{escape(s.type, quote=False)}</text>'
                   f'<title>{escape(s.title or s.type, quote=False)}</title></g>')
    out.append("</svg>")
    return "".join(out)


_BOX = ("border:1px solid #d7dde4;background:#fff;border-radius:8px;margin:10px 0;"
        "padding:6px 8px")
_TEXT = "color:#5b6673;font-size:.85rem;margin-bottom:2px;overflow-wrap:anywhere"


def sentence_html(view: View, k: int = 0) -> str:
    """One sentence as the page shows it: a box with its text above its SVG (which scrolls
    sideways when wider than the box)."""
    return (f'<div class="sent" style="{_BOX}"><div class="text" style="{_TEXT}">'
            f'{escape(view.text, quote=False)}</div>'
            f'<div class="scroll" style="overflow-x:auto">{sentence_svg(view, k)}</div></div>')


# ---- a Doc -------------------------------------------------------------------------------------
def _word_title(w) -> str:
    parts = [f"{w.form}  #{w.id}"]
    tok = w.token
    if tok is not None and tok.start is not None:
        parts[0] += f" [{tok.start}-{tok.end})"
    for name, value in (("lemma", w.lemma), ("upos", w.upos), ("xpos", w.xpos), ("feats", w.feats)):
        if value is not None:
            parts.append(f"{name}: {value}")
    if w.head is not None:
        parts.append(f"head {w.head}, {w.deprel or '_'}")
    for key, m in w.margins.items():
        parts.append(f"{key} {m:.3f}")
    if tok is not None and tok.is_multiword:
        parts.append(f"in the token {tok.form!r}")
    return "\n".join(parts)


def view_of_sentence(sent: Any, spans: dict[str, tuple[str, dict[tuple[str, str], str]]] | None = None) -> View:
    """What a ``structkit.doc.Sentence`` draws: its syntactic words, UPOS under them, the tree
    when every word has a head, a row of phrases per MISC key of ``spans`` (key -> (its
    scheme, colours by (key, type)): ``NER=B-PER`` as ``structkit tag --label-column
    misc.NER`` writes it), and its multiword tokens as spans (``data-model="token"``)."""

    words = sent.words
    parsed = bool(words) and all(w.head is not None for w in words)
    vw = [ViewWord(w.form, w.upos, w.head if parsed else None, w.deprel, _word_title(w))
          for w in words]
    out: list[ViewSpan] = []
    row = 0
    for key, (scheme, colours) in (spans or {}).items():
        labels = [w.misc_dict.get(key) or "O" for w in words]
        for typ, a, b in phrases(labels, scheme):
            text = " ".join(w.form for w in words[a:b])
            out.append(ViewSpan(row, a, b, typ, key, colours.get((key, typ), MULTIWORD_COLOUR),
                                f'{key}: {typ} "{text}"'))
        row += 1
    i = 0
    mwt = False
    for tok in sent.tokens:
        n = len(tok.words)
        if tok.is_multiword:
            mwt = True
            out.append(ViewSpan(row, i, i + n, tok.form, "token", MULTIWORD_COLOUR,
                                f"token {tok.form!r}: " + " ".join(w.form for w in tok.words)))
        i += n
    return View(sent.text, vw, out, row + mwt)


SPAN_KEYS = ("NER",)   # MISC keys drawn as phrases when a document has them


def _span_keys(doc: Any, keys: Iterable[str]) -> dict[str, tuple[str, dict[tuple[str, str], str]]]:
    """For each MISC key of ``keys`` that the document's words have: the scheme of its labels
    (IOB2, IOBES, ...) and a colour per (key, type)."""

    out = {}
    for key in keys:
        per_sent = [[w.misc_dict.get(key) or "O" for w in s.words] for s in doc.sents]
        if not any(lab != "O" for labs in per_sent for lab in labs):
            continue
        types = {split_tag(lab)[1] for labs in per_sent for lab in labs if lab != "O"}
        out[key] = (detect_scheme(per_sent), span_colours([(key, types)]))
    return out


def _legend_html(spans: dict[str, tuple[str, dict[tuple[str, str], str]]]) -> str:
    items = []
    for key, (_, colours) in spans.items():
        items.append(f'<span class="model" style="color:#5b6673">{escape(key, quote=False)}:</span>')
        for (_, typ), colour in colours.items():
            items.append(f'<span class="item"{_attrs(data_model=key, data_type=typ)} style="display:inline-flex;'
                         f'align-items:center;gap:4px"><span class="swatch" style="width:14px;height:14px;'
                         f'border-radius:3px;display:inline-block;background:{escape(colour)}"></span>'
                         f'{escape(typ, quote=False)}</span>')
    return (f'<div class="legend" style="display:flex;flex-wrap:wrap;gap:4px 12px;margin:10px 0;'
            f'font-size:.85rem">{"".join(items)}</div>')


def render_html(doc: Any, span_keys: Iterable[str] = SPAN_KEYS, limit: int | None = None) -> str:
    """A ``structkit.Doc`` as HTML for a notebook or a page: a legend of its phrases (MISC
    ``span_keys``, when it has some), then one box per sentence, as ``structkit serve``'s page
    draws them; every style inline (no script, no style sheet). ``limit``: draw at most so many
    sentences and say how many are left out."""
    spans = _span_keys(doc, span_keys)
    sents = doc.sents if limit is None else doc.sents[:limit]
    body = "".join(sentence_html(view_of_sentence(s, spans), k) for k, s in enumerate(sents))
    if len(sents) < len(doc.sents):
        body += (f'<div class="more" style="{_TEXT}">{len(doc.sents) - len(sents)} more sentences '
                 f'(structkit.render(doc) draws them all)</div>')
    legend = _legend_html(spans) if spans else ""
    return (f'<div class="structkit-doc" style="font:15px/1.45 system-ui,-apple-system,\'Segoe UI\','
            f'Roboto,sans-serif;color:#1d232b;max-width:100%">{legend}{body}</div>')
