"""Reading n-best lists of speech recognition hypotheses.

Three layouts, recognised from the file itself (``read_nbest``):

* **HyPoradise JSON** (a file that starts with ``[``): one JSON array, one object per
  utterance with ``input`` (the hypotheses, best first), ``output`` (the reference; optional
  when only reranking), optional ``am_score`` or ``score`` (one number per hypothesis,
  higher is better) and optional ``id``. With ids, the group of an utterance is the first
  three characters of its id (the ATIS speaker code) and utterances are ordered by id within
  their group; without ids there are no groups (see *window* below).
* **JSON lines** (a file whose first non-blank character is ``{``): one object per line,
  ``{"id": ..., "group": ..., "reference": ..., "hypotheses": [{"text": ..., "score": ...},
  ...]}``; ``id``, ``group``, ``reference`` and ``score`` are optional, a hypothesis may also be
  a plain string, and scores must be given for every hypothesis of a list or for none.
  Utterances of a group are ordered as in the file.
* **Kaldi-style text**: a directory holding ``nbest`` (lines ``UTT-N w1 w2 ...``, N the rank
  from 1) and optionally ``text`` (references, ``UTT w1 w2 ...``), ``utt2spk`` (``UTT GROUP``)
  and score files ``ac_cost``, ``lm_cost`` (Kaldi costs, lower is better) and/or ``score``
  (higher is better), each with lines ``UTT-N value``; the recogniser score of a hypothesis is
  ``score - ac_cost - lm_cost`` over the files present. A plain file that is neither JSON
  layout is read as a bare ``nbest`` file (no scores, no references).

Where no group is given, the history of an utterance is the ``window`` utterances before it
in the file, and groups (the documents of TF-IDF and topics, the units of the sign test and
of cross-validation) are contiguous blocks of ``window`` utterances.

Every problem with the input is a ``UserError`` naming the file (and line where there is one).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from structkit.errors import UserError
from structkit.io.files import display_name, env_limit, iter_lines, open_input, read_capped

__all__ = ["Utterance", "NbestSet", "read_nbest", "read_chosen", "DEFAULT_WINDOW"]

DEFAULT_WINDOW = 10
# An n-best file is read whole (HyPoradise is one JSON array on one line): no more than this
# (STRUCTKIT_MAX_NBEST_BYTES raises it). The largest HyPoradise set is far below it.
MAX_NBEST_BYTES = 256 << 20


@dataclass
class Utterance:
    hypotheses: list[str]                 # normalised: words joined by single spaces
    scores: np.ndarray | None = None      # recogniser score per hypothesis, higher is better
    reference: str | None = None
    id: str | None = None
    group: str | None = None              # as given in the input (None: no group)
    line: int | None = None               # where it starts in the file (for messages)
    index: int = 0                        # position in the file (0-based)

    def where(self) -> str:
        return f"utterance {self.index + 1}" + (f" ({self.id})" if self.id else "")


@dataclass
class NbestSet:
    """Utterances in file order plus their grouping.

    ``groups[i]`` is the group label of utterance i and ``history[i]`` the indices of the
    utterances that precede it in its group (or in its window), in order."""
    path: str
    utterances: list[Utterance]
    groups: list[str] = field(default_factory=list)
    history: list[list[int]] = field(default_factory=list)
    windowed: bool = False
    order_by_id: bool = False   # HyPoradise: groups are id prefixes, ordered by id within

    def __len__(self) -> int:
        return len(self.utterances)

    @property
    def has_scores(self) -> bool:
        return all(u.scores is not None for u in self.utterances)

    def require_references(self, why: str) -> None:
        for u in self.utterances:
            if u.reference is None:
                raise UserError(f"{u.where()} has no reference transcript ({why} needs one)",
                                display_name(self.path), u.line)

    def subset(self, indices) -> "NbestSet":
        """The given utterances (in the order given), re-grouped: histories only reach
        utterances inside the subset."""
        utts = [self.utterances[i] for i in indices]
        pos = {i: k for k, i in enumerate(indices)}
        groups = [self.groups[i] for i in indices]
        history = [[pos[j] for j in self.history[i] if j in pos] for i in indices]
        return NbestSet(self.path, utts, groups, history, self.windowed, self.order_by_id)


def _norm(text: str) -> str:
    return " ".join(text.split())


def _sort_key(u: Utterance):
    return u.id or ""


def assign_groups(ns: NbestSet, window: int = DEFAULT_WINDOW, sort_by_id: bool = False) -> NbestSet:
    """Fill ``groups`` and ``history``: explicit groups where every utterance has one, else
    windows of preceding utterances (groups = blocks of ``window``)."""
    utts = ns.utterances
    if utts and all(u.group is not None for u in utts):
        members: dict[str, list[int]] = {}
        for i, u in enumerate(utts):
            members.setdefault(u.group, []).append(i)
        history: list[list[int]] = [[] for _ in utts]
        for idx in members.values():
            if sort_by_id:
                idx = sorted(idx, key=lambda i: (_sort_key(utts[i]), i))
            for k, i in enumerate(idx):
                history[i] = idx[:k]
        ns.groups = [u.group for u in utts]
        ns.history = history
        ns.windowed = False
    else:
        w = max(int(window), 1)
        ns.groups = [f"block{i // w}" for i in range(len(utts))]
        ns.history = [list(range(max(0, i - w), i)) for i in range(len(utts))]
        ns.windowed = True
    return ns


# ---- layouts ----------------------------------------------------------------------------------
def _scores_of(raw, n: int, u: Utterance, path: str, line: int | None, name: str) -> np.ndarray:
    if not isinstance(raw, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                            for x in raw):
        raise UserError(f"{u.where()}: '{name}' must be a list of numbers", path, line)
    if len(raw) != n:
        raise UserError(f"{u.where()} has {n} hypotheses but {len(raw)} scores in '{name}'",
                        path, line)
    a = np.asarray(raw, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise UserError(f"{u.where()}: '{name}' holds a non-finite score", path, line)
    return a


def _hyp_texts(raw, u: Utterance, path: str, line: int | None, name: str) -> list[str]:
    if not isinstance(raw, list):
        raise UserError(f"{u.where()}: '{name}' must be a list of hypotheses", path, line)
    if not raw:
        raise UserError(f"{u.where()} has no hypotheses", path, line)
    if not all(isinstance(h, str) for h in raw):
        raise UserError(f"{u.where()}: every hypothesis in '{name}' must be a string", path, line)
    return [_norm(h) for h in raw]


def _line_of_offset(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _read_hyporadise(path: str, text: str) -> NbestSet:
    where = display_name(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"not valid JSON: {e.msg} (column {e.colno})", where, e.lineno) from None
    except RecursionError:
        raise UserError("JSON nested too deeply", where) from None
    if not isinstance(data, list):
        raise UserError("a HyPoradise n-best file must be one JSON array of utterances", where, 1)
    # Line numbers: where each top-level object starts (cheap scan of the decoder positions).
    starts = _object_lines(text, len(data))
    utts = []
    for i, obj in enumerate(data):
        line = starts[i] if starts else None
        u = Utterance([], index=i, line=line)
        if not isinstance(obj, dict):
            raise UserError(f"{u.where()}: expected a JSON object, got {type(obj).__name__}", where, line)
        if "id" in obj:
            if not isinstance(obj["id"], str):
                raise UserError(f"{u.where()}: 'id' must be a string", where, line)
            u.id = obj["id"]
        if "input" not in obj:
            raise UserError(f"{u.where()} has no hypotheses (no 'input' list)", where, line)
        u.hypotheses = _hyp_texts(obj["input"], u, where, line, "input")
        if "output" in obj:
            if not isinstance(obj["output"], str):
                raise UserError(f"{u.where()}: 'output' (the reference) must be a string", where, line)
            u.reference = _norm(obj["output"])
        for name in ("am_score", "score"):
            if name in obj:
                u.scores = _scores_of(obj[name], len(u.hypotheses), u, where, line, name)
                break
        if u.id is not None:
            u.group = u.id[:3]
        utts.append(u)
    return _finish(path, where, utts, order_by_id=True)


def _finish(path: str, where: str, utts: list, order_by_id: bool = False) -> "NbestSet":
    """The checks every JSON layout shares: recogniser scores on all utterances or on none,
    and groups on all or on none (then windows of preceding utterances are used)."""
    if any(u.scores is None for u in utts) and any(u.scores is not None for u in utts):
        u = next(u for u in utts if u.scores is None)
        raise UserError(f"{u.where()} has no scores while other utterances do", where, u.line)
    if any(u.group is None for u in utts):
        for u in utts:
            u.group = None
    return NbestSet(path, utts, order_by_id=order_by_id)


def _object_lines(text: str, n: int) -> list[int]:
    """The line on which each of the ``n`` top-level objects of a JSON array starts."""
    dec = json.JSONDecoder()
    lines = []
    pos = text.index("[") + 1
    ws = re.compile(r"[\s,]*")
    line = _line_of_offset(text, pos)
    try:
        for _ in range(n):
            m = ws.match(text, pos)
            line += text.count("\n", pos, m.end())
            pos = m.end()
            lines.append(line)
            _, end = dec.raw_decode(text, pos)
            line += text.count("\n", pos, end)
            pos = end
    except (json.JSONDecodeError, ValueError):
        return []
    return lines


def _json_line(line: str, where: str, lineno: int):
    """The JSON value of one line, or its one-line error."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as e:
        raise UserError(f"not valid JSON: {e.msg} (column {e.colno})", where, lineno) from None
    except RecursionError:
        raise UserError("JSON nested too deeply", where, lineno) from None


