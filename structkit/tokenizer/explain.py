"""Why the learnt tokenizer put a boundary where it did (``structkit explain -m tok.model``) and
how sure it was (``structkit tokenize --scores``).

Each character's label (``N T S W``, ``structkit.tokenizer.gold``) is decided by the chain model
over the characters of a paragraph; the margin of a label is the score of the best label
sequence with that label at the character minus the best with another allowed label there
(max-marginals, ``structkit.tokenizer.model.char_margins``). A token's boundary is decided at
the character that ends it: its last character (``T``, or ``S`` where it ends a sentence), or,
for a token the model ended by labelling the whitespace after it ``W``, that whitespace.

* ``--scores`` writes, in the MISC column of each token (its range line for a multiword token),
  ``TokMargin``: the best score with a boundary there (``T``, ``S`` or ``W``) minus the best with
  none (``N``); and on a sentence's last token ``SentMargin``: the best score with the sentence
  ending there (``S``) minus the best without (``N`` or ``T``). ``inf`` where nothing else is
  allowed (the paragraph's last token must end a sentence).
* ``explain`` shows, for each token, the label at the character that ends it against the
  alternative the scores weigh (a token end or a space between tokens against no boundary, with
  TokMargin as the margin; a sentence end against the best other label, with SentMargin), then
  what pushes towards each: the 47 features of the character (``structkit.tokenizer.features``; hashed, so
  named by their template and the characters they saw), the transitions from the label before and
  to the label after, and the rest of the two best sequences (the other characters' labels where
  they differ); the contributions add up to the margin.

Both see what ``tokenize`` sees: the same paragraphs, and a paragraph longer than
``model.WINDOW`` characters window by window (``LearntTokenizer._spans``), each decision with
the window that kept it.
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import IO, Iterator

import numpy as np

from structkit.config import resolve_data_path
from structkit.errors import UserError
from structkit.explanation import Push, TokenExplanation, transition_pushes
from structkit.io.conllu import set_key
from structkit.io.files import iter_lines, open_input
from structkit.text.conllu import write_conllu
from structkit.text.english import addresses
from structkit.text.tokenize import _blocks, iter_sentences
from structkit.tokenizer import features as F
from structkit.tokenizer.model import (
    NEG,
    LearntTokenizer,
    char_emissions,
    char_margins,
    favour_sentence_ends,
    tag_emissions,
)

LABEL_NAMES = ("no boundary", "token end", "sentence end", "space between tokens")


@dataclass
class Paragraph:
    """One block of raw text as `structkit tokenize` hands it to the tokenizer."""

    text: str
    number: int       # 1-based, in its input
    line: int         # the line it starts on


def paragraphs(path: str, stream: IO | None = None) -> Iterator[Paragraph]:
    """The paragraphs (blocks between blank lines) of a raw-text input, as ``tokenize`` reads it."""

    if stream is None:
        with open_input(path) as f:
            yield from paragraphs(path, f)
        return
    starts: list[int] = []   # the offset of each line read, to name a paragraph's first line

    def lines():
        pos = 0
        for _, line in iter_lines(path, stream):
            starts.append(pos)
            pos += len(line) + 1
            yield line + "\n"

    for k, (offset, block, _) in enumerate(_blocks(lines(), "auto")):
        yield Paragraph(block, k + 1, _line_at(starts, offset))


def _line_at(starts: list[int], offset: int) -> int:
    import bisect

    return bisect.bisect_right(starts, offset)


def read_paragraph(file: str | None, text: str | None, number: int) -> tuple[Paragraph, str]:
    """The ``number``-th paragraph of FILE (or '-') or of ``text``, and the path errors name."""
    if text is not None:
        path, stream = "--text", io.StringIO(text)
    else:
        path = resolve_data_path(file, must_exist=True) if file != "-" else "-"
        stream = None
    seen = 0
    for p in paragraphs(path, stream):
        seen = p.number
        if p.number == number:
            return p, path
    raise UserError(f"there is no paragraph {number} (the input has {seen})", path)


# ---- the decisions and their margins ---------------------------------------------------------

@dataclass
class Decisions:
    """One window of a paragraph (``LearntTokenizer._spans``; the whole paragraph unless it is
    longer than ``model.WINDOW``): its character labels with everything that decided them."""

    cps: np.ndarray        # code points
    E: np.ndarray          # emissions [n, L] (NEG: not allowed)
    labels: np.ndarray     # the Viterbi labels
    M: np.ndarray          # max-marginals [n, L]
    margins: np.ndarray    # each label's margin against the best other allowed label
    text: str = ""         # its characters (for the feature names)
    rl: np.ndarray = field(default_factory=lambda: F.NO_RULES)   # the rules' labels (``features.rule_labels``, group RULES)


def decide(tok, cps: np.ndarray, rl: np.ndarray = F.NO_RULES) -> Decisions:
    """The labels of the characters ``cps`` (one window) under the learnt tokenizer ``tok``,
    with their max-marginals and margins."""

    E = char_emissions(cps, F.tables(), tok.known, tok.bits, tok.feats, rl, tok.W)
    favour_sentence_ends(E, tok.sentence_bias)
    labels = tag_emissions(E, tok.T)
    M = np.empty_like(E)
    margins = np.empty(len(cps))
    char_margins(E, tok.T, labels, M, margins)
    return Decisions(cps, E, labels, M, margins, rl=rl)


class _Recording(LearntTokenizer):
    """A learnt tokenizer that keeps the decisions of the window it labelled last."""

    def __init__(self, tok: LearntTokenizer):
        super().__init__(tok.W, tok.T, tok.known, tok.bits, tok.mwt, tok.feats, tok.sentence_bias)
        self.window: Decisions | None = None

    def _labels(self, cps: np.ndarray, pos: int, rl: np.ndarray) -> np.ndarray:
        self.window = decide(self, cps, rl)
        return self.window.labels


def windows(tok, text: str):
    """``(pos, decisions, token starts, ends, sentence ends, deciding characters)`` for each
    window of the block ``text``, as the tokenizer labels it (positions within the window)."""
    rec = _Recording(tok)
    cps = F.code_points(text)
    for pos, starts, ends, sent_end in rec._spans(cps, _space(cps), F.rule_labels(text, tok.feats),
                                                  addresses(text)):
        d = rec.window
        d.text = text[pos:pos + len(d.cps)]
        yield pos, d, starts, ends, sent_end, deciding_chars(d.labels, ends)


def _space(cps: np.ndarray) -> np.ndarray:
    cls, _ = F.tables()
    space = np.zeros(len(cps), dtype=np.bool_)
    bmp = cps < 0x10000
    space[bmp] = cls[cps[bmp]] == 1
    return space


def deciding_chars(labels: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each token (its end, exclusive), the character whose label ended it: its last one
    when labelled T or S, else the first whitespace labelled W after it."""
    n = len(labels)
    if len(ends) == 0:
        return ends.copy()
    idx = np.where(labels == 3, np.arange(n), n)
    next_w = np.append(np.minimum.accumulate(idx[::-1])[::-1], n)
    last = ends - 1
    by_label = (labels[last] == 1) | (labels[last] == 2)
    return np.where(by_label | (next_w[ends] >= n), last, next_w[ends])


