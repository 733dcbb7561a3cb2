"""Sequence labelling with a label set too large for a dense ``features x labels`` table (lemmas,
full morphological tags: thousands of labels): the morph wing's candidate lattice with hashed
weights (``structkit.lattice.kernels``), for a sequence task (``train --task pos --label-column
lemma``).

Memory does not grow with the label set: the weights are one hashed table of ``2^LATTICE_BITS``
slots (a feature value with a class), and each word scores only its candidates: the classes seen
with its form in training, else those of its lower-cased form, its word class (numbers,
punctuation) and its suffixes, at most ``MAX_CANDIDATES`` (``structkit.lattice.lexicon``; jackknifed
over 5 folds in training, so the candidates and ambiguity classes it learns from are those new
text gets). Features are the morph tagger's (``structkit.lattice.features``: the form, affixes,
shape, neighbours and ambiguity class), labels form a first-order chain, the learner is the
averaged structured perceptron (``kernels.tag_epoch``) whatever ``--algo`` says (the model's
info says so), trained serially (``--jobs``/``--dask`` parameter mixing does not apply).

The classes are the labels themselves, or, when the labels are mostly the word changed by an
edit rule (lemmas: far fewer rules than labels), the edit rules (``structkit.lattice.rules``): then
a word never seen in training still gets a label its suffix rules make of it, which no label
list could hold.
"""
from __future__ import annotations

import time

import numpy as np

from structkit.errors import UserError
from structkit.io.conll import Columns, read_conll, write_conll
from structkit.io.files import size_text
from structkit.lattice import kernels as K
from structkit.lattice.features import TypeTable, check_layout, hide_unknown, layout, tag_features, value
from structkit.lattice.kernels import tag_corpus
from structkit.lattice.lexicon import Lexicon, base_rules
from structkit.lattice.margins import lattice_margins
from structkit.lattice.rules import applies, apply_rule, make_rule, parse_rule, rule_text
from structkit.learn import selection
from structkit.learn.loop import refit, run_epochs, train_counts, wants_refit
from structkit.model import save_model
from structkit.vocab import pack_strings, packed_size, unpack_strings

LATTICE_BITS = 22            # the hashed table: 2^22 slots (32 MB a copy in training)
LATTICE_COPIES = 3           # the weights, the averaging sums, the kept dev-best (float32, counted as 8 bytes)
MAX_CANDIDATES = 20          # an unknown word's candidates
FOLDS = 5
RULES_WHEN = 0.5             # classes are edit rules when there are at most this share of the labels
SHARED_PART = "\x00any"      # every class's second part (the kernels' "UPOS" slot): shared, so it cancels


class Unnamed:
    """What the front-ends ask of a tagger's feature space, for hashed features without
    templates: no POS or named columns read; the known words are the lexicon's forms."""

    uses_pos = False
    column_attrs: list = []

    def __init__(self, forms):
        self._forms = forms
        self.n_features = 0

    def known_words(self) -> set[str]:
        return set(self._forms)


def lattice_bytes(bits: int | None = None) -> int:
    """What the hashed tables take in training (float64 counted throughout)."""
    return (1 << (LATTICE_BITS if bits is None else bits)) * 8 * LATTICE_COPIES


