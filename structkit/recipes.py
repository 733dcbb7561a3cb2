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

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from structkit import card as cards
from structkit.config import resolve_data_path
from structkit.datasets import corpora
from structkit.datasets import fetch as fetch_corpus
from structkit.datasets import get as get_corpus
from structkit.datasets.convert import sha256_file
from structkit.datasets.paths import find, search_dirs
from structkit.datasets.registry import UD_DEFAULT_RELEASE, ud_corpus, ud_folder
from structkit.errors import UserError
from structkit.io.files import check_outputs, check_writable, commit_together
from structkit.named import Table
from structkit.tasks import get_task, make_config
from structkit.tasks import names as task_names


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
    folder: str | None = None       # a treebank folder the recipe was made for (`build --from DIR`)

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
    """A recipe by name; an unknown name is one line listing them. Any UD treebank is a name
    too: ``ud:Language-Name[@release][/task]`` (the task defaults to ``pipeline``) builds from
    the treebank's own files, fetched as `structkit data fetch` fetches them."""
    table = _table()
    if name in table:
        return table[name]
    if name.startswith("ud:"):
        return ud_recipe(name)
    near = [n for n in table if n.split("/", 1)[0] == name or n.lower() == name.lower()]
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    raise UserError(f"unknown model recipe {name!r}{hint} (`structkit models list` shows the "
                    f"{len(table)} recipes)")


# ---- any UD treebank: a folder of its files, or a name and release to fetch -----------------------
UD_FILE = re.compile(r"^(.+)-ud-(train|dev|test)\.conllu$")
DEFAULT_TASK = "pipeline"   # what a treebank named without a task builds


def treebank_files(folder: str) -> dict[str, str]:
    """split -> path of the files of the UD treebank in ``folder``, found by the names a UD
    release gives them (``af_afribooms-ud-train.conllu``); a folder with none, or with two
    files for one split, is one line."""
    if not os.path.isdir(folder):
        raise UserError("not a folder: --from names a folder holding a treebank's files", folder)
    found: dict[str, str] = {}
    for name in sorted(os.listdir(folder)):
        m = UD_FILE.match(name)
        if m is None or not os.path.isfile(os.path.join(folder, name)):
            continue
        split = m.group(2)
        if split in found:
            raise UserError(f"two {split} files, {os.path.basename(found[split])} and {name}: a "
                            f"folder holds one treebank", folder)
        found[split] = os.path.join(folder, name)
    if not found:
        raise UserError("no treebank here: a UD treebank's files are named "
                        "LANG_NAME-ud-train.conllu, -ud-dev.conllu and -ud-test.conllu", folder)
    return found


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "-", name).strip("-") or "treebank"


def folder_recipe(folder: str, task: str = DEFAULT_TASK) -> Recipe:
    """The recipe for ``task`` on the UD treebank in ``folder``, named after the folder
    (``UD_Afrikaans-AfriBooms`` -> ``ud:Afrikaans-AfriBooms/pipeline``, another folder by its
    own name), with the task's defaults and seed 0."""
    folder = os.path.abspath(folder)
    paths = treebank_files(folder)
    base = os.path.basename(os.path.normpath(folder))
    treebank = f"ud:{base[3:]}" if base.startswith("UD_") and len(base) > 3 else _slug(base)
    return Recipe(f"{treebank}/{task}", task, None,
                  f"{task}, the treebank in {folder} (train; dev selects the epoch; scored on test)",
                  {"seed": 0}, files=paths, folder=folder)


def ud_recipe(spec: str) -> Recipe:
    """The recipe for ``ud:Language-Name[@release][/task]``: a registered one where the name
    and release are the registry's, else one over the treebank's files as its release ships
    them (found here, or fetched at build time)."""
    corpus_spec, _, task = spec.partition("/")
    task = task or DEFAULT_TASK
    if task not in task_names():
        raise UserError(f"unknown task {task!r} in {spec!r}: write ud:Language-Name[@release]/TASK, "
                        f"TASK one of {', '.join(task_names())}")
    corpus = ud_corpus(corpus_spec)   # a malformed name: one line
    if corpus.files:   # pinned by the registry: its recipe, when it has one for this task
        table = _table()
        name = f"ud:{corpus.ud[0]}/{task}"
        if name in table:
            return table[name]
    treebank, ref = corpus.ud
    name = f"ud:{treebank}/{task}" if corpus.files else f"ud:{treebank}@{ref}/{task}"
    return Recipe(name, task, corpus.name,
                  f"{task}, UD {treebank} at {ref} (train; dev selects the epoch; scored on test)",
                  {"seed": 0}, language=treebank.split("-", 1)[0])


