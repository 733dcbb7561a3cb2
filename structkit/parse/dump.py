"""What ``structkit dump`` shows of a parser (arc-standard with lookahead or greedy, and the
labelled beam parser): per action (shift, reduceL, reduceR; the beam parser's labelled
left-LABEL and right-LABEL arcs), the features with the largest weights for it.

Parser weights are hashed, so a row has no name of its own: the dump hashes every feature it
can enumerate from the model's vocabularies and the parser's template table
(:data:`structkit.parse.arcstandard.TEMPLATES`, :data:`structkit.parse.beam.TEMPLATES`): the
templates over one word, lemma or FEATS value, or one or two tags or labels, with distances
and valencies; combinations without a missing item; up to ``MAX_CANDIDATES`` combinations per
template; see ``_named``. It shows a row under the names that hash to it. Every feature
hashing to a row shares its weight, including the features of the templates not enumerated
(word pairs, tag triples, hashed word/POS pairs, label sets, ...), so a name can stand for a
weight its feature shares with another.

Entry point: :func:`parser_lines`.
"""
from __future__ import annotations

import math

import numpy as np

from structkit.parse.labelled import LabelledParser

MAX_CANDIDATES = 300_000  # feature combinations enumerated per parser template


def _printable(s: str) -> str:
    """``s`` with terminal control characters written as escapes (as the CLI shows model
    strings), so showing a model cannot drive the user's terminal."""
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in s)


def _shown(atom: str) -> str | None:
    """How the dump names a beam template's atom (valencies vl(s0), distances d(s0,s1)); None
    for an atom that is no value of one vocabulary or count (a hash of a word/POS pair or of
    two words, a label set): its templates are not enumerated."""
    if atom.endswith(("wp", "sl", "sr")) or "*" in atom:
        return None
    if atom in ("d01", "d0n"):
        return {"d01": "d(s0,s1)", "d0n": "d(n0,s0)"}[atom]
    if atom.endswith(("vl", "vr")):
        return f"{atom[2:]}({atom[:2]})"
    return atom


def beam_templates(groups) -> list[tuple[int, tuple[str, ...]]]:
    """The beam parser's templates of the switched-on ``groups`` whose atoms are plain values,
    with the dump's atom names: [(template id, atoms)]. Atoms: ...w a word, ...p a tag, ...l a
    label, ...m a lemma, ...f a FEATS value, v.. a valency (0..7 shown), d.. a distance bucket
    (0..6)."""
    from structkit.parse.beam import TEMPLATES

    out = []
    for t, g, atoms in TEMPLATES:
        shown = tuple(_shown(a) for a in atoms)
        if g in groups and None not in shown:
            out.append((t, shown))
    return out


def _atom_values(atom: str, values: dict[str, list[str]]) -> list[str]:
    if atom.startswith(("d(", "dist")):
        return [str(i) for i in range(7)]
    if atom.startswith("v"):
        return [str(i) for i in range(8)]
    return values[atom[-1]]


def _named(atoms: tuple[str, ...]) -> bool:
    """Whether the dump enumerates a template with these atoms: one word (lemma, FEATS value),
    or at most two tags or labels, each with or without a distance or valency. Most
    combinations of more never occur in training, and one that does not can hash to the row of
    a feature that did: its name would be shown for a weight it never had."""
    plain = [a for a in atoms if not _counted(a)]
    big = [a for a in plain if a[-1] in "wmf"]
    return len(plain) <= 2 and (not big or len(atoms) == 1)


def _counted(atom: str) -> bool:
    """A distance or valency atom (a number, not a vocabulary item)."""
    return atom.startswith(("d(", "dist", "v"))


def _enumerate(templates, values: dict[str, list[str]], hash_slots, mask: int):
    """Every enumerable feature of the templates: (its names, their slots)."""
    names: list[str] = []
    slots: list[np.ndarray] = []
    for t, atoms in templates:
        if not _named(atoms):
            continue
        vals = [_atom_values(a, values) for a in atoms]
        n = math.prod(len(v) for v in vals)
        if n > MAX_CANDIDATES or n == 0:
            continue
        grids = np.meshgrid(*[np.arange(len(v)) for v in vals], indexing="ij") if vals else []
        ids = np.zeros((n, 4), dtype=np.int64)
        for j, g in enumerate(grids):
            ids[:, j] = g.ravel()
        if len(atoms) > 1:  # combinations with a missing item (<none>, id 0): mostly impossible
            plain = [j for j, a in enumerate(atoms) if not _counted(a)]
            ids = ids[np.all(ids[:, plain] != 0, axis=1)]
            n = len(ids)
        out = np.zeros(n, dtype=np.int64)
        hash_slots(np.int64(t), ids, np.int64(mask), out)
        slots.append(out)
        if not atoms:
            names.append("bias")
            continue
        for row in ids:
            names.append(" ".join(f"{a}={vals[j][int(row[j])]}" for j, a in enumerate(atoms)))
    return names, (np.concatenate(slots) if slots else np.zeros(0, dtype=np.int64))


