"""What the morph task's defaults were chosen from: variants of its features, candidates and
training scored on dev (never on test): results/morph-dev.json and results/morph-dev.md.

    python scripts/morph_dev.py [--only NAME] [--variant NAME] [--out results/morph-dev]

Each variant changes module settings of ``structkit.morph`` (features, lexicon, task) or the
training options (epochs, hash bits) from the defaults, trains in this process on each treebank
of ``scripts/tokenize_peer.py`` that has a train and a dev file (dev picks the epoch, as the
defaults do) and records the selected epoch's dev scores (UPOS, XPOS, UFeats, AllTags (all FEATS),
Lemmas: AllTags over UPOS, XPOS and every FEATS key, ``alltags_full``, which dev selection uses;
cells recorded before it had that name hold the same figure as ``alltags``)
and the training CPU seconds (``time.process_time``; numba's kernels compiled before, in this
process, by an untimed 1-epoch training: ``NUMBA_CACHE``, recorded in the .json and said in the
.md; ``--report-only`` rewrites the .md from the .json). Also recorded per
variant and treebank: the share of dev words whose gold tag is among their candidates (the
oracle), over all words and over words the training file lacks. The treebanks trained on dev
(Finnish TDT, English EWT, Chinese GSDSimp) hold out every 10th dev sentence instead
(``--dev-split 0.1``, no refit). Each run updates its own (variant, treebank) cells of the .json
and rewrites the .md from the whole.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from common import dump_json, machine, numba_cache  # noqa: E402
from tokenize_peer import TREEBANKS, _path  # noqa: E402

METRICS = ("upos", "xpos", "ufeats", "alltags_full", "lemmas")
NUMBA_CACHE = numba_cache("warm", "the kernels compiled in this process by an untimed 1-epoch training on the first "
                                  "treebank's files before the timed ones")
# what the report says of cells from before the script recorded it (no warm-up then)
LEGACY_CACHE = numba_cache("not recorded", "those runs did no warm-up: the first cell trained by each run of the "
                                           "script also imported numba and loaded or compiled the kernels within its "
                                           "CPU seconds; the others found them loaded")

# name -> (what it changes, {"module.ATTR" or "config.field": value}), from the defaults before
# this search (``OLD``, set first, so that a rerun gives the same row); DEFAULT names the defaults now
DEFAULT = "ksuf6s6+pre"
OLD = {"features.SUFFIXES": 5, "features.KNOWN_SUFFIXES": 0, "features.KNOWN_OTHER": ()}
VARIANTS = {
    "base": ("the defaults before this search", {}),
    "seed1": ("the defaults, another shuffling seed (how much a seed moves dev)", {"config.seed": 1}),
    "seed2": ("the defaults, another shuffling seed", {"config.seed": 2}),
    "epochs20": ("epoch cap 20 (dev picks)", {"config.epochs": 20}),
    "bits24": ("2^24 weights (hash_bits 24)", {"config.hash_bits": 24}),
    "cands40": ("at most 40 candidates for an unknown word", {"task.MAX_CANDIDATES": 40}),
    "cands10": ("at most 10 candidates for an unknown word", {"task.MAX_CANDIDATES": 10}),
    "lexsuf7": ("lexicon suffixes up to 7 for unknown-word candidates", {"lexicon.MAX_SUFFIX": 7}),
    "enrich3": ("known forms also get 3 suffix-guessed tags", {"lexicon.ENRICH": 3}),
    "enrich6": ("known forms also get 6 suffix-guessed tags", {"lexicon.ENRICH": 6}),
    "enrich6r2": ("known forms seen at most twice also get 6 suffix-guessed tags",
                  {"lexicon.ENRICH": 6, "lexicon.ENRICH_RARE": 2}),
    "folds3": ("jackknifed dictionary over 3 folds", {"task.FOLDS": 3}),
    "folds10": ("jackknifed dictionary over 10 folds", {"task.FOLDS": 10}),
    "suf6": ("word suffixes 1-6", {"features.SUFFIXES": 6}),
    "pre5": ("word prefixes 1-5", {"features.PREFIXES": 5}),
    "nsuf1-4": ("neighbours' suffixes 1-4", {"features.NEIGH_SUFFIXES": (1, 2, 3, 4)}),
    "amb2": ("ambiguity classes of the neighbours +-2", {"features.AMB_WINDOW": (-2, -1, 1, 2)}),
    "sufshape": ("suffixes 1-3 joined with the case/digit flags", {"features.SUFFIX_SHAPE": True}),
    "ksuf3": ("suffixes 1-3 also joined with known/unknown word", {"features.KNOWN_SUFFIXES": 3}),
    "ksuf5": ("suffixes 1-5 also joined with known/unknown word", {"features.KNOWN_SUFFIXES": 5}),
    "ksuf5u": ("suffixes 1-5 also joined with unknown word (for words the dictionary lacks only)",
               {"features.KNOWN_SUFFIXES": 5, "features.UNKNOWN_ONLY": True}),
    "ksuf6s6": ("suffixes 1-6, each also joined with known/unknown word",
                {"features.KNOWN_SUFFIXES": 6, "features.SUFFIXES": 6}),
    "ksuf6s6+shape": ("ksuf6s6, and shape, flags and length joined likewise",
                      {"features.KNOWN_SUFFIXES": 6, "features.SUFFIXES": 6, "features.KNOWN_OTHER": ("sh", "fl", "len")}),
    "ksuf6s6+pre": ("ksuf6s6, and prefixes 1-4 joined likewise",
                    {"features.KNOWN_SUFFIXES": 6, "features.SUFFIXES": 6, "features.KNOWN_OTHER": ("p1", "p2", "p3", "p4")}),
    "ksuf7s7": ("suffixes 1-7, each also joined with known/unknown word", {"features.KNOWN_SUFFIXES": 7, "features.SUFFIXES": 7}),
    "ksuf6s6+pre/seed1": ("the defaults now (ksuf6s6+pre), another shuffling seed (how much a seed moves dev)",
                          {"features.KNOWN_SUFFIXES": 6, "features.SUFFIXES": 6,
                           "features.KNOWN_OTHER": ("p1", "p2", "p3", "p4"), "config.seed": 1}),
    "ksuf6s6+pre/seed2": ("the defaults now (ksuf6s6+pre), another shuffling seed",
                          {"features.KNOWN_SUFFIXES": 6, "features.SUFFIXES": 6,
                           "features.KNOWN_OTHER": ("p1", "p2", "p3", "p4"), "config.seed": 2}),
}


XTRANS = ("transitions also score the previous XPOS with each part of the tag: a kernel change, tried "
          "and taken out (commit history of this script's branch), so this row cannot be rerun")


def _apply(changes: dict) -> tuple[dict, dict]:
    """Set the module settings; the config fields to pass and the old settings to restore."""
    mods = _modules()
    old, config = {}, {}
    for key, v in changes.items():
        where, attr = key.split(".")
        if where == "config":
            config[attr] = v
        else:
            old[key] = getattr(mods[where], attr)
            setattr(mods[where], attr, v)
    return config, old


def _modules() -> dict:
    """The modules a variant's ``"module.ATTR"`` keys name."""
    import structkit.lattice.features as features
    import structkit.lattice.lexicon as lexicon
    import structkit.morph.task as task

    return {"features": features, "lexicon": lexicon, "task": task}