def _ud_here(corpus_name: str):
    """The folder of an unpinned UD treebank in the data folders: ``ud-NAME@RELEASE``, or for
    the default release also ``ud-NAME`` (a treebank a user or ``$STRUCTKIT_DATA`` holds
    without naming its release); None when neither is here."""
    corpus = get_corpus(corpus_name)
    treebank, ref = corpus.ud
    names = [ud_folder(treebank, ref)]
    if ref == UD_DEFAULT_RELEASE:
        names.append(ud_folder(treebank, ref, pinned=True))
    for d in search_dirs():
        for name in names:
            folder = d / name
            if folder.is_dir() and any(UD_FILE.match(p.name) for p in folder.iterdir()):
                return folder
    return None


def training_paths(recipe: Recipe, paths: dict[str, str], train_on: str = "train") -> dict[str, str]:
    """The files to train, select and score on: ``train_on="dev"`` trains on the dev file (and
    selects nothing); a treebank without a dev file trains without selection; one without a
    training file is one line pointing at ``--train-on dev``."""
    if train_on == "dev":
        if "dev" not in paths:
            raise UserError(f"{recipe.name}: --train-on dev, but the treebank has no dev file")
        return {"train": paths["dev"], **({"test": paths["test"]} if "test" in paths else {})}
    if "train" not in paths:
        raise UserError(f"{recipe.name}: the treebank has no training file"
                        + ("; --train-on dev trains on its dev file (with no epoch selection)"
                           if "dev" in paths else ""))
    return paths


def treebank_facts(recipe: Recipe, paths: dict[str, str], train_on: str) -> dict[str, Any]:
    """What a card says of the treebank a recipe built from: its name, release or folder, the
    split trained on, and one sha256 over its files (each file's name and sha256, a line each,
    sorted)."""
    lines = sorted(f"{os.path.basename(p)}\t{sha256_file(Path(p))}\n" for p in dict.fromkeys(paths.values()))
    facts: dict[str, Any] = {"name": recipe.name.partition("/")[0], "trained_on": train_on,
                             "built_from": "folder" if recipe.folder is not None else "name",
                             "files_sha256": hashlib.sha256("".join(lines).encode()).hexdigest()}
    corpus = get_corpus(recipe.corpus) if recipe.corpus else None
    folder = os.path.dirname(os.path.abspath(next(iter(paths.values()))))
    if corpus is not None and corpus.ud is not None and (corpus.files or "@" in os.path.basename(folder)):
        facts["release"] = corpus.ud[1]   # pinned by the registry, or fetched at that release
    else:   # a folder the user named, or one that does not say its release
        facts["folder"] = recipe.folder or folder
    return facts


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
    if recipe.folder is not None:
        return dict(recipe.files)
    if recipe.corpus and not get_corpus(recipe.corpus).files:   # a UD treebank the registry does not pin
        here = _ud_here(recipe.corpus)
        return treebank_files(str(here)) if here is not None else {}
    out = _corpus_files(recipe) if recipe.corpus else {}
    out.update(recipe.files)
    if "train" not in out:
        raise UserError(f"recipe {recipe.name}: {recipe.corpus} has no training file")
    return out


def status(recipe: Recipe) -> str:
    """'here' when every file of the recipe is found, else what is missing."""

    paths = files(recipe)
    missing = [p for p in paths.values() if not os.path.isabs(p) and find(p) is None]
    if not paths:
        missing = [recipe.corpus or recipe.name]
    return "here" if not missing else f"needs `structkit data fetch {recipe.corpus}`" if recipe.corpus \
        else f"missing {', '.join(missing)}"


