"""A pipeline model: a tokenizer, a morphological tagger and lemmatizer and a parser in one
file (each optional), with the tag sets each part gives and reads (``structkit.tagsets``).

The file is a structkit model file (``structkit.model``: one archive, a JSON header, a checksum)
whose arrays are the parts' own model files, byte for byte (``part_tokenize``, ``part_morph``,
``part_parse``). Each part is therefore loaded by its own task's loader, with all of that
loader's checks, and a part never needs a second file format. The header holds the config, the
parts' facts (tag sets, training facts) and the jackknife comparison.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from structkit.errors import UserError
from structkit.io.files import temporary_folder, temporary_writes
from structkit.learn import registry
from structkit.learn.selection import header_config
from structkit.model import load_model, save_model, verified_parts
from structkit.tagsets import check_chain, morph_facts, parser_facts
from structkit.tasks import get_task
from structkit.vectors import check_options as check_vector_options

PARTS = ("tokenize", "morph", "parse")
JACKKNIFE = ("auto", "yes", "no")


@dataclass
class PipelineConfig:
    """A pipeline training run (stored in the model header). ``parts``: which of
    tokenize, morph, parse to train; ``folds``: k of the jackknife over the training file;
    ``jackknife``: train the parser on jackknifed predicted morphology ("yes"), on gold ("no"),
    or both and keep what dev prefers ("auto"; without --dev: gold, which won both runs of results/parse-jackknife.md); ``epochs``: every part's
    (None: each part's learner's own default)."""

    task: str = "pipeline"
    algo: str = "none"
    epochs: int | None = None
    seed: int = 0
    folds: int = 5
    parts: list[str] | str | None = None
    jackknife: str = "auto"
    vectors: str | None = None          # a .vec file: its words' clusters become morph and parser features
    vectors_limit: int | None = None    # how many of its words (None: vectors.DEFAULT_LIMIT)

    def validate(self) -> None:
        self.vectors, self.vectors_limit = check_vector_options(self.vectors, self.vectors_limit)
        if self.algo != "none":
            raise UserError(f"--algo does not apply to --task pipeline: each part is trained with its "
                            f"own default learner (got {self.algo!r})")
        self.seed = registry.SEED.check(self.seed)
        if self.epochs is not None:
            self.epochs = registry.EPOCHS.check(self.epochs)
        if type(self.folds) is not int or not 2 <= self.folds <= 20:
            raise UserError(f"folds (the jackknife's k) must be an integer in 2..20, got {self.folds!r}")
        parts = self.parts if self.parts is not None else list(PARTS)
        if isinstance(parts, str):
            parts = [p.strip() for p in parts.split(",") if p.strip()]
        if not isinstance(parts, list) or not parts or any(p not in PARTS for p in parts) \
                or len(set(parts)) != len(parts):
            raise UserError(f"parts must be a non-empty list of {', '.join(PARTS)}, got {self.parts!r}")
        self.parts = [p for p in PARTS if p in parts]
        if self.jackknife not in JACKKNIFE:
            raise UserError(f"jackknife must be {', '.join(JACKKNIFE)}, got {self.jackknife!r}")


@dataclass
class PipelineModel:
    """The loaded parts (None where absent), the config, and the header's facts."""

    config: PipelineConfig
    tokenizer: Any = None        # structkit.tokenizer.task.TokenizerModel
    morph: Any = None            # structkit.morph.task.MorphModel
    parser: Any = None           # a parser of structkit.parse
    info: dict = field(default_factory=dict)
    task = "pipeline"

    @property
    def labels(self) -> list[str]:
        return list(self.parser.labels) if self.parser is not None and hasattr(self.parser, "labels") else []

    def parts(self) -> dict[str, Any]:
        return {k: v for k, v in (("tokenize", self.tokenizer), ("morph", self.morph), ("parse", self.parser))
                if v is not None}

    def components(self, path: str | None = None, beam: int | None = None) -> list:
        """The parts as pipeline components (``structkit.components``), in order, each made by
        its task; a part is named as the file's part (``it.skm:parse``)."""

        out: list = []
        for name, part in self.parts().items():
            out += get_task(name).components(part, f"{path}:{name}" if path else None, beam=beam)
        return out

    def facts(self) -> dict:
        """What each part gives or reads (``structkit.tagsets``)."""

        out: dict = {}
        if self.morph is not None:
            out["morph"] = morph_facts(self.morph)
        if self.parser is not None:
            out["parse"] = parser_facts(self.parser)
        return out

    def check(self, path: str = "the pipeline") -> None:
        """Refuse a pipeline whose parts do not fit together (one line)."""

        f = self.facts()
        if "parse" in f and "morph" in f:
            check_chain(f["morph"], f["parse"], f"the morph model of {path}", "its parser")

    def save(self, path: str) -> None:
        from dataclasses import asdict

        arrays = {}
        with temporary_folder("structkit-pipeline-") as tmp:
            for name, part in self.parts().items():
                p = os.path.join(tmp, name + ".model")
                with temporary_writes(tmp):
                    part.save(p)
                with open(p, "rb") as f:
                    arrays["part_" + name] = np.frombuffer(f.read(), dtype=np.uint8)
        header = {"task": "pipeline", "config": header_config(asdict(self.config)), "info": self.info,
                  "parts": sorted(self.parts()), "facts": self.facts()}
        save_model(path, header, arrays)

    @classmethod
    def load(cls, path: str, command: str | None = None, tasks: tuple[str, ...] | None = None) -> "PipelineModel":
        header, arrays = load_model(path, tasks or ("pipeline",), command, limits=_limits)
        try:
            c = header["config"]
            config = PipelineConfig(**c)
            config.validate()
        except (KeyError, TypeError) as e:
            raise UserError(f"damaged model file: {str(e)[:200]}", path) from None
        except UserError as e:
            raise UserError(f"damaged model file: {e.message}", path) from None
        names = header.get("parts")
        if not isinstance(names, list) or set(names) - set(PARTS) or set(arrays) != {"part_" + n for n in names}:
            raise UserError("damaged model file: its parts do not match its header", path)
        # each part is read from the pipeline file's bytes (verified by its checksum), by its
        # own task's loader, under a name that says which part it is
        names_of = {name: f"{path} ({name} part)" for name in names}
        loaded = {}
        with verified_parts({names_of[n]: memoryview(arrays["part_" + n]) for n in names}):
            for name in names:
                try:
                    loaded[name] = _loader(name)(names_of[name])
                except UserError as e:
                    raise UserError(f"damaged model file: its {name} part: {e.message}", path) from None
        _share_clusters(loaded.get("morph"), loaded.get("parse"))
        info = header.get("info") if isinstance(header.get("info"), dict) else {}
        return cls(config, loaded.get("tokenize"), loaded.get("morph"), loaded.get("parse"), info)