class _SlotRows:
    """``W[slots[i] + a]`` as ``view[i, a]`` (i an index or an index array), built per lookup:
    the beam parser hashes the action into the slot, so row i's weight for action a is there."""

    def __init__(self, W: np.ndarray, slots: np.ndarray):
        self.W, self.slots = W, slots

    def __getitem__(self, key):
        rows, a = key
        return self.W[self.slots[rows] + a]


def parser_features(parser) -> tuple[list[str], np.ndarray, np.ndarray, list[str]]:
    """The parser's enumerable features: (names, their weight rows' slots, the weight matrix
    [slot, action] over those slots (one row per feature), the action names)."""

    if isinstance(parser, LabelledParser):
        from structkit.parse.beam import hash_slots

        v = parser.vocabs
        values = {"w": v["words"].items, "p": v["tags"].items, "m": v["lemmas"].items,
                  "f": v["feats"].items, "l": ["<none>"] + list(parser.labels)}
        names, slots = _enumerate(beam_templates(parser.config.templates), values, hash_slots, parser.mask)
        actions = ["shift"] + [f"left-{x}" for x in parser.labels] + [f"right-{x}" for x in parser.labels]
        # Indexed [rows, action] on demand: a dense (features x actions) copy took 1 TiB for a
        # model of 200,000 labels.
        return names, slots, _SlotRows(parser.W, slots), actions
    from structkit.parse.arcstandard import ACTION_NAMES, TEMPLATES, hash_slots

    values = {"w": parser.words.items, "t": parser.tags.items}
    names, slots = _enumerate(enumerate(TEMPLATES), values, hash_slots, parser.mask)
    return names, slots, parser.W[slots], list(ACTION_NAMES)


def parser_strongest(parser, top: int, pattern: str | None = None) -> list[tuple[str, list[tuple[str, float]]]]:
    """Per action, the ``top`` weight rows with the largest weights for it (positive only) among
    the enumerated features (names containing ``pattern``): [(action, [(names, weight)])]; a row
    several features hash to shows their names joined by ' | '."""
    names, slots, Wf, actions = parser_features(parser)
    keep = np.array([pattern in nm for nm in names], dtype=bool) if pattern else np.ones(len(names), bool)
    # one entry per slot: the names hashing there, in enumeration order
    by_slot: dict[int, list[str]] = {}
    first: dict[int, int] = {}
    for i in np.flatnonzero(keep):
        s = int(slots[i])
        by_slot.setdefault(s, []).append(names[i])
        first.setdefault(s, int(i))
    rows = np.array(sorted(first.values()), dtype=np.int64)
    out = []
    for a, act in enumerate(actions):
        if rows.size == 0:
            out.append((act, []))
            continue
        w = Wf[rows, a]
        order = np.argsort(-w, kind="stable")[:top]
        got = []
        for k in order:
            if w[k] <= 0:
                break
            nm = by_slot[int(slots[rows[k]])]
            shown = nm[0] if len(nm) == 1 else " | ".join(nm[:3])
            if len(nm) > 3:
                shown += f" | +{len(nm) - 3} more"
            got.append((shown, float(w[k])))
        out.append((act, got))
    return out


def parser_lines(parser, top: int, pattern: str | None) -> list[str]:
    c = parser.config
    nonzero = int(np.count_nonzero(parser.W))
    if isinstance(parser, LabelledParser):
        v = parser.vocabs
        head = (f"task parse, algo {c.algo}, beam {c.beam}, lookahead depth {c.depth or 0}, "
                f"{len(parser.labels)} labels, {len(v['words'].items)} words, {len(v['tags'].items)} tags "
                f"({c.pos}), 2^{c.hash_bits} hashed rows ({nonzero} non-zero weights), templates: "
                f"{' '.join(c.templates)}")
        lines = [head, "labels: " + " ".join(_printable(x) for x in parser.labels)]
    else:
        lines = [f"task parse, algo {c.algo}, lookahead depth {c.depth}, {len(parser.words.items)} words, "
                 f"{len(parser.tags.items)} tags ({c.pos}), 2^{c.hash_bits} hashed rows "
                 f"({nonzero} non-zero weights)"]
    lines.append(f"\nstrongest features per action{' matching ' + repr(pattern) if pattern else ''} "
                 "(hashed: every feature hashing to a row shares its weight; names joined by | hash "
                 "to the same row):")
    any_shown = False
    for act, feats in parser_strongest(parser, top, pattern):
        if not feats:
            continue
        any_shown = True
        lines.append(f"  {_printable(act)}:")
        lines.extend(f"    {_printable(nm)} {w:+.3f}" for nm, w in feats)
    if not any_shown:
        lines.append("  (none)")
    return lines
