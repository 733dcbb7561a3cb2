"""Published CoNLL 2018 shared-task figures beside the treebanks of results/pipeline.md (quoted,
not measured by us). ``scripts/pipeline_experiments.py`` renders them as rows of their own.

They are not comparable to our rows as equals: the shared task used UD 2.2 (our files are a later
UD release), its systems trained on UD 2.2's training data (and could use pretrained embeddings
and other resources), and its test sets were those of UD 2.2. They anchor the scale only.

Each entry: the shared task's treebank code, whether it was one of the 82 test sets, a note, and
per metric (LAS, MLAS, BLEX) the UDPipe 1.2 baseline's F1 and the best system's F1 with its name.
A figure that could not be found in the sources below is ``None`` (rendered "not found").
Never fill a figure in from memory: only from a source named in SOURCE.
"""
from __future__ import annotations

import csv
from pathlib import Path

SOURCE = ("the CoNLL 2018 shared task's official per-treebank rankings, "
          "https://universaldependencies.org/conll18/results-las.html, results-mlas.html and "
          "results-blex.html (the organisers' pages; Zeman et al. 2018, \"CoNLL 2018 Shared Task: "
          "Multilingual Parsing from Raw Text to Universal Dependencies\", https://aclanthology.org/K18-2001, "
          "describes the task). The figures were read from a copy of those pages' per-treebank "
          "tables kept in the public repository MinionAttack/fragility_coling_2022, "
          "Tools/ConllSharedTaskRanking/data/{las,mlas,blex}/individual/CODE.csv (downloaded from "
          "the shared task's website by that repository's tool); the best systems' LAS agree with the "
          "\"winner CoNLL18\" column of the README of Orange-OpenSource/UDParse. The same copy lists "
          "the 82 test sets: it_partut, en_partut and ta_ttb are not among them")

METRICS = ("LAS", "MLAS", "BLEX")


def _nf() -> dict:
    return {m: None for m in METRICS}


NOT_IN_TASK = "not one of the shared task's 82 test sets"
DEV_ONLY = ("our rows train on the dev file only (the data directory has no training file), the "
            "shared task's systems on the training file")

# treebank (our name) -> facts; "baseline": metric -> F1 of "BASELINE UDPipe 1.2 (Praha)";
# "best": metric -> (F1, system): the first row of that metric's per-treebank ranking
PUBLISHED: dict[str, dict] = {
    "ud-italian-partut": {"code": "it_partut", "in_task": False, "note": NOT_IN_TASK,
                          "baseline": _nf(), "best": _nf()},
    "ud-tamil-ttb": {"code": "ta_ttb", "in_task": False, "note": NOT_IN_TASK, "baseline": _nf(), "best": _nf()},
    "ud-english-partut": {"code": "en_partut", "in_task": False, "note": NOT_IN_TASK,
                          "baseline": _nf(), "best": _nf()},
    "ud-turkish-imst": {"code": "tr_imst", "in_task": True, "note": "",
                        "baseline": {"LAS": 54.04, "MLAS": 44.50, "BLEX": 45.91},
                        "best": {"LAS": (66.44, "HIT-SCIR"), "MLAS": (55.73, "Stanford and TurkuNLP, tied"),
                                 "BLEX": (60.13, "TurkuNLP")}},
    "ud-finnish-tdt": {"code": "fi_tdt", "in_task": True, "note": DEV_ONLY,
                       "baseline": {"LAS": 76.45, "MLAS": 68.58, "BLEX": 62.19},
                       "best": {"LAS": (88.73, "HIT-SCIR"), "MLAS": (80.84, "Stanford"),
                                "BLEX": (81.24, "TurkuNLP")}},
    "ud-english-ewt": {"code": "en_ewt", "in_task": True, "note": DEV_ONLY,
                       "baseline": {"LAS": 77.56, "MLAS": 68.70, "BLEX": 71.02},
                       "best": {"LAS": (84.57, "HIT-SCIR"), "MLAS": (76.33, "Stanford"),
                                "BLEX": (78.44, "HIT-SCIR")}},
    "ud-vietnamese-vtb": {"code": "vi_vtb", "in_task": True, "note": "",
                          "baseline": {"LAS": 39.63, "MLAS": 33.49, "BLEX": 35.72},
                          "best": {"LAS": (55.22, "HIT-SCIR"), "MLAS": (47.61, "HIT-SCIR"),
                                   "BLEX": (44.02, "Stanford")}},
    "ud-chinese-gsdsimp": {"code": "zh_gsd", "in_task": True,
                           "note": "the shared task's zh_gsd, in traditional characters; our Chinese "
                                   "GSDSimp is a later conversion of GSD to simplified characters, not "
                                   "the same test set; " + DEV_ONLY,
                           "baseline": {"LAS": 57.91, "MLAS": 48.49, "BLEX": 52.92},
                           "best": {"LAS": (76.77, "HIT-SCIR"), "MLAS": (66.62, "HIT-SCIR"),
                                    "BLEX": (72.97, "HIT-SCIR")}},
}


# The shared task's 82 test sets, by treebank code (the file names of the same copy of the rankings).
TEST_SETS = frozenset("""
af_afribooms ar_padt bg_btb br_keb bxr_bdt ca_ancora cs_cac cs_fictree cs_pdt cs_pud cu_proiel da_ddt
de_gsd el_gdt en_ewt en_gum en_lines en_pud es_ancora et_edt eu_bdt fa_seraji fi_ftb fi_pud fi_tdt fo_oft
fr_gsd fr_sequoia fr_spoken fro_srcmf ga_idt gl_ctg gl_treegal got_proiel grc_perseus grc_proiel he_htb
hi_hdtb hr_set hsb_ufal hu_szeged hy_armtdp id_gsd it_isdt it_postwita ja_gsd ja_modern kk_ktb kmr_mg ko_gsd
ko_kaist la_ittb la_perseus la_proiel lv_lvtb nl_alpino nl_lassysmall no_bokmaal no_nynorsk no_nynorsklia
pcm_nsc pl_lfg pl_sz pt_bosque ro_rrt ru_syntagrus ru_taiga sk_snk sl_ssj sl_sst sme_giella sr_set sv_lines
sv_pud sv_talbanken th_pud tr_imst ug_udt uk_iu ur_udtb vi_vtb zh_gsd
""".split())

BASELINE = "BASELINE UDPipe 1.2 (Praha)"
RANKINGS_CSV = Path(__file__).resolve().parent / "conll18_rankings.csv"


def rankings() -> dict[tuple[str, str], list[tuple[str, float]]]:
    """(metric, treebank code) -> the official ranking of the 26 systems (the baseline among them)
    as (system, F1), best first: each row of ``conll18_rankings.csv``, quoted from SOURCE's copy for
    the treebanks here that were test sets."""
    out: dict[tuple[str, str], list[tuple[str, float]]] = {}
    with open(RANKINGS_CSV, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            out.setdefault((row["metric"], row["treebank"]), []).append((row["system"], float(row["f1"])))
    return out


def rank(ranking: list[tuple[str, float]], f1: float) -> int:
    """Where ``f1`` would have ranked among ``ranking``'s systems: 1 + how many scored higher (a
    tie shares the better place, as the official tables list tied systems)."""
    return 1 + sum(1 for _, v in ranking if v > f1)