def _share_clusters(morph, parse) -> None:
    """A pipeline trained with --vectors holds the word-cluster table in both its morph and its
    parse part (each part is a model file of its own). Where the two are the same table, the
    parser is given the morph model's: one copy in memory, and one trigram index and one cache of
    look-ups for the words the table lacks (``WordClusters.nearest``: built once, not twice)."""
    a = getattr(getattr(morph, "tables", None), "clusters", None)
    b = getattr(parse, "clusters", None)
    if a is not None and b is not None and a is not b and a.levels == b.levels \
            and a.source == b.source and a.ids.shape == b.ids.shape and np.array_equal(a.ids, b.ids) \
            and a.words == b.words:
        parse.clusters = a


def _loader(name: str):
    task = get_task(name)
    return lambda p: task.load(p, tasks=(name,))


def _limits(header: dict, shapes: dict) -> None:
    for name, (dtype, shape) in shapes.items():
        if not name.startswith("part_") or name[5:] not in PARTS or dtype != np.uint8 or len(shape) != 1:
            raise ValueError(f"array {name[:40]} is not a pipeline part")


def load_pipeline(path: str, command: str | None = None) -> PipelineModel:
    """The pipeline model in ``path`` (UserError naming the file for anything wrong)."""
    return PipelineModel.load(path, command)
