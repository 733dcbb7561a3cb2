"""The morph task: a morphological tagger (UPOS, XPOS and FEATS as one joint tag) and a
lemmatizer, trained together from a UD treebank into one model file.

Tagger: an averaged structured perceptron over hashed weights (``structkit.lattice.kernels``),
first-order Viterbi over each sentence's lattice of candidate tags. The candidates of a word
are the tags the training data gives its form (the tag dictionary), else the tags of the words
that share its suffixes, its lower-cased form, its class (numbers, punctuation), at most
``MAX_CANDIDATES``. Training sees the dictionary as new text does: built over 5 folds, each
fold's words looked up in the other four (jackknifing), so that the unknown-word candidates and
ambiguity classes the model learns from are those it meets later. Lemmatizer: a multiclass
averaged perceptron over edit rules (``structkit.lattice.rules``), the candidates those seen with
the form, else with its suffixes, plus identity and lower-casing; its features are the word's,
the predicted tag's (in training, the tags the tagger gave in the same epoch) and whether the
rule makes a lemma seen in training. With ``--dev`` the epoch with the best AllTags (all FEATS) +
Lemmas is kept: AllTags over UPOS, XPOS and every FEATS key (``alltags_full`` of
``structkit.morph.evaluate``, all of which the tagger predicts), not the CoNLL 2018 AllTags
(universal features only).
"""
from __future__ import annotations

import itertools

import time
from dataclasses import dataclass

import numpy as np

from structkit.errors import UserError
from structkit.io.conllu import read_conllu
from structkit.io.files import display_name
from structkit.lattice import kernels as K
from structkit.lattice.features import (
    TypeTable,
    check_layout,
    cluster_features,
    cluster_lemma_features,
    cluster_templates,
    hide_unknown,
    layout,
    lemma_features,
    tag_features,
    value,
)
from structkit.lattice.kernels import classify, tag_corpus
from structkit.lattice.lexicon import Lexicon, PackedCounts, base_rules
from structkit.lattice.rules import applies, apply_rule, make_rule, parse_rule, rule_text
from structkit.learn import registry, selection
from structkit.learn.loop import hold_out, refit, run_epochs, train_counts, wants_refit
from structkit.model import dense_array, load_model, save_model, sparse_arrays
from structkit.morph.evaluate import score_rows
from structkit.vectors import WordClusters, clusters_of_config, vector_bounds
from structkit.vectors import check_options as check_vector_options

LEMMA_BITS_LESS = 1       # the lemmatizer's table: 2^(bits - 1)
MAX_CANDIDATES = 20
FOLDS = 5


@dataclass
class MorphConfig:
    task: str = "morph"
    algo: str = "perceptron"
    epochs: int | None = None
    seed: int = 0
    hash_bits: int | None = None
    dev_split: float | None = None
    patience: int | None = None
    refit: bool = True
    vectors: str | None = None          # a .vec file: its words' clusters become features
    vectors_limit: int | None = None    # how many of its words (None: vectors.DEFAULT_LIMIT)

    def validate(self) -> None:
        self.vectors, self.vectors_limit = check_vector_options(self.vectors, self.vectors_limit)
        spec = registry.get(self.algo, "morph")
        self.epochs = registry.EPOCHS.check(spec.epochs if self.epochs is None else self.epochs)
        self.seed = registry.SEED.check(self.seed)
        self.hash_bits = registry.PARAMS["hash_bits"].check(spec.param("hash_bits").default
                                                            if self.hash_bits is None else self.hash_bits)
        self.dev_split = selection.check_dev_split(self.dev_split)
        self.patience = selection.check_patience(self.patience)
        self.refit = selection.check_refit(self.refit)


def tag_of(row: list[str]) -> str:
    """The joint tag of a CoNLL-U word row: UPOS, XPOS and FEATS, tab-separated."""
    return f"{row[3]}\t{row[4]}\t{row[5]}"


def tag_parts(tag: str) -> list[str]:
    """What a tag's weights are shared by: the full tag, its UPOS, its XPOS, each feature."""
    upos, xpos, feats = tag.split("\t")
    return (["T:" + tag, "U:" + upos, "X:" + xpos]
            + (["F:" + f for f in feats.split("|")] if feats != "_" else []))


