"""Whether one model's output fits what the next one reads: the tag sets of a pipeline's parts.

A parser learns a weight per POS tag it saw in training (the UPOS or XPOS column, its config's
``pos``) and, with the beam parser's ``morph`` templates, per FEATS string and lemma. Fed a
tagset it never saw (a PTB tagger's NN/VBD into a parser trained on UD's NOUN/VERB) every tag is
unknown to it and it parses blind: on the sample data that is UAS 17.6 and LAS 6.4, exit 0
(issue 29). So a chain is checked before it runs:

- **POS:** at least ``MIN_KNOWN`` of the tags the upstream model can give must be tags the
  parser was trained on. Measured over tag types, not tokens: a tagger's label set is all a
  model file says. Two UD models agree on (nearly) all 17 UPOS; the same tagset in another
  treebank's tagger differs in a few rare tags at most; a PTB tagger into a UD parser shares
  none or one (``SYM``), so the threshold sits far from both (0.5).
- **FEATS and lemmas:** a parser whose templates read FEATS (or LEMMA), trained on data that had
  them, is refused after a model that predicts none, when the input itself has none either
  (raw text): it would read '_' everywhere, a value it never met in training.

Light: no numpy; the facts are plain dicts (stored in a pipeline's header), the checks say what
is wrong in one line (``UserError``).
"""
from __future__ import annotations

from typing import Any

from structkit.errors import UserError

MIN_KNOWN = 0.5
_SPECIAL = {"<none>", "<unk>", "_"}


def morph_facts(model: Any) -> dict:
    """What a morph model (``structkit.morph.task.MorphModel``) gives."""
    parts = [t.split("\t") for t in model.tables.tags]
    return {"upos": sorted({p[0] for p in parts} - {"_"}), "xpos": sorted({p[1] for p in parts} - {"_"}),
            "feats": any(p[2] != "_" for p in parts), "lemmas": True}


def tagger_facts(model: Any) -> dict:
    """What a POS tagger (a sequence model: its labels become UPOS and XPOS) gives."""
    labels = sorted(set(getattr(model, "labels", []) or []) - _SPECIAL)
    return {"upos": labels, "xpos": labels, "feats": False, "lemmas": False}


def parser_facts(parser: Any) -> dict:
    """What a parser reads: its POS column and the tags it was trained on, and whether its
    features read FEATS and lemmas (the beam parser's ``morph`` group, trained on data that had
    them)."""
    config = parser.config
    vocabs = getattr(parser, "vocabs", None)
    if vocabs is None:   # the arc-standard parser: words and one POS column
        return {"column": config.pos, "pos": sorted(set(parser.tags.items) - _SPECIAL),
                "feats": False, "lemmas": False}
    morph = "morph" in (config.templates or [])
    return {"column": config.pos, "pos": sorted(set(vocabs["tags"].items) - _SPECIAL),
            "feats": morph and bool(set(vocabs["feats"].items) - _SPECIAL),
            "lemmas": morph and bool(set(vocabs["lemmas"].items) - _SPECIAL)}


def check_chain(upstream: dict, parser: dict, upstream_name: str, parser_name: str,
                input_has_morph: bool = False) -> None:
    """A UserError (one line) when the parser cannot read what ``upstream`` gives (both as the
    ``*_facts`` functions describe them). ``input_has_morph``: FEATS and LEMMA come from the
    input (CoNLL-U), not from ``upstream``."""
    column = parser["column"]
    given = set(upstream[column])
    known = set(parser["pos"])
    if given and known:
        share = len(given & known) / len(given)
        if share < MIN_KNOWN:
            raise UserError(
                f"tag sets do not match: {upstream_name} gives {len(given)} {column.upper()} tags, "
                f"{len(given & known)} of them ({100 * share:.0f}%) among the {len(known)} that "
                f"{parser_name} was trained on (it knows {_few(known)}; {upstream_name} gives "
                f"{_few(given)}): train both on the same tagset")
    if input_has_morph:
        return
    missing = [x for x in ("feats", "lemmas") if parser[x] and not upstream[x]]
    if missing:
        what = " and ".join({"feats": "FEATS", "lemmas": "LEMMA"}[x] for x in missing)
        raise UserError(f"{parser_name} reads {what}, which {upstream_name} does not predict and "
                        f"raw text does not have: use a pipeline (`structkit train --task pipeline`), or a "
                        f"parser trained without the morph templates (--templates "
                        f"base,labels,valency,distance,labelset)")


def _few(tags: set, n: int = 5) -> str:
    s = sorted(tags)
    return ", ".join(s[:n]) + (", ..." if len(s) > n else "")


def check_models(upstream: Any, parser: Any, upstream_name: str | None, parser_name: str | None,
                 input_has_morph: bool = False) -> None:
    """Refuse (one line) a morph model or POS tagger (or a POS tagger standing in a morph
    model's place: its ``tagger``) chained into a parser that cannot read what it gives."""
    upstream = getattr(upstream, "tagger", upstream)
    facts = morph_facts(upstream) if hasattr(upstream, "tables") else tagger_facts(upstream)
    check_chain(facts, parser_facts(parser), upstream_name or "the tagger", parser_name or "the parser",
                input_has_morph)