def boundary_margins(d: Decisions, decided: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The TokMargin (a boundary against none) and SentMargin (S against N or T; NaN where the
    label is not S) of the decisions at the characters ``decided``."""
    M = d.M[decided]
    allowed = d.E[decided] > NEG / 2
    bound = np.where(allowed[:, 1:], M[:, 1:], -np.inf).max(axis=1)
    none = np.where(allowed[:, 0], M[:, 0], -np.inf)
    sent = np.where(d.labels[decided] == 2, d.margins[decided], np.nan)
    return bound - none, sent


# ---- tokenize --scores -----------------------------------------------------------------------

def scored_sentences(tok, lines, split: str):
    """``iter_sentences`` with the tokenizer's margins: (sentence, TokMargin per token,
    SentMargin of its last token or NaN)."""

    scorer = ScoringTokenizer(tok)
    for sent in iter_sentences(lines, scorer, split):
        ms = [scorer.margins.pop(t.start) for t in sent.tokens]
        yield sent, [m[0] for m in ms], ms[-1][1]


class ScoringTokenizer(_Recording):
    """A learnt tokenizer that keeps each token's margins (TokMargin, SentMargin) by its start
    offset in the input, in ``margins``, as it goes (the caller takes them out)."""

    def __init__(self, tok: LearntTokenizer):
        super().__init__(tok)
        self.margins: dict[int, tuple[float, float]] = {}
        self._offset = 0

    def _split(self, text: str, offset: int):
        self._offset = offset
        yield from super()._split(text, offset)

    def _spans(self, cps: np.ndarray, space: np.ndarray, rl: np.ndarray = F.NO_RULES, keep=()):
        for pos, starts, ends, sent_end in super()._spans(cps, space, rl, keep):
            d = self.window
            tm, sm = boundary_margins(d, deciding_chars(d.labels, ends))
            base = self._offset + pos
            for a, t, s in zip(starts.tolist(), tm.tolist(), sm.tolist()):
                self.margins[base + a] = (t, s)
            yield pos, starts, ends, sent_end


def _number(m: float) -> str:
    return "inf" if m == float("inf") else f"{m:.3f}"


def write_scored(sent, tok_margins, sent_margin: float, out, start: int) -> None:
    """One sentence as ``write_conllu`` writes it, with ``TokMargin=`` in each token's MISC
    and ``SentMargin=`` in its last token's (when it ends a sentence)."""

    buf = io.StringIO()
    write_conllu([sent], buf, start=start)
    lines = buf.getvalue().split("\n")
    k = 0
    skip = 0
    last = len(sent.tokens) - 1
    for i, line in enumerate(lines):
        if not line or line[0] == "#":
            continue
        if skip:
            skip -= 1
            continue
        cols = line.split("\t")
        if "-" in cols[0]:
            a, b = cols[0].split("-")
            skip = int(b) - int(a) + 1
        misc = set_key(cols[9], "TokMargin", _number(tok_margins[k]))
        if k == last and not np.isnan(sent_margin) and not sent.cut:
            misc = set_key(misc, "SentMargin", _number(sent_margin))
        cols[9] = misc
        lines[i] = "\t".join(cols)
        k += 1
    out.write("\n".join(lines))