class Tables:
    """The ids of tags, their parts and rules; the lexicon; and the arrays the kernels read."""

    def __init__(self, tags: list[str], rules: list[str], lexicon: Lexicon, clusters: WordClusters | None = None):
        self.tags, self.rules, self.lexicon = tags, rules, lexicon
        self.clusters = clusters    # word clusters of pretrained vectors (features), or None
        self.tag_id = {t: i for i, t in enumerate(tags)}
        self.rule_id = {r: i for i, r in enumerate(rules)}
        self.rule_objs = [parse_rule(r) for r in rules]
        part_id: dict[str, int] = {}
        ptr, parts = [0], []
        for t in tags:
            for p in tag_parts(t):
                parts.append(part_id.setdefault(p, len(part_id)))
            ptr.append(len(parts))
        self.parts_ptr = np.array(ptr, dtype=np.int64)
        self.parts = np.array(parts, dtype=np.int64)
        self.tag_vals = np.array([value("tag", t) for t in tags], dtype=np.uint64)
        self.upos_vals = np.array([value("upos", t.split("\t")[0]) for t in tags], dtype=np.uint64)

    def rule(self, r: int):
        return self.rule_objs[r]

    @property
    def n_cluster_cols(self) -> int:
        """How many columns at the end of the tagger's features are word clusters (0 without vectors)."""
        return 0 if self.clusters is None else len(cluster_templates(self.clusters.levels))

    def lemma_features(self, feats: np.ndarray, tags: np.ndarray) -> np.ndarray:
        """The lemmatizer's features of tokens with tagger features ``feats`` and tags ``tags``."""
        lf = lemma_features(feats, self.tag_vals[tags], self.upos_vals[tags])
        if self.clusters is None:
            return lf
        extra = cluster_lemma_features(feats[:, feats.shape[1] - self.n_cluster_cols:], self.clusters.levels,
                                       self.upos_vals[tags])
        return np.ascontiguousarray(np.hstack([lf, extra]))

    def lemma(self, r: int, surface: str) -> str:
        """The lemma rule ``r`` makes of a word analysed as ``surface`` (``Encoded.surfaces``). A
        word in capitals is edited lower-cased when the rule adds letters (``GRIDAVANO`` ->
        ``gridare``, not ``GRIDAre``); kept as it is otherwise (``IVA``)."""
        rule = self.rule_objs[r]
        lemma = apply_rule(rule, surface)
        if surface.isupper() and lemma != surface and not lemma.isupper() and applies(rule, surface.lower()):
            return apply_rule(rule, surface.lower())
        return lemma


@dataclass
class Encoded:
    """A corpus for the kernels: sentences, feature rows and candidates (tags, rules)."""

    sent_ptr: np.ndarray
    tids: np.ndarray
    feats: np.ndarray
    cand_ptr: np.ndarray
    cands: np.ndarray
    rule_ptr: np.ndarray
    rule_cands: np.ndarray
    rule_feats: np.ndarray    # per rule candidate: ``_lemma_feat`` (KNOWN_LEMMA, VECTORS_LEMMA, NOT_IN_VECTORS or 0)
    known: np.ndarray         # per token: the form is in the (jackknifed) dictionary
    types: TypeTable
    surfaces: list            # per token: the word its lemma rule edits (``_views``)


def _csr(lists) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(ptr[-1]))
    return ptr, flat


def _amb(cands: list[int], known: bool) -> int:
    return value("amb", ("K" + ",".join(map(str, sorted(cands)))) if known
                 else ("U" + ",".join(map(str, cands[:3]))))


KNOWN_LEMMA = value("lemma", "known")
VECTORS_LEMMA = value("lemma", "vectors")
NOT_IN_VECTORS = value("lemma", "not-in-vectors")


def _lemma_feat(lex: Lexicon, tables: Tables, rule: int, form: str) -> int:
    """A lemma candidate's own feature: KNOWN_LEMMA when the lemma it makes was seen in training
    (lower-cased). Else, in a model trained with vectors, and where the lemma is not the form
    itself (which, written, is a word anyway): VECTORS_LEMMA when it is a word of the vectors
    file (as made, or lower-cased), NOT_IN_VECTORS when not, which most wrong edits of an unseen
    form are (``giornata`` -> ``giornare``). Else 0."""
    lemma = apply_rule(tables.rule(rule), form)
    low = lemma.lower()
    if low in lex.lemmas:
        return KNOWN_LEMMA
    if tables.clusters is None or low == form.lower():
        return 0
    words = tables.clusters.index
    return VECTORS_LEMMA if lemma in words or low in words else NOT_IN_VECTORS


