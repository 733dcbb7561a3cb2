"""Recipes for ready models of the registered corpora: `structkit models list | build NAME`.

A recipe names a corpus of the dataset registry (``structkit.datasets``), the task, the files
(by split: the corpus's train, dev and test files) and the options it records. Building one
finds the corpus (``$STRUCTKIT_DATA``, the cache, or a fetch), trains with those options through
the same path as `structkit train --dev DEV --test TEST` (``structkit.card.train``) and writes the
model with its card, which names the recipe. Recipes are generic over tasks; a pipeline recipe
(one model from raw text to trees) for every registered UD treebank with a training file. Tests
and plugins add their own with :func:`register`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from structkit import card as cards
from structkit.config import resolve_data_path
from structkit.datasets import corpora
from structkit.datasets import fetch as fetch_corpus
from structkit.datasets import get as get_corpus
from structkit.datasets.paths import find
from structkit.errors import UserError
from structkit.io.files import check_outputs, check_writable, commit_together
from structkit.named import Table
from structkit.tasks import get_task, make_config


@dataclass(frozen=True)
class Recipe:
    """How to build one ready model."""

    name: str                       # e.g. ud:English-ParTUT/pos
    task: str
    corpus: str | None              # a registered corpus name (``structkit data list``)
    description: str
    options: dict[str, Any] = field(default_factory=dict)   # train's options, config spelling
    files: dict[str, str] = field(default_factory=dict)     # split -> data path (default: the corpus's)
    language: str = ""

    def default_output(self) -> str:
        """``ud-english-partut.pos.model`` for ``ud:English-ParTUT/pos``."""
        base, _, task = self.name.partition("/")
        slug = base.replace("ud:", "ud-").replace(":", "-").replace("@", "-").lower()
        return f"{slug}.{task or self.task}.model"


# The registered UD treebanks with a training file, and their language (for `make models`).
def _ud_treebanks() -> list[tuple[str, str]]:
    out = []
    for c in corpora():
        if c.ud is not None and any(f.split == "train" for f in c.files):
            out.append((c.ud[0], c.ud[0].split("-", 1)[0]))
    return out


def _ud(treebank: str, language: str, task: str, what: str, **options: Any) -> Recipe:
    """The recipe for ``task`` on a UD treebank: trained on its train file with the task's
    defaults (the learner chosen for the data, dev selection of the epoch) and seed 0, which
    the recipe records so that a rebuild trains the same model."""
    return Recipe(f"ud:{treebank}/{task}", task, f"ud:{treebank}",
                  f"{what}, UD {treebank} (train; dev selects the epoch; scored on test)",
                  {"seed": 0, **options}, language=language)


def _builtin() -> list[Recipe]:
    out = [_ud("English-ParTUT", "English", "pos", "UPOS tagger"),
           _ud("English-ParTUT", "English", "parse", "labelled dependency parser (gold POS in, as "
               "`structkit parse` reads CoNLL-U)")]
    out += [_ud(tb, lang, "tokenize", "tokenizer: tokens, multiword tokens, sentences from raw text")
            for tb, lang in _ud_treebanks()]
    # One model from raw text to labelled trees (tokenizer, morphology, lemmas, parser).
    out += [_ud(tb, lang, "pipeline", "pipeline: tokenizer, morph tagger and lemmatizer, parser, from raw text")
            for tb, lang in _ud_treebanks()]
    return out


_TABLE: Table[Recipe] = Table(_builtin)
_table = _TABLE.items
recipes = _TABLE.all          # every one, in listing order
register = _TABLE.register   # add one (a later one with the same name replaces it): plugins, tests
unregister = _TABLE.unregister


def get(name: str) -> Recipe:
    """A recipe by name; an unknown name is one line listing them."""
    table = _table()
    if name in table:
        return table[name]
    near = [n for n in table if n.split("/", 1)[0] == name or n.lower() == name.lower()]
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    raise UserError(f"unknown model recipe {name!r}{hint} (`structkit models list` shows the "
                    f"{len(table)} recipes)")


def _corpus_files(recipe: Recipe) -> dict[str, str]:
    """split -> the registry's relative path of the corpus's CoNLL-U (or other data) file."""

    corpus = get_corpus(recipe.corpus)
    out: dict[str, str] = {}
    for f in corpus.files:
        if f.split in ("train", "dev", "test") and f.split not in out:
            out[f.split] = f.path
    return out


def files(recipe: Recipe) -> dict[str, str]:
    """split -> data path of the recipe's train, dev and test files (relative, found through
    ``$STRUCTKIT_DATA``, the cache or the shipped samples)."""
    out = _corpus_files(recipe) if recipe.corpus else {}
    out.update(recipe.files)
    if "train" not in out:
        raise UserError(f"recipe {recipe.name}: {recipe.corpus} has no training file")
    return out


def status(recipe: Recipe) -> str:
    """'here' when every file of the recipe is found, else what is missing."""

    missing = [p for p in files(recipe).values() if not os.path.isabs(p) and find(p) is None]
    return "here" if not missing else f"needs `structkit data fetch {recipe.corpus}`" if recipe.corpus \
        else f"missing {', '.join(missing)}"


def local_files(recipe: Recipe, folder: str) -> dict[str, str]:
    """split -> the recipe's files in ``folder`` (a treebank as its release ships it, e.g. a UD
    release's ``UD_Italian-ParTUT/``), by their file names; a missing one is one line."""
    if not os.path.isdir(folder):
        raise UserError("--from is a folder holding the corpus's files", folder)
    out = {}
    for split, rel in files(recipe).items():
        path = os.path.join(folder, os.path.basename(rel))
        if not os.path.isfile(path):
            raise UserError(f"recipe {recipe.name}: no {split} file {os.path.basename(rel)} in this folder",
                            folder)
        out[split] = path
    return out


def build(recipe: Recipe, output: str, fetch: bool = True, progress: bool = False,
          on_epoch=None, say=None, source: str | None = None) -> tuple[Any, dict]:
    """Train the recipe's model and write it to ``output`` with its card; returns
    ``(model, card)``. A corpus not found is fetched first (``fetch``), or is one line;
    ``source``: a folder that holds its files, used as they are (nothing fetched)."""
    paths = files(recipe) if source is None else local_files(recipe, source)
    if source is None and any(not os.path.isabs(p) and find(p) is None for p in paths.values()):
        if not (fetch and recipe.corpus):
            raise UserError(f"recipe {recipe.name}: {status(recipe)} (or --from DIR, a folder with its files)")

        fetch_corpus(recipe.corpus, progress=progress, say=say or (lambda m: None))
    resolved = {k: resolve_data_path(p, must_exist=True) for k, p in paths.items()}
    if say is not None:
        say(f"{recipe.name}: training {recipe.task} on {paths['train']}")
    check_outputs([output], list(resolved.values()))
    check_writable(output, "--output")
    task = get_task(recipe.task)
    values: dict[str, Any] = {"task": recipe.task, **recipe.options}
    if values.get("algo") is None:
        algo = task.training.choose_algo(resolved["train"])
        if algo is not None:
            values["algo"] = algo
    config = make_config(values)
    model, card = cards.train(task, config, resolved["train"], resolved.get("dev"), resolved.get("test"),
                              on_epoch, given=paths,
                              recipe={"name": recipe.name, "options": dict(recipe.options)})
    commit_together([(output, lambda tmp: cards.save(model, tmp, card))])
    return model, card
