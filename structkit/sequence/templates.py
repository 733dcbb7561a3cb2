"""Feature templates for sequence labelling, written as strings.

A template is one or more atoms joined by ``|``; an atom is ``ATTR[OFFSET]``, e.g. ``w[-1]|w[0]``
(the word bigram before the current word) or ``p[-2]|p[-1]|p[0]`` (a POS trigram). ``bias``
fires on every token. Attributes of a token:

==========  ===============================================================
``w``       the word as written
``lw``      the word lower-cased
``p``       the POS tag (the input's POS column)
``pre1-4``  prefix of 1 to 4 characters (absent for shorter words)
``suf1-4``  suffix of 1 to 4 characters (absent for shorter words)
``cap``     first character upper-case (absent otherwise; likewise the flags below)
``allcap``  every letter upper-case, at least one letter
``digit``   contains a digit
``hyph``    contains a hyphen
``shape``   collapsed word shape: ``Xx``, ``d``, ``X-d``, ...
``lsuf1-6`` suffix of 1 to 6 characters, lower-cased (absent for shorter words)
``case``    ``lower``, ``title``, ``upper`` (two letters or more), ``mixed`` or ``none``
``amb``     the word's ambiguity class: the labels its lower-cased form has in the
            training data, e.g. ``ADP+SCONJ`` (``?`` for a word not there); learnt
            by the feature space, not computed from the word alone (see below)
``vc1-4``   the word's cluster of pretrained vectors (``train --vectors FILE``) at the
            table's level 1 (16 clusters) to 4 (4,096): its own, its lower-cased
            form's, or the nearest known word's by character trigrams
            (``structkit.vectors.WordClusters.lookup``); absent when none
==========  ===============================================================

``amb`` is a tag dictionary. On the training data itself it is jackknifed: the sentences are
split into ``AMB_FOLDS`` folds by index, and a token's class is read from the dictionary of
the other folds, so rare training words are unknown as often as new words are at tagging
time, and the weights learn how far to trust the class; the dictionary of the whole training
data is stored in the model and used on new text.

Any other attribute names an input column: ``lemma[0]`` or ``cluster[-1]|cluster[0]`` read the
column of that name (CoNLL-U's names, or those given with ``--columns``), and ``feats.Number[0]``
or ``misc.SpaceAfter[0]`` one key of a ``Key=Value|...`` column. A ``_`` value fires nothing.

The label features (previous label; previous two labels for second order) are not templates:
they are the transition weights that the decoders score.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from structkit.errors import UserError
from structkit.io.conll import ATTRS, LEXICON_ATTRS, VECTOR_ATTRS, WORD_ATTRS  # noqa: F401 (read from here too)

# The built-in attributes' names (WORD_ATTRS, LEXICON_ATTRS: read from a dictionary learnt on
# the training data, and ATTRS, all of them) are declared with the column reader, which keeps
# columns from taking them. The folds of the dictionary's jackknife on the training data, and
# the class of a word the dictionary lacks:
AMB_FOLDS = 5
AMB_UNKNOWN = "?"

# An attribute is a built-in one (ATTRS) or the name of an input column (``lemma``, ``cluster``),
# optionally with a key of a Key=Value column (``feats.Number``, ``misc.SpaceAfter``).
_ATOM = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_:\[\]-]+?)?)\[(-?\d+)\]$")


@dataclass(frozen=True)
class Template:
    text: str
    atoms: tuple[tuple[str, int], ...]

    @property
    def uses_pos(self) -> bool:
        return any(a == "p" for a, _ in self.atoms)


def is_column_attr(attr: str) -> bool:
    """An attribute read from a named input column rather than computed from the word."""
    return attr not in ATTRS


def parse_template(text: str) -> Template:
    """Parse one template string; a bad one is a UserError naming it."""
    text = text.strip()
    if text == "bias":
        return Template("bias", (("bias", 0),))
    atoms = []
    for part in text.split("|"):
        m = _ATOM.match(part.strip())
        if not m or m.group(1) == "bias":
            raise UserError(f"bad feature template {text!r}: atoms look like w[0], p[-1], suf3[0] "
                            f"with attributes {', '.join(a for a in ATTRS if a != 'bias')}, or a "
                            f"column's name: lemma[0], cluster[-1], feats.Number[0]")
        off = int(m.group(2))
        if abs(off) > 5:
            raise UserError(f"bad feature template {text!r}: offsets go from -5 to 5")
        atoms.append((m.group(1), off))
    return Template("|".join(f"{a}[{o}]" for a, o in atoms), tuple(atoms))


def _window(attr: str, k: int) -> list[str]:
    return [f"{attr}[{o}]" for o in range(-k, k + 1)]


_AFFIX = [f"pre{i}[0]" for i in range(1, 5)] + [f"suf{i}[0]" for i in range(1, 5)]
_SHAPE = ["cap[0]", "allcap[0]", "digit[0]", "hyph[0]"]
_WORD_BIGRAMS = ["w[-1]|w[0]", "w[0]|w[1]"]
_POS_NGRAMS = (_window("p", 2)
               + ["p[-2]|p[-1]", "p[-1]|p[0]", "p[0]|p[1]", "p[1]|p[2]"]
               + ["p[-2]|p[-1]|p[0]", "p[-1]|p[0]|p[1]", "p[0]|p[1]|p[2]"])

# Named template sets (Tsuruoka et al. 2009 style), referred to by name in configs.
TEMPLATE_SETS: dict[str, list[str]] = {
    # POS tagging: words in a +-2 window, word bigrams, affixes, shape flags.
    "pos": ["bias"] + _window("w", 2) + _WORD_BIGRAMS + _AFFIX + _SHAPE,
    # Chunking: the same lexical features plus POS uni/bi/trigrams in a +-2 window.
    "chunk": ["bias"] + _window("w", 2) + _WORD_BIGRAMS + _POS_NGRAMS + _AFFIX + _SHAPE,
    # NER: lexical features, lower-cased window, shapes around the word, POS unigrams/bigrams.
    "ner": (["bias"] + _window("w", 2) + _window("lw", 1) + _WORD_BIGRAMS + _AFFIX + _SHAPE
            + ["shape[-1]", "shape[0]", "shape[1]", "shape[-1]|shape[0]", "shape[0]|shape[1]",
               "cap[-1]", "cap[1]"]
            + _window("p", 2) + ["p[-1]|p[0]", "p[0]|p[1]"]),
}
# UD tagging (UPOS from CoNLL-U): what raw text gives as well, so the model tags --text input
# as it tags treebanks: words and lower-cased words in a window, affixes (lower-cased ones up
# to 6 characters, for ALL-CAPS headings), shapes and case; and the tag dictionary's ambiguity
# classes of the words around, alone, paired and with the neighbouring words.
TEMPLATE_SETS["ud"] = (["bias"] + _window("w", 2) + _window("lw", 1) + _WORD_BIGRAMS + _AFFIX + _SHAPE
                       + ["shape[0]", "suf3[-1]", "suf3[1]"]
                       + [f"lsuf{i}[0]" for i in range(1, 7)]
                       + ["case[0]", "case[-1]|case[0]", "case[0]|case[1]"]
                       + _window("amb", 2) + ["amb[-1]|amb[0]", "amb[0]|amb[1]", "amb[-1]|amb[1]",
                                              "amb[0]|w[-1]", "amb[0]|w[1]"])
# With --vectors: the word clusters of pretrained vectors (Turian et al. 2010, Koo et al. 2008),
# appended to the task's set: the word's clusters at every level, and its neighbours' at the
# middle two. A word the training data never saw then still shares features with the words of
# its cluster.
TEMPLATE_SETS["vectors"] = (["vc1[0]", "vc2[0]", "vc3[0]", "vc4[0]"]
                            + ["vc2[-1]", "vc2[1]", "vc3[-1]", "vc3[1]"])
# NER on text without a POS column (e.g. JNLPBA): the NER set less its POS templates.
TEMPLATE_SETS["ner-nopos"] = [t for t in TEMPLATE_SETS["ner"] if "p[" not in t]
# Chunking without a POS column: the chunk set less its POS n-grams (the default on such input).
TEMPLATE_SETS["chunk-nopos"] = [t for t in TEMPLATE_SETS["chunk"] if not t.startswith("p[")]


def resolve_templates(spec: str | list[str]) -> list[Template]:
    """A template set's name, or a list of template strings and set names."""
    items = [spec] if isinstance(spec, str) else list(spec)
    out: list[Template] = []
    seen: set[str] = set()
    for item in items:
        texts = TEMPLATE_SETS[item] if item in TEMPLATE_SETS else [item]
        for t in texts:
            tpl = parse_template(t)
            if tpl.text not in seen:
                seen.add(tpl.text)
                out.append(tpl)
    if not out:
        raise UserError("no feature templates given")
    return out


