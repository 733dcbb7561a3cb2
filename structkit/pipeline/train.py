"""Training a pipeline (`structkit train --task pipeline`): each part with its own defaults and
dev selection, and the parser on jackknifed predicted morphology.

Why jackknife: the beam parser reads UPOS, FEATS and LEMMA (its ``morph`` templates). Trained on
gold values it learns to trust them; on raw text it meets the morph model's predictions, with
their errors. So the training file is cut into k folds (every k-th sentence); a morph model
trained on the other k - 1 folds (the epochs the full morph model chose on dev) predicts
UPOS, XPOS, FEATS and LEMMA of each fold, and the parser trains on those. With a dev file,
both parsers (gold and jackknifed morphology) are trained, each selecting its epoch on dev
analysed by the full morph model, and the one with the better dev LAS is kept; the header
records both scores and the choice. Measured (scripts/parse_jackknife.py,
results/parse-jackknife.md): on Turkish-IMST and Italian-ParTUT the gold-trained parser scored
the higher test LAS and MLAS on predicted morphology (by 0.7-0.9 LAS, two seeds each), so the
jackknife is not assumed to win: dev decides where there is dev, and without dev ("auto")
the parser trains on gold morphology, what the measurements favoured, without the k extra morph
models."""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from structkit.errors import UserError
from structkit.io.conllu import read_conllu
from structkit.io.document import write_conllu
from structkit.io.files import display_name, spooled_stdin, temporary_folder, temporary_writes
from structkit.learn import registry
from structkit.morph import task as morph_task  # (a module: its trainer can be swapped in tests)
from structkit.parse.labelled import check_lengths, label_scores
from structkit.parse.parser import ParserConfig, read_treebank, train_parser_on
from structkit.pipeline.model import PipelineConfig, PipelineModel
from structkit.tokenizer.task import TokenizeConfig, train_tokenizer
from structkit.vectors import clusters_of_config


@contextmanager
def _timed(info: dict, key: str):
    """Record the wall and CPU seconds (every thread of this process) of a step in ``info``."""
    t, c = time.perf_counter(), time.process_time()
    yield
    info["seconds"][key] = round(time.perf_counter() - t, 1)
    info["cpu_seconds"][key] = round(time.process_time() - c, 1)


class Stages:
    """The stages of a pipeline's training, in order, each with the epochs it is expected to
    take (``plan``: [stage, epochs]); ``tagged(stage, kind)`` is the ``on_epoch`` of one stage:
    its stats marked with the stage's name, what it trains (``kind``: tokenize, morph or parse,
    which says how its numbers read) and how many epochs are left after this one in all the
    stages (``expect``: what a progress bar's length is). A stage that stops early (patience) or
    that turns out longer (the jackknife's folds train as many epochs as the morph model kept)
    is counted again at its next epoch."""

    def __init__(self, on_epoch, plan: list[list]):
        self.on_epoch, self.plan = on_epoch, plan

    def folds(self, folds: int, epochs: int) -> None:
        """The jackknife's stages as they will run: ``folds`` morph models of ``epochs`` each."""
        at = next((i for i, (name, _) in enumerate(self.plan) if name.startswith("morph fold")), None)
        if at is None:
            return
        rest = [item for item in self.plan[at:] if not item[0].startswith("morph fold")]
        self.plan[at:] = [[f"morph fold {k + 1}/{folds}", epochs] for k in range(folds)] + rest

    def tagged(self, stage: str, kind: str):
        if self.on_epoch is None:
            return None
        at = next(i for i, (name, _) in enumerate(self.plan) if name == stage)

        def report(epoch: int, stats: dict) -> None:
            left = max(self.plan[at][1] - epoch, 0) + sum(n for _, n in self.plan[at + 1:])
            self.on_epoch(epoch, {"part": stage, "kind": kind, "part_epoch": epoch, "expect": left, **stats})
        return report


def _epochs(config_epochs: int | None, algo: str, task: str) -> int:
    return config_epochs or registry.get(algo, task).epochs