def _read_jsonl(path: str, lines: list[tuple[int, str]]) -> NbestSet:
    where = display_name(path)
    utts = []
    for lineno, line in lines:
        if not line.strip():
            continue
        u = Utterance([], index=len(utts), line=lineno)
        obj = _json_line(line, where, lineno)
        if not isinstance(obj, dict):
            raise UserError(f"expected a JSON object per line, got {type(obj).__name__}", where, lineno)
        for key in ("id", "group", "reference"):
            if key in obj and obj[key] is not None:
                v = obj[key]
                if isinstance(v, (int, float)) and not isinstance(v, bool) and key != "reference":
                    v = str(v)
                if not isinstance(v, str):
                    raise UserError(f"{u.where()}: '{key}' must be a string", where, lineno)
                setattr(u, key, _norm(v) if key == "reference" else v)
        hyps = obj.get("hypotheses")
        if hyps is None:
            raise UserError(f"{u.where()} has no hypotheses (no 'hypotheses' list)", where, lineno)
        if not isinstance(hyps, list):
            raise UserError(f"{u.where()}: 'hypotheses' must be a list", where, lineno)
        if not hyps:
            raise UserError(f"{u.where()} has no hypotheses", where, lineno)
        texts, scores = [], []
        for k, h in enumerate(hyps, 1):
            if isinstance(h, str):
                texts.append(_norm(h))
                scores.append(None)
            elif isinstance(h, dict) and isinstance(h.get("text"), str):
                texts.append(_norm(h["text"]))
                s = h.get("score")
                if s is not None and (isinstance(s, bool) or not isinstance(s, (int, float))
                                      or not np.isfinite(s)):
                    raise UserError(f"{u.where()}: hypothesis {k} has a score that is not a "
                                    f"finite number: {s!r}", where, lineno)
                scores.append(s)
            else:
                raise UserError(f"{u.where()}: hypothesis {k} must be a string or an object with "
                                "a 'text' string", where, lineno)
        given = sum(s is not None for s in scores)
        if given and given != len(scores):
            raise UserError(f"{u.where()} has {len(scores)} hypotheses but {given} scores",
                            where, lineno)
        u.hypotheses = texts
        u.scores = np.asarray(scores, dtype=np.float64) if given else None
        utts.append(u)
    return _finish(path, where, utts)