def word_shape(word: str) -> str:
    """Collapsed shape: upper X, lower x, digit d, other characters kept; runs collapsed."""
    out = []
    for ch in word:
        c = "X" if ch.isupper() else "x" if ch.islower() else "d" if ch.isdigit() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


def word_case(word: str) -> str:
    """``lower`` (every letter lower-case), ``title`` (the first letter upper, the others lower;
    a single upper-case letter too), ``upper`` (two or more letters, all upper), ``mixed``, or
    ``none`` (no letters)."""
    letters = [c for c in word if c.isalpha()]
    if not letters:
        return "none"
    if all(c.islower() for c in letters):
        return "lower"
    if letters[0].isupper() and all(c.islower() for c in letters[1:]):
        return "title"
    return "upper" if all(c.isupper() for c in letters) else "mixed"


def word_attribute(attr: str, word: str) -> str | None:
    """The value of a word attribute, or None when it does not fire."""
    if attr == "w":
        return word
    if attr == "lw":
        return word.lower()
    if attr.startswith("pre"):
        n = int(attr[3])
        return word[:n] if len(word) >= n else None
    if attr.startswith("suf"):
        n = int(attr[3])
        return word[-n:] if len(word) >= n else None
    if attr.startswith("lsuf"):
        n = int(attr[4])
        return word[-n:].lower() if len(word) >= n else None
    if attr == "case":
        return word_case(word)
    if attr == "cap":
        return "1" if word[:1].isupper() else None
    if attr == "allcap":
        return "1" if word.isupper() and any(c.isalpha() for c in word) else None
    if attr == "digit":
        return "1" if any(c.isdigit() for c in word) else None
    if attr == "hyph":
        return "1" if "-" in word else None
    if attr == "shape":
        return word_shape(word)
    raise ValueError(attr)