def _views(lex: Lexicon, sentence: list[str]) -> list[str]:
    """The word each form of ``sentence`` is analysed as: a word in capitals as the casing of it
    training saw (``Lexicon.surface``: ``IL`` -> ``il``); in a sentence written in capitals (every
    cased word upper-case, two or more, and at least half of the words with letters: two Latin
    acronyms in a Chinese sentence are not shouting), capitals say nothing, and a word training never saw in
    any casing is read lower-cased there (``MIM`` -> ``mim``), where alone in ordinary text it
    stays as it is (an acronym: ``IVA``). Other forms are analysed as written: whether a treebank
    lower-cases the lemma of a capitalised word (``Uomini``) differs (Italian does, Vietnamese
    does not), and the lemma rules learnt from its capitalised words decide it."""
    out = [lex.surface(f) if f.isupper() else f for f in sentence]
    cased = [f for f in sentence if f.lower() != f.upper()]
    letters = sum(1 for f in sentence if any(c.isalpha() for c in f))
    if len(cased) >= 2 and 2 * len(cased) >= letters and all(f.isupper() for f in cased):
        out = [v.lower() if v.isupper() and v not in lex.form_rules else v for v in out]
    return out


def _lookups(lex: Lexicon, tables: Tables, form: str, surface: str, cache: dict):
    got = cache.get((form, surface))
    if got is None:
        tags, known = lex.tags(form)
        rules = lex.rules(surface, tables.rule)
        if not known or not rules:
            rules = list(dict.fromkeys(rules + [r for r in (0, 1) if r not in rules
                                                 and (r == 0 or surface.lower() != surface)]))
        rfeats = [_lemma_feat(lex, tables, r, surface) for r in rules]
        got = cache[form, surface] = (tags, known, rules, rfeats, _amb(tags, known))
    return got


def encode(sentences: list[list[str]], tables: Tables, lexicons, types: TypeTable,
           gold_tags=None, gold_rules=None, caches: dict[int, dict] | None = None) -> Encoded:
    """Encode sentences of forms; ``lexicons(k)`` looks up sentence k's words (the jackknifed
    lexicon of its fold in training, else the full one). With gold ids (training) the gold tag
    and rule are added to the candidates where missing, and the words are read as written;
    otherwise as ``_views`` reads them (words in capitals as the casing training saw).
    ``caches``: each lexicon's look-ups by ``id(lexicon)``, kept by the caller between calls."""
    forms = [f for s in sentences for f in s]
    sent_ptr = np.zeros(len(sentences) + 1, dtype=np.int64)
    sent_ptr[1:] = np.cumsum([len(s) for s in sentences])
    tag_lists, rule_lists, feat_lists = [], [], []
    amb, known_ = np.empty(len(forms), dtype=np.uint64), np.zeros(len(forms), dtype=bool)
    caches = {} if caches is None else caches
    i = 0
    views, surfaces = [], []
    for k, s in enumerate(sentences):
        lex = lexicons(k)
        cache = caches.setdefault(id(lex), {})
        # training reads its words as written: read as _views reads them, Italian ParTUT's
        # test lost 0.28 UPOS and 0.13 Lemmas (its headings in capitals are tagged apart)
        for form, surface in zip(s, _views(lex, s) if gold_tags is None else s):
            form = surface if form.isupper() else form
            views.append(form)
            surfaces.append(surface)
            tags, known, rules, rfeats, a = _lookups(lex, tables, form, surface, cache)
            if gold_tags is not None and gold_tags[i] not in tags:
                tags = tags + [int(gold_tags[i])]
            if gold_rules is not None and gold_rules[i] not in rules:
                rules = rules + [int(gold_rules[i])]
                rfeats = rfeats + [_lemma_feat(lex, tables, int(gold_rules[i]), surface)]
            tag_lists.append(tags)
            rule_lists.append(rules)
            feat_lists.append(rfeats)
            amb[i], known_[i] = a, known
            i += 1
    tids = types.ids(views)
    cand_ptr, cands = _csr(tag_lists)
    rule_ptr, rule_cands = _csr(rule_lists)
    rule_feats = np.fromiter(itertools.chain.from_iterable(feat_lists), dtype=np.uint64, count=rule_cands.size)
    feats = tag_features(types, tids, sent_ptr, amb)
    hide_unknown(feats, known_)
    if tables.clusters is not None:   # after every other column: without vectors, the same features
        feats = np.ascontiguousarray(np.hstack([feats, cluster_features(tables.clusters, views, sent_ptr)]))
    return Encoded(sent_ptr, tids, feats, cand_ptr, cands, rule_ptr, rule_cands, rule_feats, known_, types,
                   surfaces)