def read_training(path: str):
    """(CoNLL-U sentences with their lines, the trees the parser reads: ``read_treebank``'s)."""

    sents = list(read_conllu(path, check_text=False))
    trees = read_treebank(path)
    if len(sents) != len(trees) or any(len(s.rows) != len(t) for s, t in zip(sents, trees)):
        raise UserError("the CoNLL-U and the trees of the file disagree", display_name(path))
    return sents, trees


def with_analysis(trees, analyses):
    """Copies of ``trees`` (``Sentence``) with LEMMA, UPOS, XPOS and FEATS from ``analyses``
    (``MorphModel.analyse``: (lemma, upos, xpos, feats) per word)."""

    out = []
    for t, a in zip(trees, analyses):
        c = t.copy()
        if a:
            c.fill_columns(dict(zip((2, 3, 4, 5), (list(x) for x in zip(*a)))))
        out.append(c)
    return out


def write_sentences(sents, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        write_conllu(sents, f)


def large_blocks_mapped() -> None:
    """Have glibc's malloc give every block of 128 KB or more its own mapping, returned to the
    system when freed (``mallopt(M_MMAP_THRESHOLD)``). By default the threshold rises to the
    size of each large block freed (up to 32 MB), so the next stage's arrays of that size come
    from the heap, where what they leave between live objects is not given back. Italian
    ParTUT's pipeline (resident memory sampled every 50 ms): the jackknife's five fold peaks rose
    from 448 to 489 MiB, and stay at 440-457 with this; the process's peak (ru_maxrss) went
    from 492 to 470 MiB, for 1.2 s more system CPU of 47. A no-op where the C library is not
    glibc; it lasts for the process."""
    _glibc("mallopt", -3, 128 << 10)   # M_MMAP_THRESHOLD


def _glibc(name: str, *args) -> None:
    """Call glibc's ``name`` with ``args``; nothing where the C library is not glibc (musl has
    no malloc_trim nor these mallopt options) or the system is not Linux."""
    import ctypes
    import sys

    if sys.platform.startswith("linux"):
        try:
            getattr(ctypes.CDLL(None), name)(*args)
        except (OSError, AttributeError):   # not glibc
            pass


def release_memory() -> None:
    """Between stages: collect what the stage left (its models hold cycles) and give the C
    heap's free pages back to the system (glibc's malloc_trim), so that the next stage starts
    from what is really kept and the peak of training is one stage's, not their sum."""
    import gc

    gc.collect()
    _glibc("malloc_trim", 0)


def jackknife(train_path: str, sents, folds: int, epochs: int | None, seed: int = 0,
              on_fold: Callable[[int, float], None] | None = None, stages: Stages | None = None,
              clusters=None, vectors: dict | None = None) -> list:
    """The morph analysis of every training sentence by a morph model that did not see it:
    fold k (sentences i with i % folds == k) analysed by a model trained on the other folds,
    each trained with ``epochs`` (None: the learner's default) and no dev (each fold's epochs
    reported as the stage ``morph fold k/N`` of ``stages``); ``clusters``: the word clusters of
    pretrained vectors the morph models read (``vectors``: the config's vectors and
    vectors_limit), or None."""

    analyses: list = [None] * len(sents)
    with temporary_folder("structkit-jackknife-") as tmp:
        # every fold's training file first; then only the words are kept of the sentences (the
        # caller's list, when it keeps none itself, is freed while the folds train)
        files = []
        for k in range(folds):
            held = [i for i in range(len(sents)) if i % folds == k]
            if not held:
                continue
            path = os.path.join(tmp, f"fold{k}.conllu")
            with temporary_writes():
                write_sentences([s for i, s in enumerate(sents) if i % folds != k], path)
            files.append((k, path, held))
        forms = [[r[1] for r in s.rows] for s in sents]
        del sents
        for k, path, held in files:
            t0 = time.perf_counter()
            cfg = morph_task.MorphConfig(epochs=epochs, seed=seed, **(vectors or {}))
            cfg.validate()
            model = morph_task.train_morph(cfg, path, None, None if stages is None else
                                           stages.tagged(f"morph fold {k + 1}/{folds}", "morph"),
                                           **({"clusters": clusters} if clusters is not None else {}))
            for i, a in zip(held, model.analyse([forms[i] for i in held])):
                analyses[i] = a
            del model   # gone before the next fold trains, not after
            release_memory()
            if on_fold is not None:
                on_fold(k, time.perf_counter() - t0)
    return analyses


def parser_dev_scores(parser, dev) -> dict:
    if hasattr(parser, "parse_sentences"):
        H, D = parser.parse_sentences(dev)
    else:
        H, D = [], []
        for batch, heads, _ in parser.parse_batches(dev, "dev"):
            H += heads
            D += [["_"] * len(s) for s in batch]
    return {k: round(v, 2) for k, v in label_scores(dev, H, D).items() if k in ("uas", "las")}


def choose_parser(scores: dict[str, dict], trained: list[str]) -> str:
    """Which parser the pipeline keeps: the one with the better dev LAS (``scores``: kind ->
    its dev scores), the jackknifed one on a tie (it trained on what it will read); without dev
    scores, the first (the only one) ``trained``."""
    if scores:
        return max(scores, key=lambda k: (scores[k]["las"], k == "jackknifed"))
    return trained[0]


def train_pipeline(config: PipelineConfig, train_path: str, dev_path: str | None = None,
                   on_epoch=None, **_) -> PipelineModel:
    """Train the parts of ``config.parts`` on the treebank ``train_path`` (see the module
    docstring). Each part reads the files again: '-' is kept in a temporary file first."""

    with spooled_stdin([train_path, dev_path]) as (train, dev):
        return _train(config, train, dev, on_epoch)


def _train(config: PipelineConfig, train_path: str, dev_path: str | None, on_epoch) -> PipelineModel:
    config.validate()
    large_blocks_mapped()
    t0, c0 = time.perf_counter(), time.process_time()
    from structkit.datasets.convert import sha256_file   # the package's import is for training only

    sha = sha256_file(Path(train_path))
    info: dict = {"train_file": display_name(train_path), "train_sha256": sha,
                  "dev_file": display_name(dev_path) if dev_path else None, "seconds": {}, "cpu_seconds": {}}
    model = PipelineModel(config, info=info)
    parts = config.parts
    stages = Stages(on_epoch, _plan(config, dev_path))
    if "parse" in parts:   # read first: a sentence the parser refuses stops training before any stage
        sents, trees = read_training(train_path)
        dev = read_treebank(dev_path) if dev_path else None
        check_lengths(trees, display_name(train_path))
        check_lengths(dev or [], display_name(dev_path) if dev_path else None)
        # read again when the parser's stages come (as each part reads the file): not held while
        # the tokenizer and the morph models train (about 70 MB for Italian ParTUT)
        n_train = len(sents)
        del sents, trees
    clusters, vectors = None, {}
    if config.vectors is not None and ("morph" in parts or "parse" in parts):   # made once for both parts
        with _timed(info, "vectors"):
            clusters = clusters_of_config(config)
        info["vectors"] = clusters.header()
        vectors = {"vectors": config.vectors, "vectors_limit": config.vectors_limit}
    if "tokenize" in parts:
        c = TokenizeConfig(seed=config.seed, epochs=config.epochs)
        c.validate()
        with _timed(info, "tokenize"):
            model.tokenizer = train_tokenizer(c, train_path, dev_path, stages.tagged("tokenize", "tokenize"))
        release_memory()
    if "morph" in parts:
        c = morph_task.MorphConfig(seed=config.seed, epochs=config.epochs, **vectors)
        c.validate()
        with _timed(info, "morph"):
            model.morph = morph_task.train_morph(c, train_path, dev_path, stages.tagged("morph", "morph"),
                                                 **({"clusters": clusters} if clusters is not None else {}))
        release_memory()
    if "parse" in parts:
        name = display_name(train_path)
        candidates: dict[str, list] = {}
        if model.morph is None:   # no morph model: the parser reads the input's own columns
            candidates["gold"] = read_treebank(train_path)
        else:
            if dev is not None:   # dev as the parser will see it: analysed by the morph model
                dev = with_analysis(dev, model.morph.analyse([t.forms for t in dev]))
            if config.jackknife == "yes" or (config.jackknife == "auto" and dev is not None):
                epochs = model.morph.info.get("selected_epoch") or model.morph.config.epochs
                folds = min(config.folds, max(n_train, 2))   # a tiny file: a sentence per fold
                stages.folds(folds, epochs)   # as many epochs as the morph model kept
                with _timed(info, "jackknife"):   # the sentences as read_training read them
                    analyses = jackknife(train_path, list(read_conllu(train_path, check_text=False)), folds,
                                         epochs, config.seed, stages=stages, clusters=clusters, vectors=vectors)
                trees = read_treebank(train_path)
                candidates["jackknifed"] = with_analysis(trees, analyses)
                info["jackknife_folds"] = folds
                info["jackknife_morph_epochs"] = epochs
            if config.jackknife in ("no", "auto"):   # without dev, "auto" is gold: it won both measurements
                candidates["gold"] = trees if "jackknifed" in candidates else read_treebank(train_path)
        scores, parsers, trained = {}, {}, []
        for kind, data in candidates.items():
            c = ParserConfig(seed=config.seed, epochs=config.epochs, **vectors)
            c.validate()
            with _timed(info, f"parse_{kind}"):
                parsers[kind] = train_parser_on(c, data, dev, stages.tagged(f"parse ({kind} morphology)", "parse"),
                                                name, sha, clusters=clusters)
            trained.append(kind)
            if dev is not None:
                scores[kind] = parser_dev_scores(parsers[kind], dev)
            # only the better parser so far is kept (choose_parser over the scores so far):
            # the other's tables are freed before the next one trains
            best = choose_parser(scores, trained)
            parsers = {best: parsers[best]}
            release_memory()
        kept = choose_parser(scores, trained)
        model.parser = parsers[kept]
        info["parser_morphology"] = kept
        info["parser_dev"] = scores
    info["train_seconds"] = round(time.perf_counter() - t0, 1)
    info["train_cpu_seconds"] = round(time.process_time() - c0, 1)
    info["train_sentences"] = _count_sentences(model)
    model.check(display_name(train_path))
    return model


def _plan(config: PipelineConfig, dev_path: str | None) -> list[list]:
    """The stages training will go through, with their expected epochs (see ``Stages``): the
    same choices as ``_train`` makes, before it makes them."""
    parts = config.parts
    plan: list[list] = []
    if "tokenize" in parts:
        plan.append(["tokenize", _epochs(config.epochs, "pa", "tokenize")])
    morph = _epochs(config.epochs, "perceptron", "morph")
    if "morph" in parts:
        plan.append(["morph", morph])
    if "parse" in parts:
        kinds = ["gold"]
        if "morph" in parts:
            jack = config.jackknife == "yes" or (config.jackknife == "auto" and dev_path is not None)
            if jack:   # (a tiny file has fewer folds: Stages.folds says so when they start)
                plan += [[f"morph fold {k + 1}/{config.folds}", morph] for k in range(config.folds)]
            kinds = (["jackknifed"] if jack else []) + (["gold"] if config.jackknife in ("no", "auto") else [])
        plan += [[f"parse ({kind} morphology)", _epochs(config.epochs, "beam", "parse")] for kind in kinds]
    return plan


def _count_sentences(model: PipelineModel) -> int:
    for part in (model.parser, model.morph, model.tokenizer):
        if part is not None and part.info.get("train_sentences"):
            return int(part.info["train_sentences"])
    return 0