# ---- explain ---------------------------------------------------------------------------------

def explanations(model, unit, path: str = "<input>", only: int | None = None) -> Iterator[TokenExplanation]:
    """Why each token of a paragraph (a ``Paragraph`` or a str) ends where it does, one token at a
    time (``only``: just the token of that 1-based index)."""
    text = unit.text if isinstance(unit, Paragraph) else unit
    tok = model.tokenizer
    k = 0
    for pos, d, starts, ends, _, decided in windows(tok, text):
        prep = None
        for a, b, c in zip(starts.tolist(), ends.tolist(), decided.tolist()):
            k += 1
            if only is not None and k != only:
                continue
            if prep is None:
                prep = F.prepare(d.cps, F.tables(), tok.known, d.rl)
            # the boundary against none (TokMargin); a sentence end against the best other label
            against = 0 if d.labels[c] != 2 and d.E[c, 0] > NEG / 2 else None
            yield explain_char(tok, d, c, prep, k, text[pos + a:pos + b], against)
    if only is not None and only > k:
        raise UserError(f"--token {only}: the paragraph has {k} tokens", path,
                        unit.line if isinstance(unit, Paragraph) else None)


def explain_chars(model, text: str, positions) -> list[TokenExplanation]:
    """The decisions at the given character positions (0-based, in ``text``, one block), a
    boundary or not; each explanation's index is the position."""
    tok = model.tokenizer
    wins = [(pos, d) for pos, d, *_ in windows(tok, text)]
    out = []
    for i in positions:
        if not 0 <= i < len(text):
            raise UserError(f"character {i} is outside the text (of {len(text)} characters)")
        pos, d = next((p, d) for p, d in reversed(wins) if p <= i)   # the window that kept it
        prep = F.prepare(d.cps, F.tables(), tok.known, d.rl)
        out.append(explain_char(tok, d, i - pos, prep, i, text[i]))
    return out