# How many word types a loaded model keeps the look-ups and feature values of between calls
# (``nlp.pipe``, ``annotate``'s blocks, the server's requests); past it they are forgotten, so
# the memory stays bounded whatever the text.
KEPT_TYPES = 1 << 17


def _kept(cache: dict) -> dict:
    if len(cache) > KEPT_TYPES:
        cache.clear()
    return cache


class MorphModel:
    """A trained tagger and lemmatizer: weights, tables, lexicon and the header facts."""

    task = "morph"

    def __init__(self, config: MorphConfig, tables: Tables, W_tag: np.ndarray, W_lem: np.ndarray, info: dict):
        self.config, self.tables, self.info = config, tables, info
        self.W_tag, self.W_lem = W_tag, W_lem
        self.labels = tables.tags
        # what analysis computes per word type, kept between calls (see ``_kept``)
        self._lookups: dict = {}
        self._type_values: dict = {}
        self._lemmas: dict = {}       # (rule id, surface) -> lemma
        self._columns = [tuple(t.split("\t")) for t in tables.tags]   # tag id -> (upos, xpos, feats)

    # ---- running ----
    def predict_ids(self, sentences: list[list[str]], enc: Encoded | None = None,
                    weights=None) -> tuple[np.ndarray, np.ndarray, Encoded]:
        """Tag ids and rule ids of every word of ``sentences`` (lists of forms)."""

        W_tag, W_lem = weights if weights is not None else (self.W_tag, self.W_lem)
        t = self.tables
        if enc is None:
            enc = encode(sentences, t, lambda k: t.lexicon, TypeTable(_kept(self._type_values)),
                         caches={id(t.lexicon): _kept(self._lookups)})
        tags = np.zeros(enc.tids.shape[0], dtype=np.int64)
        if tags.size:
            tag_corpus(W_tag, enc.feats, enc.sent_ptr, enc.cand_ptr, enc.cands, t.parts_ptr, t.parts, tags)
        rules = np.zeros_like(tags)
        if tags.size:
            lf = t.lemma_features(enc.feats, tags)
            classify(W_lem, lf, enc.rule_ptr, enc.rule_cands, enc.rule_feats, rules)
        return tags, rules, enc

    def analyse(self, sentences: list[list[str]]) -> list[list[tuple[str, str, str, str]]]:
        """(lemma, upos, xpos, feats) of every word of every sentence (lists of forms)."""
        tags, rules, enc = self.predict_ids(sentences)
        columns, lemma, lemmas = self._columns, self.tables.lemma, _kept(self._lemmas)
        out, i = [], 0
        for s, (a, b) in zip(sentences, itertools.pairwise(enc.sent_ptr.tolist())):
            row = []
            for t, key in zip(tags[a:b].tolist(), zip(rules[a:b].tolist(), enc.surfaces[a:b])):
                lem = lemmas.get(key)
                if lem is None:
                    lem = lemmas[key] = lemma(*key)
                row.append((lem, *columns[t]))
            out.append(row)
        return out

    # ---- the model file ----
    def save(self, path: str) -> None:
        lex = self.tables.lexicon

        arrays = {**sparse_arrays("W_tag", self.W_tag), **sparse_arrays("W_lem", self.W_lem)}

        def flat(name, d):
            """The keys of ``d`` for the header, sorted (the order format 3's JSON object had);
            their [id, count, ...] lists as two arrays."""
            keys = sorted(d)
            lists = [[x for kv in sorted(d[k].items()) for x in kv] for k in keys]
            ptr = np.zeros(len(lists) + 1, dtype=np.int64)
            np.cumsum([len(v) for v in lists], out=ptr[1:])
            pairs = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(ptr[-1]))
            small = ptr[-1] < 1 << 31 and (not len(pairs) or pairs.max() < 1 << 31)
            arrays[f"lex_{name}_ptr"] = ptr.astype(np.int32) if small else ptr
            arrays[f"lex_{name}_pairs"] = pairs.astype(np.int32) if small else pairs
            return keys

        clusters = self.tables.clusters
        header = {"task": "morph", "config": selection.header_config(vars(self.config)), "info": self.info,
                  "layout": layout(None if clusters is None else clusters.levels),
                  "tags": self.tables.tags, "rules": self.tables.rules, "bits": int(self.W_tag.size).bit_length() - 1,
                  "lemma_bits": int(self.W_lem.size).bit_length() - 1,
                  "lexicon": {"cap": lex.cap, **{name: flat(name, getattr(lex, name)) for name in COUNTS},
                              "lemmas": sorted(lex.lemmas),
                              "all_tags": [x for kv in sorted(lex.all_tags.items()) for x in kv]}}
        if clusters is not None:
            header["vectors"] = clusters.header()
            arrays |= clusters.arrays()
        save_model(path, header, arrays)

    @classmethod
    def load(cls, path: str, command: str | None = None, tasks: tuple[str, ...] | None = None) -> "MorphModel":
        from collections import Counter, defaultdict

        header, arrays = load_model(path, tasks or ("morph",), command, limits=_limits)

        check_layout(header, path)
        try:
            config = MorphConfig(**header["config"])
            tags, rules = header["tags"], header["rules"]
            if not all(isinstance(t, str) and t.count("\t") == 2 for t in tags) or not tags:
                raise ValueError("bad tag list")
            lx = header["lexicon"]
            lex = Lexicon(int(lx["cap"]))

            def counters(d, n, name=None):
                # plain dicts, not Counters: analysis only reads them, and a Counter each (tens of
                # thousands of forms and suffixes) took a quarter of the loading time; each made
                # when first read, as the ids are checked here all at once
                if isinstance(d, list):    # format 4: the keys, their lists in two arrays
                    return _packed_counts(d, arrays, name, n)
                if _ids_in_range(d, n):
                    return PackedCounts(d)
                out = defaultdict(Counter)
                for k, v in d.items():   # checked one by one, which says what is wrong
                    ids = v[::2]
                    if ids and (min(ids) < 0 or max(ids) >= n):
                        raise ValueError("lexicon ids out of range")
                    out[k] = dict(zip(ids, v[1::2]))
                return out

            for name in COUNTS:
                setattr(lex, name, counters(lx[name], len(rules if name.endswith("_rules") else tags), name))
            lex.all_tags = counters({"": lx["all_tags"]}, len(tags))[""]
            lex.lemmas = set(lx["lemmas"])
            tables = Tables(tags, rules, lex, WordClusters.from_model(header.get("vectors"), arrays))
            if "W_tag" in arrays:   # format versions 1 and 2: the tables whole
                W_tag, W_lem = arrays["W_tag"], arrays["W_lem"]
            else:
                W_tag = dense_array("W_tag", arrays, (1 << header["bits"],))
                W_lem = dense_array("W_lem", arrays, (1 << header["lemma_bits"],))
            if W_tag.shape != (1 << header["bits"],) or W_lem.shape != (1 << header["lemma_bits"],):
                raise ValueError("array shapes do not fit the header")
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise UserError(f"damaged model file: {str(e)[:200]}", path) from None
        return cls(config, tables, W_tag, W_lem, header.get("info", {}))


