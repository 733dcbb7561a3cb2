"""The morph task's batch job (``structkit.batch``; ``structkit morph``): a block of CoNLL-U (or,
with --text, raw text tokenised into CoNLL-U) in, the same lines out with LEMMA, UPOS, XPOS and
FEATS of every word filled by the model (each column the model does not predict passed through
as read), and with ``--scores`` each part's margin in MISC."""
from __future__ import annotations

from itertools import islice

from structkit.io.batchjob import RawTextJob
from structkit.io.conllu import read_conllu, read_raw_text, set_key
from structkit.io.document import write_conllu
from structkit.morph.explain import (
    MISC_KEYS,
    PARTS,
    margin_text,
    predicted_parts,
    score,
)

BLOCK = 2000   # sentences analysed at a time


class MorphContext:
    conllu = True
    n_columns = None


def write_analysed(model, sents, out, scores: bool = False) -> None:
    """Each sentence's lines as read, the predicted parts of its word rows replaced (and with
    ``scores`` their margins set in MISC: LemmaMargin, UPOSMargin, XPOSMargin, FeatsMargin)."""

    forms = [[r[1] for r in s.rows] for s in sents]
    if scores:
        sc = score(model, forms)
        tags, rules, margins, enc = sc.tags, sc.rules, sc.margins, sc.enc
    else:
        tags, rules, enc = model.predict_ids(forms)
        margins = None
    parts = predicted_parts(model)
    t = model.tables
    i = 0
    for s, fs in zip(sents, forms):
        rows = s.rows
        for k in range(len(fs)):
            j = i + k
            upos, xpos, feats = t.tags[tags[j]].split("\t")
            vals = {"lemma": t.lemma(rules[j], enc.surfaces[j]), "upos": upos, "xpos": xpos, "feats": feats}
            new = {2 + PARTS.index(p): vals[p] or "_" for p in parts}
            if margins is not None:
                misc = rows[k][9]
                for p in parts:
                    misc = set_key(misc, MISC_KEYS[p], margin_text(margins[p][j]))
                new[9] = misc
            s.set_columns(k, new)
        i += len(fs)
    write_conllu(sents, out)


class MorphJob(RawTextJob):
    """morph: a block of CoNLL-U, or of raw text (``text``: a language code or a learnt
    ``structkit.text.Tokenizer``), analysed."""

    def __init__(self, model, scores: bool = False, text=None, split: str = "auto"):
        super().__init__(text, split)
        self.model = model
        self.scores = scores

    def sniff(self, name: str, head: bytes) -> MorphContext:
        return MorphContext()

    def stdin_context(self):
        return MorphContext()

    def output_format(self, inp, ctx) -> str:
        return "conllu"

    def process(self, ctx, name: str, data: bytes, first: bool) -> tuple[bytes, int, int]:
        import io

        stream = io.BytesIO(data)
        sents = (read_raw_text(name, self.text, self.split, stream=stream) if self.text is not None
                 else read_conllu(name, stream, check_text=False))
        out = io.StringIO()
        tokens = sentences = 0
        while True:
            block = list(islice(sents, BLOCK))
            if not block:
                break
            write_analysed(self.model, block, out, self.scores)
            tokens += sum(len(s.rows) for s in block)
            sentences += len(block)
        return self.block_output(out.getvalue(), first), tokens, sentences