def explain_char(tok, d: Decisions, i: int, prep, index: int, word: str,
                 against: int | None = None) -> TokenExplanation:
    """The label at character ``i``, its runner-up (the best other allowed label, or
    ``against``) and margin, and what pushes each way."""
    L = d.E.shape[1]
    y = int(d.labels[i])
    others = [z for z in range(L) if z != y and d.E[i, z] > NEG / 2]
    if not others:
        return TokenExplanation(index, word, LABEL_NAMES[y], None, float("inf"), [])
    r = against if against in others else max(others, key=lambda z: (d.M[i, z], -z))
    margin = float(d.M[i, y] - d.M[i, r])
    row = np.empty(F.N_FEATURES, dtype=np.int32)
    nf = F.char_row(i, d.cps, prep, np.uint64((1 << tok.bits) - 1), tok.feats, row)
    names = feature_names(d.text, i, prep, tok.feats)
    pushes: list[Push] = []
    for j in range(nf):
        w = float(tok.W[row[j], y] - tok.W[row[j], r])
        if w != 0.0:
            pushes.append(Push(names[j], w))
    T = tok.T
    n = len(d.labels)
    prev = int(d.labels[i - 1]) if i else L
    nxt = int(d.labels[i + 1]) if i + 1 < n else L
    pushes += transition_pushes(T, prev, y, r, nxt, lambda k: "<S>" if k == L else "NTSW"[k])
    rest = margin - sum(p.weight for p in pushes)
    if abs(rest) > 1e-9 * (1.0 + abs(margin)):
        pushes.append(Push("the other characters' labels (the runner-up's best sequence differs "
                           "elsewhere too)", rest))
    pushes.sort(key=lambda p: -abs(p.weight))
    return TokenExplanation(index, word, LABEL_NAMES[y], LABEL_NAMES[r], margin, pushes)


# ---- feature names ---------------------------------------------------------------------------

def _char(c: int) -> str:
    if c == -1:
        return "<s>"
    if c == -2:
        return "</s>"
    ch = chr(c)
    if ch == " ":
        return "\u2423"
    if ch.isspace() or not ch.isprintable():
        return f"U+{c:04X}"
    return ch


def _known(km, i: int, n: int) -> tuple[int, int, int]:
    """(ends, starts, across): the longest known tokens ending at i, starting at i+1 and running
    across the boundary after i, as ``features.char_row`` finds them."""
    ends = cross = starts = 0
    for back in range(F.MAX_KNOWN):
        j0 = i - back
        if j0 < 0:
            break
        m = int(km[j0])
        for l in range(1, F.MAX_KNOWN + 1):
            if m & (1 << (l - 1)):
                e = j0 + l - 1
                if e == i and l > ends:
                    ends = l
                elif e > i and l > cross:
                    cross = l
    if i + 1 < n:
        m = int(km[i + 1])
        starts = max((l for l in range(1, F.MAX_KNOWN + 1) if m & (1 << (l - 1))), default=0)
    return ends, starts, cross