# the lexicon's counts by key, each a table of a model file (format 4: its keys in the header,
# their [id, count, ...] lists in the arrays lex_NAME_ptr and lex_NAME_pairs)
COUNTS = ("form_tags", "form_rules", "suffix_tags", "suffix_rules", "class_tags")
MAX_LEXICON = 1 << 28     # elements of one of those arrays a model file may hold


def _packed_counts(keys: list, arrays: dict, name: str, n: int) -> PackedCounts:
    """The counts table ``name`` of a format 4 file (ValueError where the arrays are not what
    ``save`` writes: keys not distinct strings, offsets not rising in steps of whole pairs
    from 0 to the end, ids outside 0..n-1)."""
    ptr, pairs = arrays[f"lex_{name}_ptr"], arrays[f"lex_{name}_pairs"]
    if not isinstance(keys, list) or not set(map(type, keys)) <= {str} or len(set(keys)) != len(keys):
        raise ValueError(f"lexicon {name}: keys are not distinct strings")
    if ptr.ndim != 1 or pairs.ndim != 1 or ptr.dtype.kind not in "iu" or pairs.dtype.kind not in "iu" \
            or len(ptr) != len(keys) + 1 or ptr[0] != 0 or ptr[-1] != len(pairs) \
            or np.any(np.diff(ptr) < 0) or np.any(ptr % 2):
        raise ValueError(f"lexicon {name}: offsets are inconsistent")
    ids = pairs[0::2]
    if len(ids) and (ids.min() < 0 or ids.max() >= n):
        raise ValueError("lexicon ids out of range")
    return PackedCounts.from_arrays(keys, ptr, pairs)


