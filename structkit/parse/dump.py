"""What ``structkit dump`` shows of a parser (arc-standard with lookahead or greedy, and the
labelled beam parser): per action (shift, reduceL, reduceR; the beam parser's labelled left-LABEL
and right-LABEL arcs), the features with the largest weights for it. Parser weights are hashed,
so a row has no name of its own: the dump hashes every feature it can enumerate from the model's
vocabularies (the templates over one word, lemma or FEATS value, or one or two tags or labels,
with distances and valencies; combinations without a missing item; up to ``MAX_CANDIDATES``
combinations per template; see ``_named``) and shows a row under the names that hash to it.
Every feature hashing to a row shares its weight, including the features of the templates not
enumerated (word pairs, tag triples, ...), so a name can stand for a weight its feature shares
with another."""
from __future__ import annotations

import math

import numpy as np

from structkit.io.files import printable as _printable

MAX_CANDIDATES = 300_000  # feature combinations enumerated per parser template


# The templates of structkit.parse.arcstandard.features: id -> its atoms (w: a word, t: a tag,
# dist: the s0-s1 distance bucket 0..6), in the order the hash takes them.
ARC_TEMPLATES = {
    0: ("s0w",), 1: ("s0t",), 2: ("s0w", "s0t"), 3: ("s1w",), 4: ("s1t",), 5: ("s1w", "s1t"),
    6: ("q0w",), 7: ("q0t",), 8: ("q0w", "q0t"), 9: ("s0w", "s1w"), 10: ("s0t", "s1t"),
    11: ("s0t", "q0t"), 12: ("s0w", "s0t", "s1t"), 13: ("s0t", "s1w", "s1t"), 14: ("s0w", "s1w", "s1t"),
    15: ("s0w", "s0t", "s1w"), 16: ("s0w", "s0t", "s1w", "s1t"), 17: ("s0t", "q0t", "q1t"),
    18: ("s1t", "s0t", "q0t"), 19: ("s0w", "q0t", "q1t"), 20: ("s1t", "s0w", "q0t"),
    21: ("s1t", "s1lct", "s0t"), 22: ("s1t", "s1rct", "s0t"), 23: ("s1t", "s0t", "s0rct"),
    24: ("s1t", "s1lct", "s0w"), 25: ("s1t", "s1rct", "s0w"), 26: ("s1t", "s0w", "s0lct"),
    27: ("s2t", "s1t", "s0t"), 28: ("dist", "s0t", "s1t"), 29: ("dist", "s0w", "s1w"), 30: ("dist",),
    31: ("q0t", "q1t", "q2t"), 32: (),
}