def _restore(old: dict) -> None:
    mods = _modules()
    for key, v in old.items():
        where, attr = key.split(".")
        setattr(mods[where], attr, v)


def oracle(train_path: str, dev_path: str, hold: bool) -> dict:
    """The share of dev words whose gold tag is among their candidates (all; unknown words)."""
    from structkit.learn.selection import split_every
    from structkit.morph import task as T
    from structkit.lattice.lexicon import Lexicon

    tr = T.read_treebank(train_path)
    if hold:
        keep, held = split_every(len(tr), 0.1)
        tr, dv = [tr[i] for i in keep], [tr[i] for i in held]
    else:
        dv = T.read_treebank(dev_path)
    lex = Lexicon(T.MAX_CANDIDATES).add((r[1], T.tag_of(r), 0, r[2]) for s in tr for r in s.rows)
    n = hit = unk = unk_hit = 0
    for s in dv:
        for r in s.rows:
            cands, known = lex.tags(r[1])
            ok = T.tag_of(r) in cands
            n += 1
            hit += ok
            if not known:
                unk += 1
                unk_hit += ok
    return {"oracle": round(100 * hit / max(n, 1), 2), "unknown_share": round(100 * unk / max(n, 1), 2),
            "oracle_unknown": round(100 * unk_hit / max(unk, 1), 2)}


def files(name: str) -> tuple[str, str | None]:
    """The training file of a treebank of TREEBANKS and its dev file (None: trained on dev)."""
    train_stem, dev_stem, _ = TREEBANKS[name]
    return _path(name, train_stem), (_path(name, dev_stem) if dev_stem else None)


def run(name: str, variant: str, paths: tuple[str, str | None] | None = None) -> dict:
    """Train ``variant`` on treebank ``name`` (its ``paths``, the training file and the dev file or
    None, default ``files(name)``: where dev is None, every 10th training sentence is held out as
    dev, no refit) and record the dev scores, CPU seconds and the candidates' oracle."""
    from structkit.morph.task import MorphConfig, train_morph

    train, dev = paths or files(name)
    config_changes, old = _apply(OLD | VARIANTS[variant][1])
    try:
        cfg = MorphConfig(**config_changes, **({} if dev else {"dev_split": 0.1, "refit": False}))
        cfg.validate()
        c0 = time.process_time()
        model = train_morph(cfg, train, dev)
        cpu = time.process_time() - c0
        out = {"dev": model.info["dev_scores"], "selected_epoch": model.info.get("selected_epoch"),
               "cpu_seconds": round(cpu, 1), "numba_cache": NUMBA_CACHE} | oracle(train, dev, dev is None)
    finally:
        _restore(old)
    return out