def _ids_in_range(d: dict, n: int) -> bool:
    """Whether every value of ``d`` is a list of integers [id, count, id, count, ...] whose ids
    are in 0..n-1, checked at once by numpy (False: anything else, left to the loader's check
    of each list)."""
    from itertools import chain

    try:
        if not all(type(v) is list and len(v) % 2 == 0 for v in d.values()):
            return False
        a = np.array(list(chain.from_iterable(d.values())))
        if a.ndim != 1 or a.dtype.kind not in "iub":
            return False
        ids = a[0::2]
        return not len(ids) or bool(ids.min() >= 0 and ids.max() < n)
    except Exception:  # noqa: BLE001 -- anything unusual: the loop says what is wrong
        return False


def _limits(header: dict, shapes: dict) -> None:
    for key in ("bits", "lemma_bits"):
        b = header.get(key)
        if type(b) is not int or not 10 <= b <= 28:
            raise ValueError(f"bad hash size {b!r}")
    bounds = {"W_tag": 1 << header["bits"], "W_lem": 1 << header["lemma_bits"]}
    bounds.update({k + end: n for k, n in list(bounds.items()) for end in ("_index", "_gaps", "_vals")})
    bounds |= {f"lex_{name}_{end}": MAX_LEXICON for name in COUNTS for end in ("ptr", "pairs")}
    bounds |= vector_bounds(header)
    for name, (_, shape) in shapes.items():
        if int(np.prod(shape)) > bounds.get(name, 0):
            raise ValueError(f"array {name} does not fit the header")


# ---- reading --------------------------------------------------------------------------------------
def read_treebank(path: str):
    """Sentences of a CoNLL-U file as (forms, rows)."""

    return [s for s in read_conllu(path, check_text=False)]


def _score(tables: Tables, sentences, tags: np.ndarray, rules: np.ndarray, surfaces: list) -> dict:
    gold, pred, i = [], [], 0
    for s in sentences:
        for row in s.rows:
            upos, xpos, feats = tables.tags[tags[i]].split("\t")
            pred.append([row[0], row[1], tables.lemma(rules[i], surfaces[i]), upos, xpos, feats])
            gold.append(row)
            i += 1
    r = score_rows(gold, pred)
    r["select"] = r["alltags_full"] + r["lemmas"]   # all FEATS, not CoNLL 2018's universal ones
    return r