_KALDI_KEY = re.compile(r"^(.+)-(\d+)$")


def _read_kaldi_nbest(path: str, lines) -> tuple[list[Utterance], dict[str, tuple[int, int]]]:
    where = display_name(path)
    utts: list[Utterance] = []
    by_id: dict[str, Utterance] = {}
    ranks: dict[str, list[int]] = {}
    keys: dict[str, tuple[int, int]] = {}
    for lineno, line in lines:
        if not line.strip():
            continue
        parts = line.split(maxsplit=1)
        m = _KALDI_KEY.match(parts[0])
        if not m:
            raise UserError(f"expected 'UTTERANCE-RANK words...', got key {parts[0]!r}", where, lineno)
        uid, rank = m.group(1), int(m.group(2))
        if parts[0] in keys:
            raise UserError(f"hypothesis {parts[0]} appears twice", where, lineno)
        u = by_id.get(uid)
        if u is None:
            u = Utterance([], id=uid, line=lineno, index=len(utts))
            by_id[uid] = u
            utts.append(u)
            ranks[uid] = []
        ranks[uid].append(rank)
        u.hypotheses.append(_norm(parts[1]) if len(parts) > 1 else "")
        keys[parts[0]] = (u.index, len(u.hypotheses) - 1)
    new_pos: dict[str, dict[int, int]] = {}
    for u in utts:
        r = ranks[u.id]
        order = sorted(range(len(r)), key=lambda k: r[k])
        if sorted(r) != list(range(1, len(r) + 1)):
            raise UserError(f"{u.where()}: ranks must be 1..{len(r)}, got {sorted(r)}", where, u.line)
        u.hypotheses = [u.hypotheses[k] for k in order]
        new_pos[u.id] = {old: new for new, old in enumerate(order)}
    keys = {key: (ui, new_pos[utts[ui].id][k]) for key, (ui, k) in keys.items()}
    return utts, keys