def _cache_words(obj: dict) -> str:
    cells = [r for cells in obj["runs"].values() for r in cells.values()]
    new = [r for r in cells if r.get("numba_cache") == NUMBA_CACHE]
    if len(new) == len(cells):
        return NUMBA_CACHE["words"]
    if not new:
        return LEGACY_CACHE["words"]
    return (f"{NUMBA_CACHE['words']} for the cells marked †; for the others, {LEGACY_CACHE['words']}")


def warm_up(name: str, paths: tuple[str, str | None] | None = None) -> None:
    """Untimed: one epoch on ``name``'s files (``paths`` as ``run`` takes them) with the defaults,
    compiling the kernels in this process."""
    from structkit.morph.task import MorphConfig, train_morph

    train, dev = paths or files(name)
    cfg = MorphConfig(epochs=1, **({} if dev else {"dev_split": 0.1, "refit": False}))
    cfg.validate()
    train_morph(cfg, train, dev)


def _dev(r: dict) -> dict:
    """A cell's dev scores by METRICS: a cell recorded before ``eval --task morph`` took CoNLL
    2018's AllTags (universal features only) has no ``alltags_full``, and its ``alltags`` is that
    figure (UPOS, XPOS and all FEATS: the only AllTags there was)."""
    d = r["dev"]
    return d if "alltags_full" in d else d | {"alltags_full": d["alltags"]}


def write_report(obj: dict, out: str) -> None:
    names = [n for n in TREEBANKS if any(n in r for r in obj["runs"].values())]
    lines = ["# Morph task: what dev preferred (issue 28)", "",
             f"`python scripts/morph_dev.py [--variant V] [--only T]`: the rows come from several such runs during "
             f"the search, each on the code of its time (the last run {obj['machine']['date']}, commit "
             f"{obj['machine']['commit']}, {obj['machine']['cpu']}, shared cores: CPU seconds are noisy). Each "
             "variant changes the settings named from `base` (the defaults before this search; the defaults now: "
             f"`{DEFAULT}`) and trains on the training file, dev choosing "
             "the epoch; cells are the selected epoch's dev scores. * = trained on dev: every 10th dev sentence "
             "held out instead. Oracle: % of dev words whose gold tag is among their candidates (all words / "
             "words the training file lacks, their share in brackets). AllTags (all FEATS): UPOS, XPOS and "
             "every FEATS key, the figure dev selection uses (with Lemmas); not CoNLL 2018's AllTags, which "
             "keeps only the universal features (`results/morph.md` has both on test). Test files are not "
             "read. CPU s: "
             + _cache_words(obj) + ".", ""]
    for name in names:
        lines += [f"## {name}{'' if TREEBANKS[name][1] else '*'}", "",
                  "| variant | what | UPOS | XPOS | UFeats | AllTags (all FEATS) | Lemmas | epoch | CPU s | "
                  "oracle (unknown) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for v, cells in obj["runs"].items():
            r = cells.get(name)
            if r is None:
                continue
            what = obj["variants"].get(v, "")
            d = _dev(r)
            orc = f"{r['oracle']:.2f} / {r['oracle_unknown']:.2f} ({r['unknown_share']:.1f}%)"
            mark = "†" if r.get("numba_cache") == NUMBA_CACHE else ""
            lines.append(f"| {v} | {what} | " + " | ".join(f"{d[k]:.2f}" for k in METRICS)
                         + f" | {r['selected_epoch']} | {r['cpu_seconds']:.1f}{mark} | {orc} |")
        lines.append("")
    full = [v for v, cells in obj["runs"].items() if all(n in cells for n in TREEBANKS)]
    if full:
        lines += [f"## Mean over the {len(TREEBANKS)} treebanks (variants run on all)", "",
                  "| variant | UPOS | XPOS | UFeats | AllTags (all FEATS) | Lemmas |", "|---|---|---|---|---|---|"]
        for v in full:
            cells = obj["runs"][v]
            lines.append(f"| {v} | " + " | ".join(
                f"{sum(_dev(cells[n])[k] for n in TREEBANKS) / len(TREEBANKS):.2f}" for k in METRICS) + " |")
        lines.append("")
    Path(out + ".md").write_text("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(TREEBANKS), action="append")
    ap.add_argument("--variant", choices=sorted(VARIANTS), action="append")
    ap.add_argument("--out", default=str(ROOT / "results" / "morph-dev"))
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args()
    old = Path(args.out + ".json")
    obj = json.loads(old.read_text()) if old.exists() else {"runs": {}, "variants": {}}
    if args.report_only:
        write_report(obj, args.out)
        return 0
    obj["machine"] = machine()
    warm_up((args.only or list(TREEBANKS))[0])
    for v in args.variant or list(VARIANTS):
        obj["variants"][v] = VARIANTS[v][0] + "".join(f"; {k}={c!r}" for k, c in VARIANTS[v][1].items())
        obj["variants"]["xtrans"] = XTRANS
        for name in args.only or list(TREEBANKS):
            r = run(name, v)
            obj["runs"].setdefault(v, {})[name] = r
            print(v, name, r, flush=True)
            dump_json(obj, old)
            write_report(obj, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