def train_morph(config: MorphConfig, train_path: str, dev_path: str | None = None,
                on_epoch=None, clusters: WordClusters | None = None, **_) -> MorphModel:
    """Train a tagger and lemmatizer on the treebank ``train_path`` (see the module docstring).
    ``clusters``: the word clusters of ``config.vectors`` when already made (a pipeline makes
    them once for its parts); otherwise made here from the file."""

    t0 = time.perf_counter()
    clusters = clusters_of_config(config, clusters)
    selection.check_with_dev(config, dev_path)
    every = read_treebank(train_path)
    train_sents, dev_sents = hold_out(config, every, None, len(every), lambda idx: [every[i] for i in idx])
    if dev_path is not None:
        dev_sents = read_treebank(dev_path)
    forms = [[r[1] for r in s.rows] for s in train_sents]
    rows = [r for s in train_sents for r in s.rows]
    # tags and rules, ids in sorted order (identity and lower-casing first)
    tags = sorted({tag_of(r) for r in rows})
    rule_objs = [make_rule(r[1], r[2]) for r in rows]
    base = [rule_text(r) for r in base_rules()]
    rules = base + sorted({rule_text(r) for r in rule_objs} - set(base))
    tag_id = {t: i for i, t in enumerate(tags)}
    rule_id = {r: i for i, r in enumerate(rules)}
    gold_t = np.array([tag_id[tag_of(r)] for r in rows], dtype=np.int64)
    gold_r = np.array([rule_id[rule_text(r)] for r in rule_objs], dtype=np.int64)
    triples = list(zip((r[1] for r in rows), gold_t.tolist(), gold_r.tolist(), (r[2] for r in rows)))
    sent_of = np.repeat(np.arange(len(forms)), [len(s) for s in forms])
    full = Lexicon(MAX_CANDIDATES).add(triples)
    tables = Tables(tags, rules, full, clusters)
    # jackknifed lookups: sentence k's words in the lexicon of the other folds
    folds = [Lexicon(MAX_CANDIDATES).add(t for t, s in zip(triples, sent_of) if s % FOLDS != k)
             for k in range(FOLDS)] if len(forms) >= FOLDS else [full] * FOLDS
    types = TypeTable()
    enc = encode(forms, tables, lambda k: folds[k % FOLDS], types, gold_t, gold_r)
    # the epochs read the encoded arrays only: the sentences and lists are freed before the
    # weight tables are made (tens of MB of strings: a pipeline's training peaks here)
    n_sent, n_rows = len(forms), len(rows)
    del folds, every, train_sents, forms, rows, rule_objs, triples, sent_of
    dev_enc = None
    if dev_sents is not None:
        dev_forms = [[r[1] for r in s.rows] for s in dev_sents]
        dev_enc = encode(dev_forms, tables, lambda k: full, types)
    size_t, size_l = 1 << config.hash_bits, 1 << (config.hash_bits - LEMMA_BITS_LESS)
    W_t, U_t, c_t = np.zeros(size_t), np.zeros(size_t), np.ones(1, dtype=np.int64)
    W_l, U_l, c_l = np.zeros(size_l), np.zeros(size_l), np.ones(1, dtype=np.int64)
    out_t = np.zeros(n_rows, dtype=np.int64)
    out_l = np.zeros(n_rows, dtype=np.int64)
    rng = np.random.default_rng(config.seed)

    def step(epoch: int) -> dict:
        order = rng.permutation(n_sent).astype(np.int64)
        up = K.tag_epoch(W_t, U_t, c_t, enc.feats, enc.sent_ptr, order, enc.cand_ptr, enc.cands,
                         tables.parts_ptr, tables.parts, gold_t, out_t)
        tok = rng.permutation(n_rows).astype(np.int64)
        # the lemmatizer learns from the tags the tagger gave this epoch, each before its sentence's
        # update (errors like those of new text), not the gold ones (dev Lemmas +1.1 on Turkish and Tamil)
        lf = tables.lemma_features(enc.feats, out_t)
        up += K.class_epoch(W_l, U_l, c_l, lf, tok, enc.rule_ptr, enc.rule_cands, enc.rule_feats,
                            gold_r, out_l)
        mistakes = int(np.count_nonzero(out_t != gold_t))
        return train_counts(up, mistakes, n_rows) | {"train_lemma_mistakes": int(np.count_nonzero(out_l != gold_r))}

    def averaged():
        a_t, a_l = np.empty(size_t, dtype=np.float32), np.empty(size_l, dtype=np.float32)
        K.average(W_t, U_t, c_t, a_t)
        K.average(W_l, U_l, c_l, a_l)
        return a_t, a_l

    model = MorphModel(config, tables, None, None, {})

    def score_dev(w) -> dict:
        t, r, _ = model.predict_ids(None, dev_enc, w)
        return _score(tables, dev_sents, t, r, dev_enc.surfaces)

    run = run_epochs(config.epochs, step, averaged, selection.Selector("select", config.patience, lambda w: w),
                     score_dev if dev_enc is not None else None, on_epoch)
    if wants_refit(config, run.selector):
        def again(cfg: MorphConfig, told) -> MorphModel:
            return train_morph(cfg, train_path, None, told, clusters=clusters)

        model = refit(config, run.selector, config.epochs, again, on_epoch, len(dev_sents), t0)
        model.info["dev_scores"] = _dev_scores(run.selector.best_dev)
        return model
    model.W_tag, model.W_lem = run.weights
    model.info = {"train_file": display_name(train_path), "train_sentences": n_sent, "train_tokens": n_rows,
                  "tags": len(tags), "rules": len(rules), "train_seconds": round(time.perf_counter() - t0, 3)}
    if clusters is not None:
        model.info["vectors"] = clusters.header()
    if run.info():
        model.info |= run.info() | {"dev_sentences": len(dev_sents)}
        model.info["dev_scores"] = _dev_scores(run.selector.best_dev)
    return model


def _dev_scores(dev: dict) -> dict:
    keep = ("upos", "xpos", "ufeats", "alltags", "alltags_full", "lemmas")
    return {k: round(v, 2) for k, v in dev.items() if k in keep}
