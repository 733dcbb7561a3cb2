"""A document as Python objects, the public face of ``structkit.io.document``: sentences of
surface tokens and syntactic words, read from CoNLL-U and written back exactly.

``Doc.from_conllu(text)`` reads CoNLL-U (as a treebank or ``structkit annotate`` writes it) and
``doc.to_conllu()`` writes it back: every line of a UD file comes back exactly, comments,
multiword-token range lines and empty nodes included, in the order they were read. The
objects are plain and editable (``word.head = 3`` changes what ``to_conllu`` writes)::
    doc = structkit.read_conllu("en_ewt-ud-dev.conllu")
    for sent in doc.sents:
        for tok in sent.tokens:             # surface tokens, with character offsets into doc.text
            print(tok.form, tok.start, tok.end, [w.form for w in tok.words])
        for w in sent.words:                # syntactic words, the ten CoNLL-U columns
            print(w.id, w.form, w.lemma, w.upos, w.xpos, w.feats, w.head, w.deprel, w.margins)

``_repr_html_`` (what Jupyter shows) and ``structkit.render(doc)`` draw the analysis with the
renderer of the ``structkit serve`` page (``structkit.rendering``).
"""
from __future__ import annotations

from structkit.errors import UserError
from structkit.io.document import REPR_SENTENCES, Doc, EmptyNode, Sentence, Token, Word
from structkit.io.document import read_conllu as _read
from structkit.rendering import render_html

__all__ = ["Doc", "Sentence", "Token", "Word", "EmptyNode", "read_conllu", "render", "REPR_SENTENCES"]


def read_conllu(source: str, stream=None, digest=None, check_text: bool = False) -> Doc:
    """A CoNLL-U document: ``source`` is a file path ('-' for standard input) or the CoNLL-U
    text itself (a str with a line break or a tab in it); with ``stream``, the lines are read
    from it and ``source`` names it in messages. ``structkit.read_conllu`` is this function
    behind argument checks (``structkit.api_io``)."""
    if stream is None and is_conllu_text(source):
        return Doc(list(_read("<text>", source.split("\n"), digest, check_text)))
    return Doc(list(_read(source, stream, digest, check_text)))


def is_conllu_text(source: object) -> bool:
    """Whether a str given where a path or CoNLL-U may go is CoNLL-U (a path holds no line
    break or tab)."""
    return isinstance(source, str) and ("\n" in source or "\t" in source)


def render(doc: "Doc | str", page: bool = False, spans: "tuple[str, ...] | list[str]" = ("NER",)) -> str:
    """``structkit.render(doc)``: the HTML of a Doc (or of CoNLL-U text), self-contained (no
    script, no style sheet, inline SVG), to put in a static page; the picture
    ``doc._repr_html_()`` shows and ``structkit serve``'s page draws (``structkit.rendering``).
    ``page=True``: a whole HTML document (``structkit.render(doc, page=True)`` to a .html file).
    ``spans``: the MISC keys whose B-/I- labels are drawn as phrases with a legend (``NER=B-PER``,
    as ``structkit tag --task ner --label-column misc.NER`` writes them)."""
    from html import escape


    if isinstance(doc, str):
        doc = Doc.from_conllu(doc)
    if not isinstance(doc, Doc):
        raise UserError(f"render: expected a structkit.Doc (or CoNLL-U text), got {type(doc).__name__}")
    if not isinstance(page, bool):
        raise UserError(f"render: page must be True or False, got {type(page).__name__}")
    if isinstance(spans, str) or not isinstance(spans, (tuple, list)) or not all(
            isinstance(k, str) and k for k in spans):
        raise UserError("render: spans must be a list of MISC keys (e.g. [\"NER\"])")
    body = render_html(doc, spans)
    if not page:
        return body
    title = escape(doc.sents[0].text[:80] if doc.sents else "structkit", quote=False)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{title}</title></head>\n<body style=\"margin:12px;background:#fbfcfd\">"
            f"{body}</body></html>\n")