def feature_names(text: str, i: int, prep, feats: int = 0) -> list[str]:
    """A readable name for each of the N_FEATURES features of the decision after character i:
    its template and the values it saw (lower-cased characters, classes, known-token lengths,
    the letter/digit runs around the boundary)."""
    lc, cl, km, nxt, run, _, _, syl, bcl, url, rul, _ = prep
    n = len(text)
    P = 4
    c = lambda d: _char(int(lc[i + P + d]))                       # noqa: E731
    cs = lambda a, b: "".join(c(d) for d in range(a, b + 1))     # noqa: E731
    k = lambda d: F.CLASSES[int(cl[i + P + d])]                  # noqa: E731
    ks = lambda a, b: ",".join(k(d) for d in range(a, b + 1))    # noqa: E731
    j = int(nxt[i + 1]) if i + 1 < n else n
    ncl = F.CLASSES[int(cl[j + P])] if j < n else "pad"
    nlc = _char(int(lc[j + P])) if j < n else "</s>"
    inrun = lambda p: 0 <= p < n and 2 <= int(cl[p + P]) <= 7   # noqa: E731

    def word_ending(p):
        if not inrun(p):
            return "''"
        a = p
        while inrun(a - 1):
            a -= 1
        return repr("".join(_char(int(lc[q + P])) for q in range(a, p + 1)))

    def word_starting(p):
        if not inrun(p):
            return "''"
        b = p
        while inrun(b + 1):
            b += 1
        return repr("".join(_char(int(lc[q + P])) for q in range(p, b + 1)))

    ends, starts, cross = _known(km, i, n)
    r0 = int(run[i])
    r1 = int(run[i - 1]) if i > 0 else 0
    case0 = _char(ord(text[i]))
    case1 = _char(ord(text[i + 1])) if i + 1 < n else "</s>"
    wb, wb1, wa = word_ending(i), word_ending(i - 1) if i > 0 else "''", word_starting(j)
    names = ["bias"]
    names += [f"char[{d:+d}]={c(d)}" if d else f"char[0]={c(0)}" for d in range(-3, 4)]
    names += [f"chars[-2..-1]={cs(-2, -1)}", f"chars[-1..0]={cs(-1, 0)}", f"chars[0..+1]={cs(0, 1)}",
              f"chars[+1..+2]={cs(1, 2)}", f"chars[-2..0]={cs(-2, 0)}", f"chars[-1..+1]={cs(-1, 1)}",
              f"chars[0..+2]={cs(0, 2)}", f"chars[+1..+3]={cs(1, 3)}"]
    names += [f"classes[0..+1]={ks(0, 1)}", f"classes[-1..0]={ks(-1, 0)}", f"classes[+1..+2]={ks(1, 2)}",
              f"class[0]={k(0)}", f"class[+1]={k(1)}", f"classes[0..+2]={ks(0, 2)}",
              f"classes[-2..0]={ks(-2, 0)}", f"classes[-1..+1]={ks(-1, 1)}", f"classes[-2..+2]={ks(-2, 2)}",
              f"class[0]={k(0)} char[+1]={c(1)}", f"char[0]={c(0)} class[+1]={k(1)}",
              f"cased char[0]={case0}", f"cased char[+1]={case1}",
              f"class[0]={k(0)} class[next]={ncl} class[+1]={k(1)}",
              f"char[0]={c(0)} char[next]={nlc} class[+1]={k(1)}",
              f"run[0]={r0} class[+1]={k(1)} class[next]={ncl}",
              f"known ending/starting/across={ends}/{starts}/{cross}",
              f"known ending={ends} class[+1]={k(1)}", f"known starting={starts} class[0]={k(0)}",
              f"known across={cross} classes[0..+1]={ks(0, 1)}",
              f"known ending={ends} chars[0..+1]={cs(0, 1)}", f"known across={cross} chars[0..+1]={cs(0, 1)}",
              f"char[0]={c(0)} class[next]={ncl} run[0]={r0}",
              f"classes[-1..0]={ks(-1, 0)} class[next]={ncl}",
              f"word before={wb} char[+1]={c(1)}", f"word before={wb} class[next]={ncl} class[+1]={k(1)}",
              f"word after={wa} class[0]={k(0)}", f"word before={wb} word after={wa} char[+1]={c(1)}",
              f"run[-1]={r1} char[0]={c(0)} class[next]={ncl}", f"word before char[0]={wb1} char[0]={c(0)}",
              f"word before char[0]={wb1} word after={wa} class[0]={k(0)}"]
    if feats & F.SHORT:
        s1, b1 = (int(syl[i - 1]), F.CLASSES[int(bcl[i - 1])]) if i > 0 else (0, "pad")
        s0, b0 = int(syl[i]), F.CLASSES[int(bcl[i])]
        names += [f"letters before char[0]={s1} class before them={b1} char[0]={c(0)}",
                  f"letters before char[0]={s1} class before them={b1} class[0]={k(0)} class[next]={ncl} "
                  f"class[+1]={k(1)}",
                  f"letters ending at char[0]={s0} class before them={b0} char[+1]={c(1)}",
                  f"letters ending at char[0]={s0} class before them={b0} class[+1]={k(1)} class[next]={ncl}"]
    if feats & F.URL:
        u = ("no", "web", "e-mail")[int(url[i])]
        names += [f"address={u} classes[0..+1]={ks(0, 1)}", f"address={u} chars[0..+1]={cs(0, 1)}"]
    if feats & F.RULES:
        rn = ("none", "N", "T", "S", "W")
        r0, r1 = rn[int(rul[i])], rn[int(rul[i - 1])] if i > 0 else "none"
        names += [f"rules={r0} classes[0..+1]={ks(0, 1)}", f"rules={r0} chars[0..+1]={cs(0, 1)}",
                  f"rules={r0} rules[-1]={r1} class[next]={ncl}"]
    assert len(names) == F.n_features(feats)
    return names