# The templates of structkit.parse.beam.extract whose atoms are plain values (those hashing a
# hash of a word and its tag are not enumerated): id -> (template group, atoms). Atoms: ...w a
# word, ...p a tag, ...l a label, ...m a lemma, ...f a FEATS value, v.. a valency (0..7 shown),
# d.. a distance bucket (0..6).
BEAM_TEMPLATES = {
    0: ("base", ()), 3: ("base", ("s0w",)), 4: ("base", ("s0p",)), 6: ("base", ("s1w",)),
    7: ("base", ("s1p",)), 9: ("base", ("n0w",)), 10: ("base", ("n0p",)), 11: ("base", ("n1w", "n1p")),
    12: ("base", ("n1w",)), 13: ("base", ("n1p",)), 14: ("base", ("n2w", "n2p")), 15: ("base", ("n2p",)),
    16: ("base", ("s2w", "s2p")), 17: ("base", ("s2p",)), 24: ("base", ("s0p", "n0p")),
    25: ("base", ("n0p", "n1p")), 32: ("base", ("s0p", "s1p")), 33: ("base", ("n0p", "n1p", "n2p")),
    34: ("base", ("s0p", "n0p", "n1p")), 35: ("base", ("s1p", "s0p", "n0p")),
    36: ("base", ("s2p", "s1p", "s0p")), 39: ("base", ("s0p", "s0l1p", "n0p")),
    40: ("base", ("s0p", "s0r1p", "n0p")), 41: ("base", ("s1p", "s0p", "s0l1p")),
    42: ("base", ("s1p", "s0p", "s0r1p")), 43: ("base", ("s1p", "s1l1p", "s0p")),
    44: ("base", ("s1p", "s1r1p", "s0p")), 47: ("base", ("s0l1w",)), 48: ("base", ("s0l1p",)),
    49: ("base", ("s0r1w",)), 50: ("base", ("s0r1p",)), 51: ("base", ("s1l1w",)), 52: ("base", ("s1l1p",)),
    53: ("base", ("s1r1w",)), 54: ("base", ("s1r1p",)), 55: ("base", ("s0l2w",)), 56: ("base", ("s0l2p",)),
    57: ("base", ("s0r2w",)), 58: ("base", ("s0r2p",)), 59: ("base", ("s0p", "s0l1p", "s0l2p")),
    60: ("base", ("s0p", "s0r1p", "s0r2p")), 61: ("base", ("s1p", "s1l1p", "s1l2p")),
    62: ("base", ("s1p", "s1r1p", "s1r2p")),
    70: ("labels", ("s0l1l",)), 71: ("labels", ("s0l2l",)), 72: ("labels", ("s0r1l",)),
    73: ("labels", ("s0r2l",)), 74: ("labels", ("s1l1l",)), 75: ("labels", ("s1r1l",)),
    76: ("labels", ("s0p", "s0l1l", "s0l2l")), 77: ("labels", ("s0p", "s0r1l", "s0r2l")),
    78: ("labels", ("s1p", "s0p", "s1r1l")), 79: ("labels", ("s1p", "s0p", "s0l1l")),
    80: ("valency", ("s0w", "vr(s0)")), 81: ("valency", ("s0p", "vr(s0)")), 82: ("valency", ("s0w", "vl(s0)")),
    83: ("valency", ("s0p", "vl(s0)")), 84: ("valency", ("s1w", "vr(s1)")), 85: ("valency", ("s1p", "vr(s1)")),
    86: ("valency", ("s1p", "vl(s1)")), 87: ("valency", ("s1w", "vl(s1)")),
    90: ("distance", ("s0w", "d(s0,s1)")), 91: ("distance", ("s0p", "d(s0,s1)")),
    92: ("distance", ("s1w", "d(s0,s1)")), 93: ("distance", ("s1p", "d(s0,s1)")),
    95: ("distance", ("s0p", "s1p", "d(s0,s1)")), 96: ("distance", ("s0w", "d(n0,s0)")),
    97: ("distance", ("s0p", "n0p", "d(n0,s0)")),
    110: ("morph", ("s0m",)), 111: ("morph", ("n0m",)), 112: ("morph", ("s1m",)),
    115: ("morph", ("s0p", "s0f")), 116: ("morph", ("n0p", "n0f")), 117: ("morph", ("s1p", "s1f")),
    118: ("morph", ("s0f", "s1f")),
}


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
    from structkit.parse.labelled import LabelledParser

    if isinstance(parser, LabelledParser):
        from structkit.parse.beam import hash_slots

        v = parser.vocabs
        values = {"w": v["words"].items, "p": v["tags"].items, "m": v["lemmas"].items,
                  "f": v["feats"].items, "l": ["<none>"] + list(parser.labels)}
        groups = set(parser.config.templates)
        templates = [(t, atoms) for t, (g, atoms) in BEAM_TEMPLATES.items() if g in groups]
        names, slots = _enumerate(templates, values, hash_slots, parser.mask)
        actions = ["shift"] + [f"left-{x}" for x in parser.labels] + [f"right-{x}" for x in parser.labels]
        # Indexed [rows, action] on demand: a dense (features x actions) copy took 1 TiB for a
        # model of 200,000 labels.
        return names, slots, _SlotRows(parser.W, slots), actions
    from structkit.parse.arcstandard import ACTION_NAMES, hash_slots

    values = {"w": parser.words.items, "t": parser.tags.items}
    names, slots = _enumerate(ARC_TEMPLATES.items(), values, hash_slots, parser.mask)
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
    from structkit.parse.labelled import LabelledParser

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