def _capped(path: str):
    """A file of an n-best set as a stream, read whole with the n-best cap."""
    import contextlib
    import io

    return contextlib.closing(io.BytesIO(read_capped(
        path, env_limit("STRUCTKIT_MAX_NBEST_BYTES", MAX_NBEST_BYTES), "an n-best file",
        "STRUCTKIT_MAX_NBEST_BYTES")))


def _read_kaldi_dir(path: str) -> NbestSet:
    nb = os.path.join(path, "nbest")
    if not os.path.isfile(nb):
        raise UserError("a Kaldi-style n-best directory must hold a file 'nbest'", path)
    with _capped(nb) as f:
        utts, keys = _read_kaldi_nbest(nb, list(iter_lines(nb, f)))
    by_id = {u.id: u for u in utts}
    total = None
    for name, sign in (("score", 1.0), ("ac_cost", -1.0), ("lm_cost", -1.0)):
        p = os.path.join(path, name)
        if not os.path.isfile(p):
            continue
        vals = [np.full(len(u.hypotheses), np.nan) for u in utts]
        with _capped(p) as f:
            for lineno, line in iter_lines(p, f):
                if not line.strip():
                    continue
                parts = line.split()
                if len(parts) != 2:
                    raise UserError("expected 'UTTERANCE-RANK value'", p, lineno)
                if parts[0] not in keys:
                    raise UserError(f"score for {parts[0]}, which is not a hypothesis in "
                                    f"{display_name(nb)}", p, lineno)
                try:
                    v = float(parts[1])
                except ValueError:
                    raise UserError(f"not a number: {parts[1]!r}", p, lineno) from None
                if not np.isfinite(v):
                    raise UserError(f"not a finite number: {parts[1]!r}", p, lineno)
                ui, k = keys[parts[0]]
                vals[ui][k] = v
        for u, v in zip(utts, vals):
            missing = int(np.isnan(v).sum())
            if missing:
                raise UserError(f"{u.where()} has {len(v)} hypotheses but {len(v) - missing} "
                                "scores", p)
        if total is None:
            total = [sign * v for v in vals]
        else:
            total = [t + sign * v for t, v in zip(total, vals)]
    if total is not None:
        for u, t in zip(utts, total):
            u.scores = t
    p = os.path.join(path, "text")
    if os.path.isfile(p):
        with _capped(p) as f:
            for lineno, line in iter_lines(p, f):
                if not line.strip():
                    continue
                parts = line.split(maxsplit=1)
                if parts[0] in by_id:
                    by_id[parts[0]].reference = _norm(parts[1]) if len(parts) > 1 else ""
    p = os.path.join(path, "utt2spk")
    if os.path.isfile(p):
        with _capped(p) as f:
            for lineno, line in iter_lines(p, f):
                parts = line.split()
                if not parts:
                    continue
                if len(parts) != 2:
                    raise UserError("expected 'UTTERANCE GROUP'", p, lineno)
                if parts[0] in by_id:
                    by_id[parts[0]].group = parts[1]
        if any(u.group is None for u in utts):
            u = next(u for u in utts if u.group is None)
            raise UserError(f"{u.where()} has no line in utt2spk", p)
    return NbestSet(path, utts)


