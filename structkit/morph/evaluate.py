"""Scores of a morphological analysis on gold tokens: UPOS, XPOS, UFeats, AllTags and Lemmas
accuracy as the CoNLL 2018 shared task defines them (``conll18_ud_eval.py`` v1.2: UFeats and
AllTags keep only the universal features of FEATS, :data:`structkit.eval.ud.UNIVERSAL_FEATURES`;
AllTags is UPOS, XPOS and those features together; a gold lemma ``_`` matches anything), and
one figure of our own, ``alltags_full`` ("AllTags (all FEATS)"): UPOS, XPOS and every FEATS
key, layered (``Number[psor]``) and language-specific ones included, all of which the tagger
predicts. ``alltags_full`` (with Lemmas) is what morph training's dev selection uses."""
from __future__ import annotations

from structkit.errors import UserError
from structkit.eval.ud import universal_feats
from structkit.io.conllu import read_conllu
from structkit.io.files import display_name

METRICS = ("upos", "xpos", "ufeats", "alltags", "alltags_full", "lemmas")
NAMES = {"upos": "UPOS", "xpos": "XPOS", "ufeats": "UFeats", "alltags": "AllTags",
         "alltags_full": "AllTags (all FEATS)", "lemmas": "Lemmas"}


def _feats(feats: str) -> str:
    return "|".join(sorted(feats.split("|")))


def score_rows(gold: list, pred: list) -> dict:
    """Percent accuracies of word rows (CoNLL-U column lists), aligned one to one."""
    right = dict.fromkeys(METRICS, 0)
    for g, p in zip(gold, pred):
        up, xp = g[3] == p[3], g[4] == p[4]
        uf = universal_feats(g[5]) == universal_feats(p[5])
        right["upos"] += up
        right["xpos"] += xp
        right["ufeats"] += uf
        right["alltags"] += up and xp and uf
        right["alltags_full"] += up and xp and _feats(g[5]) == _feats(p[5])
        right["lemmas"] += g[2] == "_" or g[2] == p[2]
    n = max(len(gold), 1)
    return {k: 100.0 * v / n for k, v in right.items()} | {"words": len(gold)}


def evaluate_files(gold_path: str, pred_path: str) -> dict:
    """The scores of PRED against GOLD (CoNLL-U, the same words: a UserError naming the
    first line where they differ)."""

    gold_rows, pred_rows = [], []
    gs, ps = read_conllu(gold_path, check_text=False), read_conllu(pred_path, check_text=False)
    for g in gs:
        p = next(ps, None)
        if p is None:
            raise UserError(f"{display_name(pred_path)} ends before {display_name(gold_path)}: fewer "
                            "sentences (eval --task morph scores gold tokens)", gold_path, g.first_line)
        if len(g.rows) != len(p.rows) or any(a[1] != b[1] for a, b in zip(g.rows, p.rows)):
            k = next((k for k, (a, b) in enumerate(zip(g.rows, p.rows)) if a[1] != b[1]),
                     min(len(g.rows), len(p.rows)))
            raise UserError(f"the words differ from {display_name(gold_path)} line {g.line_of(min(k, len(g.rows) - 1))} "
                            "(eval --task morph scores gold tokens: tag the gold file's words)",
                            pred_path, p.line_of(min(k, len(p.rows) - 1)))
        gold_rows += g.rows
        pred_rows += p.rows
    extra = next(ps, None)
    if extra is not None:
        raise UserError(f"more sentences than {display_name(gold_path)}", pred_path, extra.first_line)
    return score_rows(gold_rows, pred_rows)


def report(result: dict) -> str:
    width = max(map(len, NAMES.values()))
    return "\n".join([f"{NAMES[k]:<{width}} {result[k]:6.2f}" for k in METRICS]
                     + [f"{'words':<{width}} {result['words']}"])