def local_files(recipe: Recipe, folder: str) -> dict[str, str]:
    """split -> the recipe's files in ``folder`` (a treebank as its release ships it, e.g. a UD
    release's ``UD_Italian-ParTUT/``), by their file names; a missing one is one line."""
    if not os.path.isdir(folder):
        raise UserError("--from is a folder holding the corpus's files", folder)
    if recipe.folder is not None or (recipe.corpus and not get_corpus(recipe.corpus).files):
        return treebank_files(folder)   # a treebank the registry does not pin: its files as named
    out = {}
    for split, rel in files(recipe).items():
        path = os.path.join(folder, os.path.basename(rel))
        if not os.path.isfile(path):
            raise UserError(f"recipe {recipe.name}: no {split} file {os.path.basename(rel)} in this folder",
                            folder)
        out[split] = path
    return out


def source_paths(recipe: Recipe, fetch: bool = True, progress: bool = False, say=None,
                 source: str | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """split -> the recipe's files, resolved, and as the recipe names them: from ``source`` (a
    folder holding them, nothing fetched), from the data folders, or fetched first (``fetch``;
    else a missing corpus is one line)."""
    if source is not None:
        paths = local_files(recipe, source)
        return paths, paths
    paths = files(recipe)
    missing = not paths or any(not os.path.isabs(p) and find(p) is None for p in paths.values())
    if missing:
        if not (fetch and recipe.corpus):
            raise UserError(f"recipe {recipe.name}: {status(recipe)} (or --from DIR, a folder with its files)")
        got = fetch_corpus(recipe.corpus, progress=progress, say=say or (lambda m: None))
        paths = files(recipe) if get_corpus(recipe.corpus).files else treebank_files(str(got.where[0]))
    return {k: resolve_data_path(p, must_exist=True) for k, p in paths.items()}, paths


def build(recipe: Recipe, output: str, fetch: bool = True, progress: bool = False,
          on_epoch=None, say=None, source: str | None = None, train_on: str = "train",
          card_beside: bool = False) -> tuple[Any, dict]:
    """Train the recipe's model and write it to ``output`` with its card; returns
    ``(model, card)``. A corpus not found is fetched first (``fetch``), or is one line;
    ``source``: a folder that holds its files, used as they are (nothing fetched);
    ``train_on="dev"``: train on the dev file (:func:`training_paths`); ``card_beside``: also
    write the card as JSON to ``output.card.json``, renamed into place with the model."""
    resolved, given = source_paths(recipe, fetch, progress, say, source)
    resolved = training_paths(recipe, resolved, train_on)
    if train_on == "dev":
        given = {"train": given["dev"], **({"test": given["test"]} if "test" in given else {})}
    if say is not None:
        say(f"{recipe.name}: training {recipe.task} on {given['train']}"
            + (" (the dev file: --train-on dev)" if train_on == "dev" else "")
            + ("" if "dev" in resolved else "; no dev file, so no epoch selection"))
    check_outputs([output], list(resolved.values()))
    check_writable(output, "--output")
    task = get_task(recipe.task)
    values: dict[str, Any] = {"task": recipe.task, **recipe.options}
    if values.get("algo") is None:
        algo = task.training.choose_algo(resolved["train"])
        if algo is not None:
            values["algo"] = algo
    config = make_config(values)
    facts: dict[str, Any] = {"name": recipe.name, "options": dict(recipe.options)}
    if recipe.folder is not None or train_on != "train" or (recipe.corpus and get_corpus(recipe.corpus).ud):
        facts["treebank"] = treebank_facts(recipe, resolved, train_on)
    model, card = cards.train(task, config, resolved["train"], resolved.get("dev"), resolved.get("test"),
                              on_epoch, given=given, recipe=facts)
    writes = [(output, lambda tmp: cards.save(model, tmp, card))]
    if card_beside:   # the card as JSON beside the model, renamed into place with it
        writes.append((output + ".card.json", lambda tmp: _write_json(tmp, card)))
    commit_together(writes)
    return model, card


def _write_json(path: str, obj: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, sort_keys=True, indent=1) + "\n")