def read_nbest(path: str, window: int = DEFAULT_WINDOW) -> NbestSet:
    """Read an n-best file (or Kaldi-style directory) in any of the three layouts."""
    where = display_name(path)
    if path != "-" and os.path.isdir(path):
        ns = _read_kaldi_dir(path)
    else:
        import io

        data = read_capped(path, env_limit("STRUCTKIT_MAX_NBEST_BYTES", MAX_NBEST_BYTES),
                           "an n-best file", "STRUCTKIT_MAX_NBEST_BYTES")
        lines = list(iter_lines(path, io.BytesIO(data), limit=len(data) + 1))
        del data
        first = next((line.lstrip() for _, line in lines if line.strip()), "")
        if first.startswith("["):
            ns = _read_hyporadise(path, "\n".join(line for _, line in lines))
        elif first.startswith("{"):
            ns = _read_jsonl(path, lines)
        else:
            utts, _ = _read_kaldi_nbest(path, lines)
            ns = NbestSet(path, utts)
    if not ns.utterances:
        raise UserError("no utterances in the n-best input", where)
    for u in ns.utterances:
        if not u.hypotheses:
            raise UserError(f"{u.where()} has no hypotheses", where, u.line)
    return assign_groups(ns, window, sort_by_id=ns.order_by_id)


def read_chosen(path: str, n: int) -> list[str]:
    """A reranker's output: one hypothesis per line, or JSON lines with a ``text`` field
    (``structkit rerank --json``); must have exactly ``n`` lines."""
    where = display_name(path)
    out = []
    with open_input(path) as f:
        for lineno, line in iter_lines(path, f):
            if len(out) == n:  # one too many: said now, not after reading all the rest
                raise UserError(f"has more than {n} lines but the n-best input has {n} utterances",
                                where, lineno)
            if line.lstrip().startswith("{"):
                obj = _json_line(line, where, lineno)
                if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                    raise UserError("a JSON line of chosen hypotheses needs a 'text' string", where, lineno)
                out.append(_norm(obj["text"]))
            else:
                out.append(_norm(line))
    if len(out) != n:
        raise UserError(f"has {len(out)} lines but the n-best input has {n} utterances", where)
    return out


def _json_default(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not JSON data")


def from_utterances(X: Sequence, y: Sequence[str] | None, window: int, what: str) -> NbestSet:
    """The NbestSet of utterances given as Python data (``structkit.Reranker``): dicts of the
    JSON-lines layout (hypotheses, reference, id, group) or plain lists of hypothesis strings,
    with the references ``y`` (or None), checked as a JSON-lines file is; errors name ``what``
    and the utterance."""
    lines = []
    for i, u in enumerate(X):
        obj = dict(u) if isinstance(u, dict) else {"hypotheses": u}
        if y is not None:
            obj["reference"] = y[i]
        try:
            lines.append((i + 1, json.dumps(obj, default=_json_default)))
        except (TypeError, ValueError) as e:
            raise UserError(f"{what}: utterance {i + 1}: {e}") from None
    try:
        ns = _read_jsonl(what, lines)
    except UserError as e:  # the message names the utterance; Python data has no lines
        raise UserError(e.message, what) from None
    for u in ns.utterances:
        u.line = None
    return assign_groups(ns, window)