class Lattice:
    """What a tagger over candidate lattices with hashed weights (see the module docstring) does
    differently from the dense one: mixed into ``structkit.sequence.task.SequenceTagger``
    (``LatticeTagger`` there) so that it keeps the same front-end methods (columns, batches,
    --scores). ``config_type``: the config class its header is read into."""

    kind = "lattice"
    config_type: type

    def __init__(self, config, classes: list[str], rules: bool, lexicon, W: np.ndarray,
                 columns, n_columns: int, info: dict | None = None):
        super().__init__(config, Unnamed(lexicon.form_tags), classes, None, columns, n_columns, info)
        self.rules = rules
        self.lexicon = lexicon
        self.W = W
        self.rule_objs = [parse_rule(c) for c in classes] if rules else None
        n = len(classes)
        self.parts_ptr = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
        self.parts = np.empty(2 * n, dtype=np.int64)
        self.parts[0::2] = np.arange(n)
        self.parts[1::2] = n

    @property
    def decoder(self) -> str:
        return "viterbi"

    def check_depth(self, depth: int, where: str | None = None) -> None:
        raise UserError("--depth applies to history-based models; this one decodes a candidate lattice "
                        "with Viterbi (a large label set)", where)

    # ---- encoding and decoding -------------------------------------------------------------------
    def candidates(self, form: str, lex=None) -> tuple[list[int], bool]:
        """The candidate classes of ``form`` (most frequent first) and whether it is known."""

        cands, known = (lex or self.lexicon).tags(form)
        if self.rules:
            cands = [c for c in cands if applies(self.rule_objs[c], form)]
            if not known or not cands:
                cands = cands + [c for c in (self.identity,) if c not in cands]
        return cands, known

    @property
    def identity(self) -> int:
        return 0   # rules mode: the classes start with the identity rule

    def encode_words(self, words: list[str], offsets: np.ndarray, lexicons=None, gold=None):
        """(feats, cand_ptr, cands) of the words; ``lexicons(k)``: the lexicon sentence k's words
        are looked up in (training: its fold's); ``gold``: class ids added to the candidates."""

        n = len(words)
        lists, amb, known = [], np.empty(n, dtype=np.uint64), np.zeros(n, dtype=bool)
        caches: dict[int, dict] = {}
        sent = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        for i, form in enumerate(words):
            lex = lexicons(int(sent[i])) if lexicons is not None else self.lexicon
            cache = caches.setdefault(id(lex), {})
            got = cache.get(form)
            if got is None:
                c, k = self.candidates(form, lex)
                a = value("amb", ("K" + ",".join(map(str, sorted(c)))) if k else ("U" + ",".join(map(str, c[:3]))))
                got = cache[form] = (c, k, a)
            c, k, a = got
            if gold is not None and gold[i] not in c:
                c = c + [int(gold[i])]
            lists.append(c)
            amb[i], known[i] = a, k
        cand_ptr = np.zeros(n + 1, dtype=np.int64)
        cand_ptr[1:] = np.cumsum([len(c) for c in lists])
        cands = np.fromiter((x for c in lists for x in c), dtype=np.int64, count=int(cand_ptr[-1]))
        types = TypeTable()
        feats = tag_features(types, types.ids(words), np.asarray(offsets, dtype=np.int64), amb)
        hide_unknown(feats, known)
        return feats, cand_ptr, cands

    def decode(self, feats, offsets, cand_ptr, cands, W=None) -> np.ndarray:
        out = np.zeros(feats.shape[0], dtype=np.int64)
        if out.size:
            tag_corpus(self.W if W is None else W, feats, np.asarray(offsets, dtype=np.int64), cand_ptr, cands,
                       self.parts_ptr, self.parts, out)
        return out

    def label_of(self, c: int, form: str) -> str:
        if self.rules:
            return apply_rule(self.rule_objs[c], form) or "_"
        return self.labels[c]

    def label_words(self, words, pos, offsets, extra, path, text, depth, margins):
        feats, cand_ptr, cands = self.encode_words(words, offsets)
        ids = self.decode(feats, offsets, cand_ptr, cands)
        lab = [self.label_of(int(c), w) for c, w in zip(ids, words)]
        labels = [lab[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
        if not margins:
            return labels

        m = np.zeros(len(words))
        runner = np.zeros(len(words), dtype=np.int64)
        if len(words):
            lattice_margins(self.W, feats, np.asarray(offsets, dtype=np.int64), cand_ptr, cands,
                            self.parts_ptr, self.parts, ids, m, runner)
        return labels, [m[offsets[i]:offsets[i + 1]].tolist() for i in range(len(offsets) - 1)]

    def tag_conll_bytes(self, data: bytes, path: str, first_line: int = 1, columns_spec: str | None = None,
                        depth: int | None = None, n_columns: int | None = None) -> bytes:
        """As :meth:`SequenceTagger.tag_conll_bytes` (the dense fast path does not apply)."""
        import io

        sents = read_conll(path, io.BytesIO(data), n_columns=n_columns)  # (batch relocates line numbers)
        out = io.StringIO()
        for batch, labels in self.tag_batches(sents, path, columns_spec):
            write_conll(batch, labels, out)
        return out.getvalue().encode("utf-8")

    # ---- storage ------------------------------------------------------------------------------------
    def save(self, path: str) -> None:
        from dataclasses import asdict

        lex = self.lexicon

        def flat(d):
            return {k: [x for kv in sorted(c.items()) for x in kv] for k, c in d.items()}

        arrays = {"W_hashed": self.W.astype(np.float32)}
        arrays.update(pack_strings("labels", self.labels))

        header = {"task": self.config.task, "kind": self.kind, "layout": layout(),
                  "config": selection.header_config(asdict(self.config)),
                  "bits": int(self.W.size).bit_length() - 1, "rules": self.rules,
                  "lexicon": {"cap": lex.cap, "form_tags": flat(lex.form_tags),
                              "suffix_tags": flat(lex.suffix_tags), "class_tags": flat(lex.class_tags),
                              "all_tags": [x for kv in sorted(lex.all_tags.items()) for x in kv]},
                  "columns": self.columns.header(self.n_columns),
                  "info": self.info}
        save_model(path, header, arrays)

    @classmethod
    def from_file(cls, header: dict, arrays: dict, path: str) -> "Lattice":
        from collections import Counter, defaultdict

        check_layout(header, path)
        try:
            config = cls.config_type(**header["config"])
            config.validate()
            classes = unpack_strings("labels", arrays)
            n = len(classes)
            rules = bool(header["rules"])
            lx = header["lexicon"]
            lex = Lexicon(int(lx["cap"]))

            def counters(d):
                out = defaultdict(Counter)
                for k, v in d.items():
                    c = Counter(dict(zip(v[::2], v[1::2])))
                    if any(type(t) is not int or not 0 <= t < n for t in c):
                        raise ValueError("lexicon ids out of range")
                    out[k] = c
                return out

            lex.form_tags = counters(lx["form_tags"])
            lex.suffix_tags = counters(lx["suffix_tags"])
            lex.class_tags = counters(lx["class_tags"])
            lex.all_tags = counters({"": lx["all_tags"]})[""]
            W = np.asarray(arrays["W_hashed"], dtype=np.float32)
            if W.shape != (1 << header["bits"],) or not np.isfinite(W).all():
                raise ValueError("weights do not fit the header")
            columns, n_cols = Columns.from_header(header["columns"])
            model = cls(config, classes, rules, lex, W, columns, n_cols, header.get("info", {}))
        except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
            raise UserError(f"damaged model file: {str(e)[:200]}", path) from None
        except UserError as e:
            raise UserError(f"damaged model file: {e.message}", path) from None
        return model


def lattice_limits(header: dict, shapes: dict) -> None:
    """Bounds on a lattice tagger's arrays from its header, checked before they are read."""

    bits = header.get("bits")
    L = packed_size("labels", shapes)
    if type(bits) is not int or not 10 <= bits <= 28 or L is None or not 1 <= L <= 1 << 24:
        raise ValueError("hash size or label count out of range")
    for name, (_, shape) in shapes.items():
        if name == "W_hashed" and int(np.prod(shape)) > 1 << bits:
            raise ValueError(f"array {name} does not fit the header")


def check_lattice_budget(name: str | None, dense_mb: float, budget: int) -> None:
    """The one-line refusal when even the hashed table is over the weight budget (bytes)."""

    need = lattice_bytes()
    if need > budget:
        raise UserError(f"the label set is too large for dense weights ({dense_mb:,.0f} MB) and the hashed "
                        f"candidate lattice takes {need / (1 << 20):,.0f} MB (2^{LATTICE_BITS} slots x 8 bytes "
                        f"x {LATTICE_COPIES} copies), over the {size_text(budget)} limit "
                        f"(STRUCTKIT_WEIGHT_BUDGET, bytes); for lemmas and full morphological tags "
                        f"--task morph learns them together", name or "<training data>")


def train_lattice(cls: type, config, corpus, dev, full, on_epoch, train_name: str | None,
                  train_sha256: str | None, t0: float, dense_mb: float, budget: int, key: str, score):
    """Train a ``cls`` (a :class:`Lattice` tagger) on ``corpus`` (a
    ``structkit.sequence.task.Corpus``; ``dev`` a Corpus, a function reading one, or None;
    ``full`` the corpus before --dev-split held sentences out, for the refit); ``budget`` the
    weight budget in bytes; dev epochs compared by ``score(gold, pred)[key]``. The epoch loop,
    dev selection and refit are the shared ones."""

    check_lattice_budget(train_name, dense_mb, budget)
    words, labels, offsets = corpus.words, corpus.labels, corpus.offsets
    label_set = sorted(set(labels))
    rule_texts = [rule_text(make_rule(w, lab)) for w, lab in zip(words, labels)]
    base = [rule_text(r) for r in base_rules()]
    rule_set = base + sorted(set(rule_texts) - set(base))
    rules = len(rule_set) <= RULES_WHEN * len(label_set)
    classes = rule_set if rules else label_set
    index = {c: i for i, c in enumerate(classes)}
    gold = np.fromiter((index[x] for x in (rule_texts if rules else labels)), dtype=np.int64, count=len(words))
    del rule_texts
    n_sent = len(offsets) - 1
    sent_of = np.repeat(np.arange(n_sent), np.diff(offsets))
    triples = list(zip(words, gold.tolist(), [0] * len(words), [""] * len(words)))
    lexicon = Lexicon(MAX_CANDIDATES).add(triples)
    tagger = cls(config, classes, rules, lexicon, np.zeros(1 << LATTICE_BITS, dtype=np.float32),
                           corpus.columns, corpus.n_columns)
    folds = [Lexicon(MAX_CANDIDATES).add(t for t, s in zip(triples, sent_of) if s % FOLDS != k)
             for k in range(FOLDS)] if n_sent >= FOLDS else [lexicon] * FOLDS
    del triples
    feats, cand_ptr, cands = tagger.encode_words(words, offsets, lambda k: folds[k % FOLDS], gold)
    del folds
    dev_enc = None
    if dev is not None:
        if callable(dev):
            dev = dev()
        dev_enc = tagger.encode_words(dev.words, dev.offsets)
        dev_gold = dev.label_sentences()
    size = 1 << LATTICE_BITS
    W, U, cnt = np.zeros(size), np.zeros(size), np.ones(1, dtype=np.int64)
    out = np.zeros(len(words), dtype=np.int64)
    rng = np.random.default_rng(config.seed)
    sent_ptr = np.asarray(offsets, dtype=np.int64)

    def step(epoch: int) -> dict:
        order = rng.permutation(n_sent).astype(np.int64)
        up = K.tag_epoch(W, U, cnt, feats, sent_ptr, order, cand_ptr, cands, tagger.parts_ptr, tagger.parts,
                         gold, out)
        return train_counts(up, int(np.count_nonzero(out != gold)), len(words))

    def averaged() -> np.ndarray:
        a = np.empty(size, dtype=np.float32)
        K.average(W, U, cnt, a)
        return a

    def score_dev(w) -> dict:
        f, cp, cs = dev_enc
        ids = tagger.decode(f, dev.offsets, cp, cs, w)
        o = dev.offsets
        lab = [tagger.label_of(int(c), x) for c, x in zip(ids, dev.words)]
        pred = [lab[o[k]:o[k + 1]] for k in range(len(o) - 1)]
        return score(dev_gold, pred)

    selector = selection.Selector(key, config.patience, lambda w: w.copy())
    run = run_epochs(config.epochs, step, averaged, selector, score_dev if dev_enc is not None else None,
                     on_epoch)
    if wants_refit(config, run.selector):
        def again(cfg, told):
            return train_lattice(cls, cfg, full, None, full, told, train_name, train_sha256, time.perf_counter(),
                                 dense_mb, budget, key, score)

        return refit(config, run.selector, config.epochs, again, on_epoch, len(dev.offsets) - 1, t0)
    tagger.W = run.weights
    tagger.info = {"train_file": train_name, "train_sha256": train_sha256, "train_sentences": n_sent,
                   "train_tokens": len(words), "n_features": 0, "weights": "hashed candidate lattice",
                   "learner": "averaged perceptron",
                   "classes": "edit rules" if rules else "labels", "n_classes": len(classes),
                   "n_labels": len(label_set), "dense_mb": round(dense_mb),
                   "train_seconds": round(time.perf_counter() - t0, 3)}
    if run.info():
        tagger.info |= run.info() | {"dev_sentences": len(dev.offsets) - 1}
    return tagger


def lattice_lines(model: Lattice, top: int, pattern: str | None) -> list[str]:
    """What ``structkit dump`` shows of a lattice tagger: its facts, then its ``top`` most
    frequent classes in training (those whose text contains ``pattern``). Its weights are hashed:
    they have no feature names to show."""
    info = model.info
    lines = [f"task {model.config.task}, hashed candidate lattice (the label set was too large for dense "
             f"weights: {info.get('dense_mb', '?')} MB), averaged perceptron",
             f"trained on {info.get('train_file')} ({info.get('train_tokens')} tokens); {info.get('n_labels')} labels, "
             f"{len(model.labels)} classes ({'edit rules of the word' if model.rules else 'the labels'}), "
             f"{len(model.lexicon.form_tags)} known forms, weights 2^{model.W.size.bit_length() - 1} slots"]
    counts = model.lexicon.all_tags
    rows = sorted(((counts.get(i, 0), c) for i, c in enumerate(model.labels)
                   if pattern is None or pattern in c), key=lambda x: (-x[0], x[1]))
    lines.append(f"most frequent {'rules' if model.rules else 'labels'} (tokens, class):")
    lines += [f"  {n}\t{c!r}" if model.rules else f"  {n}\t{c}" for n, c in rows[:top]]
    return lines
