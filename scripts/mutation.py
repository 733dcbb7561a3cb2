"""A repeatable mutation check: plant one plausible bug at a time and see whether the tests
catch it.

Each mutation replaces one exact snippet (which must occur exactly once) in one package file of
a private copy of the working tree, then runs the named test files there with a fresh numba
cache (the copy's own ``__pycache__``) and no corpus: ``$STRUCTKIT_DATA`` is dropped and the
data cache is an empty folder, so the tests that need a corpus skip and every bug must be caught
by tests that ship their own data. A mutation is *caught* when pytest reports failing tests;
*survived* when the tests pass. The unmutated copy must pass the same test files first.

    python scripts/mutation.py                 # all mutations, 2 at a time
    python scripts/mutation.py --only kbest    # names containing "kbest"
    python scripts/mutation.py --list

``make mutation`` runs it (it is not part of ``make test``). mutmut was considered, but it
mutates in place and its runner does not isolate numba's on-disk cache, which would hand the
mutated run the unmutated compiled kernels; a copy per mutation avoids both.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str


M = Mutation
MUTATIONS = [
    # ---- the eight issue-19 survivors --------------------------------------------------------
    M("conlleval-i-after-e", "structkit/spans.py",
      'if tag == "I" and prev in ("O", "E"):', 'if tag == "I" and prev in ("O",):',
      ("tests/test_conlleval.py",), "I after E no longer starts a phrase"),
    M("conlleval-dot-end", "structkit/spans.py",
      'if prev != "O" and prev != "." and prev_type != kind:', 'if prev != "O" and prev_type != kind:',
      ("tests/test_conlleval.py",), "the '.' exemption dropped from the end rule"),
    M("conlleval-dot-start", "structkit/spans.py",
      'if tag != "O" and tag != "." and prev_type != kind:', 'if tag != "O" and prev_type != kind:',
      ("tests/test_conlleval.py",), "the '.' exemption dropped from the start rule"),
    M("kbest-tie-order", "structkit/sequence/search/kbest.py",
      "if not (v > hs[t, y, k - 1]):", "if not (v >= hs[t, y, k - 1]):",
      ("tests/sequence/test_kbest.py",), "> became >= in the merge's cut at k: ties leave the documented order"),
    M("parser-template-q2t", "structkit/parse/arcstandard.py",
      '("q0t", "q1t", "q2t")', '("q0t", "q1t", "q1t")',
      ("tests/parse/test_parser.py", "tests/parse/test_parser_features.py"), "q2t became q1t in a template"),
    M("parser-distance-cap", "structkit/parse/arcstandard.py",
      "dist = min(s0 - s1, 5) if s0 - s1 < 10 else 6", "dist = min(s0 - s1, 4) if s0 - s1 < 10 else 6",
      ("tests/parse/test_parser.py", "tests/parse/test_parser_features.py"), "the s0-s1 distance cap 5 became 4"),
    M("larank-newest", "structkit/sequence/learn/larank.py",
      "m = s if kind == NEW else seen[np.random.randint(0, n_seen)]",
      "m = s if kind == NEW else seen[n_seen - 1]",
      ("tests/sequence/test_larank.py", "tests/sequence/test_larank_reference.py"),
      "LaRank's PROCESSOLD always reprocesses the newest example"),
    M("olarank-processold-no-viterbi", "structkit/sequence/learn/olarank.py",
      "    if mode < 2:\n        _, vloss = decode_kbest(", "    if mode == 0:\n        _, vloss = decode_kbest(",
      ("tests/sequence/test_olarank.py", "tests/sequence/test_olarank_reference.py"),
      "OLaRankExact's PROCESSOLD ignores the new Viterbi sequence"),
    M("olarank-optimize-decodes", "structkit/sequence/learn/olarank.py",
      "    if mode < 2:\n        _, vloss = decode_kbest(", "    if mode <= 2:\n        _, vloss = decode_kbest(",
      ("tests/sequence/test_olarank.py", "tests/sequence/test_olarank_reference.py"),
      "OLaRankExact's OPTIMIZE searches all sequences, not only the support vectors"),
    M("olarank-greedy-optimize-all", "structkit/sequence/learn/olarank.py",
      "if (not support_only or c == gold or B[j, c] > 0.0) and (lo < 0 or g < glo):",
      "if lo < 0 or g < glo:",
      ("tests/sequence/test_olarank.py", "tests/sequence/test_olarank_reference.py"),
      "OLaRankGreedy's OPTIMIZE is not restricted to the support vectors"),
    # ---- one or more per kernel file ---------------------------------------------------------
    M("viterbi-end-transition", "structkit/sequence/search/viterbi.py",
      "s = delta[n - 1, y] + T[y, L]", "s = delta[n - 1, y]",
      ("tests/sequence/test_kernels.py",), "the transition into the end state is ignored"),
    M("lookahead-dp-transition", "structkit/sequence/search/lookahead.py",
      "best = max(best, (E[kk, z] + T[y, z]) + B1[j + 1, z])",
      "best = max(best, E[kk, z] + B1[j + 1, z])",
      ("tests/sequence/test_lookahead.py",), "the window DP drops the transition scores"),
    M("perceptron-end-update", "structkit/sequence/learn/perceptron.py",
      "for t in range(n + 1):\n                gp, gc, pp, pc = transition_pairs(",
      "for t in range(n):\n                gp, gc, pp, pc = transition_pairs(",
      ("tests/sequence/test_kernels.py", "tests/test_model.py"),
      "the structured perceptron never updates the transition into the end state"),
    M("lookahead-stale-rows", "structkit/sequence/learn/lookahead.py",
      "fresh = k + 1\n", "fresh = fresh\n",
      ("tests/sequence/test_lookahead.py",), "rows after an update keep scores from the old weights"),
    M("kbest-pa-clip", "structkit/sequence/learn/kbest.py",
      "d = min(lj / nrm, C)", "d = lj / nrm",
      ("tests/sequence/test_kbest_learners.py",), "the PA step is not clipped at C"),
    M("smo-step-clip", "structkit/sequence/chain.py",
      "        delta = min(beta[hi], gap / den)\n", "        delta = gap / den\n",
      ("tests/sequence/test_smo.py", "tests/sequence/test_chain_weights.py"),
      "the SMO pair step is not clipped at beta (eq. 20)"),
    M("parser-average", "structkit/parse/learn.py",
      "U[h, a] += sign * c", "U[h, a] += sign",
      ("tests/parse/test_parser.py",), "the parser's averaging accumulator ignores the counter"),
    M("rerank-margin", "structkit/rerank/learner.py",
      "return (sy - sz < lam * dz) or (sy == sz and z < y)", "return (sy - sz < lam) or (sy == sz and z < y)",
      ("tests/rerank/test_rerank.py",), "the reranker's margin is lambda, not lambda * loss"),
    M("viterbi-ws-ties", "structkit/sequence/search/viterbi.py",
      "c = s > top[y]", "c = s >= top[y]",
      ("tests/sequence/test_kernels.py", "tests/sequence/test_fastpath.py"),
      "Viterbi (and the fast path, which decodes with viterbi_ws) keeps the highest best predecessor on ties"),
    M("fast-scan-medline", "structkit/sequence/search/fast.py",
      "_starts_with(data, k, le, docstart) or _starts_with(data, k, le, medline):",
      "_starts_with(data, k, le, docstart):",
      ("tests/sequence/test_fastpath.py",), "the scanner reads ###MEDLINE: lines as tokens"),
    M("fast-key-radix", "structkit/sequence/search/fast.py",
      "key = key * atom_radix[j, q] + v", "key = key * (atom_radix[j, q] + 1) + v",
      ("tests/sequence/test_fastpath.py",), "multi-atom template keys mixed with the wrong radix"),
    M("fast-write-sep", "structkit/sequence/search/fast.py",
      "sep = 9 if tab[t] else 32", "sep = 32",
      ("tests/sequence/test_fastpath.py",), "a row whose column holds a space is written with spaces"),
    M("rerank-edit-substitution", "structkit/rerank/loss.py",
      "best = prev[j - 1] + (0 if wa == ref_ids[b0 + j - 1] else 1)",
      "best = prev[j - 1] + (0 if wa == ref_ids[b0 + j - 1] else 2)",
      ("tests/rerank/test_rerank.py", "tests/test_nbest.py"), "a substitution costs 2 in the word edit distance"),
    # ---- issue 25: the code of issues 19-24 (the first four were survivors) -------------------
    M("beam-s1-rightmost-label", "structkit/parse/beam.py",
      "_row(S, it, LB, s1r1)", "_row(S, it, LB, s1l1)",
      ("tests/parse/test_beam_features.py",), "a label template reads s1's leftmost child's label for its rightmost"),
    M("beam-max-violation-ties", "structkit/parse/beam.py",
      "if v >= vmax:", "if v > vmax:",
      ("tests/parse/test_beam_parser.py",), "max-violation takes the first of equal violations, not the last"),
    M("beam-second-rightmost", "structkit/parse/beam.py",
      "s0, s1, a - L, RC1, RC2, NR, SR", "s0, s1, a - L, RC1, RC1, NR, SR",
      ("tests/parse/test_beam_parser.py", "tests/parse/test_beam_features.py"),
      "RIGHT never moves the old rightmost child to second-rightmost"),
    M("beam-update-prefix", "structkit/parse/beam.py",
      "while t0 <= tmax and gold[t0] == path[t0]:", "while t0 <= tmax and gold[t0] == path[t0] or t0 < 3:",
      ("tests/parse/test_beam_parser.py",), "the update skips steps the two sequences do not share"),
    M("conllu-set-key-order", "structkit/io/conllu.py",
      '            items[i] = f"{key}={value}"\n            return "|".join(items)\n',
      '            del items[i]\n            return "|".join(items + [f"{key}={value}"])\n',
      ("tests/test_conllu_tagging.py",), "set_key moves a replaced key to the end"),
    M("fetch-download-sha256", "structkit/datasets/fetch.py",
      'f"expected {d.sha256[:16]}...: not the registered file")\n                continue\n',
      'f"expected {d.sha256[:16]}...: not the registered file")\n',
      ("tests/test_datasets.py",), "a download whose sha256 differs is kept (no fall-back to the next URL)"),
    M("projective-first-head", "structkit/parse/projective.py",
      "        if first_head[d - 1] == 0:\n            first_head[d - 1] = h\n",
      "        first_head[d - 1] = h\n",
      ("tests/parse/test_projective.py",), "a lifted arc's head label is its last head's, not its first's"),
    M("projective-tie-rightmost", "structkit/parse/projective.py",
      "d = min(candidates, key=lambda k: (abs(new_heads[k - 1] - k), k))",
      "d = min(candidates, key=lambda k: (abs(new_heads[k - 1] - k), -k))",
      ("tests/parse/test_projective.py",), "ties between equally short non-projective arcs go to the rightmost"),
    M("text-lines-paragraphs", "structkit/text/tokenize.py",
      "yield offset, line, after_blank\n            after_blank = False\n",
      "yield offset, line, after_blank\n",
      ("tests/test_tokenize.py", "tests/test_text_cli.py"),
      "split=lines: every line opens a paragraph, not only the first after a blank line"),
    M("text-conllu-range-misc", "structkit/io/document.py",
      '{misc}")\n            misc = "_"\n', '{misc}")\n',
      ("tests/test_tokenize.py", "tests/test_text_cli.py"),
      "SpaceAfter=No of a multiword token is written on its last word too"),
    M("batch-empty-input", "structkit/io/blocks.py",
      "if buf or line == 1:", "if buf:",
      ("tests/test_batch.py",), "an empty input yields no block (no 'empty file' report)"),
    M("batch-relocated-line", "structkit/batch.py",
      "return UserError(e.message, e.path, e.line + first_line - 1)",
      "return UserError(e.message, e.path, e.line + first_line)",
      ("tests/test_batch.py",), "an error in a later block names the line after the bad one"),
    M("selection-latest-tie", "structkit/learn/selection.py",
      "if self.best_epoch is None or self.sign * s > self.sign * self.best_score:",
      "if self.best_epoch is None or self.sign * s >= self.sign * self.best_score:",
      ("tests/test_selection.py", "tests/test_loop.py"), "a dev-score tie keeps the latest epoch, not the earliest"),
    M("selection-patience", "structkit/learn/selection.py",
      "epoch - self.best_epoch >= self.patience", "epoch - self.best_epoch > self.patience",
      ("tests/test_selection.py",), "patience stops one epoch late"),
    M("selection-split", "structkit/learn/selection.py",
      "dev = [i for i in range(n) if (i + 1) % step == 0]", "dev = [i for i in range(n) if i % step == 0]",
      ("tests/test_selection.py",), "--dev-split holds out the 1st, (k+1)-th, ... sentences, not every k-th"),
    M("max-marginals-end", "structkit/sequence/search/viterbi.py",
      "beta[n - 1, y] = T[y, L]", "beta[n - 1, y] = 0.0",
      ("tests/sequence/test_margins.py", "tests/sequence/test_explain.py"), "max-marginals ignore the transition into the end state"),
    M("margins-self", "structkit/sequence/search/viterbi.py",
      "if z != y and M[t, z] > other:", "if M[t, z] > other:",
      ("tests/sequence/test_margins.py", "tests/sequence/test_explain.py"), "a label's margin is taken against itself too (never above 0)"),
    # ---- issue 38: the code of issues 27-29 (tokenizer, morphology, pipeline, Doc, rendering,
    # cards, recipes, the CoNLL 2018 scorer); the first seven survived the suite before it ------
    M("annotate-upos-xpos-swap", "structkit/morph/component.py",
      "s.fill_columns({2: lemmas, 3: upos, 4: xpos, 5: feats})", "s.fill_columns({2: lemmas, 3: xpos, 4: upos, 5: feats})",
      ("tests/pipeline/test_pipeline_expected.py", "tests/pipeline/test_components.py"),
      "annotate writes XPOS into the UPOS column and UPOS into XPOS"),
    M("pipeline-jackknife-sees-fold", "structkit/pipeline/train.py",
      "write_sentences([s for i, s in enumerate(sents) if i % folds != k], path)", "write_sentences(sents, path)",
      ("tests/pipeline/test_pipeline_units.py",), "each jackknife fold's morph model is trained on the held-out fold too"),
    M("tok-known-fold-off-by-one", "structkit/tokenizer/model.py",
      "return [tables[k % folds] for k in range(len(paragraphs))]",
      "return [tables[(k + 1) % folds] for k in range(len(paragraphs))]",
      ("tests/tokenizer/test_tokenize_gold.py",), "a paragraph gets another fold's known-token table (its own tokens leak)"),
    M("mwt-tie-split", "structkit/tokenizer/mwt.py",
      "seen[form] = best if n > whole else (form,)", "seen[form] = best if n >= whole else (form,)",
      ("tests/tokenizer/test_tokenize_gold.py",), "a form seen as often whole as split is remembered as split"),
    M("doc-sentence-end", "structkit/io/document.py",
      "        s.end = pos\n", "        s.end = pos - 1\n",
      ("tests/test_doc.py",), "a Doc read from CoNLL-U ends each sentence one character short"),
    M("render-legend-unescaped", "structkit/rendering.py",
      "f'{escape(typ, quote=False)}</span>')", "f'{typ}</span>')",
      ("tests/test_doc.py",), "the legend writes a MISC span type into the HTML unescaped"),
    M("ud-align-map-reversed", "structkit/eval/ud.py",
      "to_gold = dict((s, g) for g, s in pairs)", "to_gold = dict(pairs)",
      ("tests/test_eval_ud.py",), "eval --task ud maps gold words to system words where it means the reverse"),
    M("annotate-row-line", "structkit/io/document.py",
      'self._lines[self._word_at[k]] = "\\t".join(row)', 'self._lines[k] = "\\t".join(row)',
      ("tests/pipeline/test_pipeline_expected.py",), "a word's new columns are written over the k-th line (comments not skipped)"),
    M("annotate-sent-id-blocks", "structkit/io/batchjob.py",
      "int(m.group(2)) + sentences_before", "int(m.group(2)) + sentences_before - 1",
      ("tests/pipeline/test_pipeline_expected.py",), "sentence ids of a later block repeat the last id of the block before"),
    # ---- issue 39: the component contract -------------------------------------------------------
    M("chain-requires-unchecked", "structkit/components.py",
      "missing = [x for x in LAYERS if x in c.requires - provided]", "missing = []",
      ("tests/pipeline/test_components.py",), "a component that reads what nothing before it gives is not refused"),
    M("chain-tagset-unchecked", "structkit/components.py",
      'c.check_upstream(_last_giving(comps[1:k], c.requires - {"words"}))', "c.check_upstream(None)",
      ("tests/pipeline/test_components.py",), "a parser after a tagger whose tags it never saw is not refused"),
    M("chain-order-reversed", "structkit/components.py",
      "        for c in self.analysers:\n", "        for c in reversed(self.analysers):\n",
      ("tests/pipeline/test_components.py",), "the components after the tokenizer run last first"),
    M("pipeline-keeps-worse-parser", "structkit/pipeline/train.py",
      'return max(scores, key=lambda k: (scores[k]["las"], k == "jackknifed"))',
      'return min(scores, key=lambda k: (scores[k]["las"], k == "jackknifed"))',
      ("tests/pipeline/test_pipeline_units.py",), "the pipeline keeps the parser with the lower dev LAS"),
    M("mwt-rule-case", "structkit/tokenizer/mwt.py",
      "for a, b in zip(token.lower(), first.lower()):", "for a, b in zip(token, first):",
      ("tests/tokenizer/test_tokenize_gold.py",), "the multiword edit rule's shared prefix is case-sensitive"),
    M("tok-gold-sentence-end", "structkit/tokenizer/gold.py",
      "        labels[last_end] = S\n", "        labels[last_end] = T\n",
      ("tests/tokenizer/test_tokenize_gold.py",), "a sentence's last character is labelled a token end, not a sentence end"),
    M("tok-gold-newpar", "structkit/tokenizer/gold.py",
      "if cur is None or opens_paragraph(sent) or len(cur.text) >= max_chars:",
      "if cur is None or len(cur.text) >= max_chars:",
      ("tests/tokenizer/test_tokenize_gold.py",), "# newpar no longer starts a paragraph of the training text"),
    M("tok-known-at-end", "structkit/tokenizer/features.py",
      "                if j + l > n:\n                    break\n                c = cps[j + l - 1]",
      "                if j + l >= n:\n                    break\n                c = cps[j + l - 1]",
      ("tests/tokenizer/test_tokenize_gold.py", "tests/tokenizer/test_tokenize_kernels.py"),
      "a known token that ends the text is not looked up"),
    M("morph-fold-own-lexicon", "structkit/morph/task.py",
      "enc = encode(forms, tables, lambda k: folds[k % FOLDS], types, gold_t, gold_r)",
      "enc = encode(forms, tables, lambda k: folds[(k + 1) % FOLDS], types, gold_t, gold_r)",
      ("tests/morph/test_morph_folds.py",), "a training sentence looks its words up in a lexicon that holds them"),
    M("morph-rule-lower-tie", "structkit/lattice/rules.py",
      "if k1 > k0:", "if k1 >= k0:",
      ("tests/morph/test_morph_rules.py",), "a lemma rule lower-cases the form where keeping its case shares as much"),
    M("morph-rule-add-end", "structkit/lattice/rules.py",
      "return k, (lower, i, lemma[:j], len(f) - i - k, lemma[j + k:])",
      "return k, (lower, i, lemma[:j], len(f) - i - k, lemma[j + k + 1:])",
      ("tests/morph/test_morph_rules.py",), "a lemma rule drops the first character it should add at the end"),
    M("doc-join-space-after", "structkit/io/document.py",
      "elif sents[k - 1].tokens and not sents[k - 1].tokens[-1].space_after:",
      "elif sents[k - 1].tokens and sents[k - 1].tokens[-1].space_after:",
      ("tests/test_doc.py",), "sentences are joined by a space exactly where the last token has SpaceAfter=No"),
    M("render-arc-levels-strict", "structkit/rendering.py",
      "if min(bd, bh) >= lo and max(bd, bh) <= hi:", "if min(bd, bh) > lo and max(bd, bh) < hi:",
      ("tests/test_doc.py",), "an arc sharing an end with a shorter one is drawn at its level (they overlap)"),
    M("card-test-scored-on-dev", "structkit/card.py",
      'card.setdefault(k, {})["scores"], made = score_model(task, path, p)',
      'card.setdefault(k, {})["scores"], made = score_model(task, path, readable[0][1])',
      ("tests/test_model_card.py",), "the card's test scores are the dev file's"),
    M("recipe-no-seed", "structkit/recipes.py",
      '{"seed": 0, **options}', "dict(options)",
      ("tests/test_models_command.py",), "a recipe no longer records its seed (a rebuild may train another model)"),
    M("ud-mlas-children-self", "structkit/eval/ud.py",
      "nodes[nodes[i].head].children.append(i)", "nodes[i].children.append(i)",
      ("tests/test_eval_ud.py",), "MLAS compares a word with itself instead of its functional children"),
    M("ud-content-precision", "structkit/eval/ud.py",
      "sum(1 for w in system if not content or w.content)", "sum(1 for w in system)",
      ("tests/test_eval_ud.py",), "CLAS, MLAS and BLEX precision count every system word, not its content words"),
]


def tree_files() -> list[str]:
    """Tracked and untracked-but-not-ignored files of the working tree (what a commit would hold)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\0") if f and (ROOT / f).is_file()]


def make_copy(dst: Path, files: list[str]) -> None:
    for f in files:
        target = dst / f
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, target)


def run_tests(copy: Path, tests: tuple[str, ...], timeout: float) -> tuple[int, str]:
    # No corpus: every mutation must be caught by tests that need none (the corpus tests skip),
    # so $STRUCTKIT_DATA is dropped and the data cache is an empty folder of the copy.
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1",
           "XDG_CACHE_HOME": str(copy / ".no-data-cache")}
    env.pop("STRUCTKIT_NO_CACHE", None)
    env.pop("STRUCTKIT_DATA", None)
    try:
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                            *tests], cwd=copy, env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "timeout"
    tail = [ln for ln in p.stdout.splitlines() if ln.strip()][-1:] or [""]
    return p.returncode, tail[0]


def apply(copy: Path, m: Mutation) -> None:
    path = copy / m.file
    text = path.read_text()
    n = text.count(m.old)
    if n != 1:
        raise SystemExit(f"mutation {m.name}: the snippet occurs {n} times in {m.file} (expected 1); "
                         "update scripts/mutation.py")
    path.write_text(text.replace(m.old, m.new))


def existing(tests: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(t for t in tests if (ROOT / t).exists())


def check(m: Mutation, files: list[str], timeout: float) -> tuple[Mutation, str, str, float]:
    t0 = time.perf_counter()
    if not existing(m.tests):   # pytest with no file would run the whole suite
        return m, "error", "none of its test files exists", 0.0
    with tempfile.TemporaryDirectory(prefix=f"mut-{m.name}-") as tmp:
        copy = Path(tmp)
        make_copy(copy, files)
        apply(copy, m)
        code, tail = run_tests(copy, existing(m.tests), timeout)
    status = {0: "SURVIVED", 1: "caught"}.get(code, "error")
    return m, status, tail, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[],
                    help="run the mutations whose name contains this text (repeatable)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=900, help="seconds per mutation")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "results" / "mutation.txt"),
                    help="where a run of every mutation writes its report (not written with --only)")
    args = ap.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or any(o in m.name for o in args.only)]
    if args.list:
        for m in chosen:
            print(f"{m.name:28} {m.file:32} {m.why}")
        return 0
    files = tree_files()
    for m in chosen:  # fail fast on snippets that no longer match
        n = (ROOT / m.file).read_text().count(m.old)
        if n != 1:
            raise SystemExit(f"mutation {m.name}: the snippet occurs {n} times in {m.file}")
    report: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        report.append(line)

    tests = sorted({t for m in chosen for t in existing(m.tests)})
    with tempfile.TemporaryDirectory(prefix="mut-baseline-") as tmp:
        make_copy(Path(tmp), files)
        code, tail = run_tests(Path(tmp), tuple(tests), args.timeout)
    if code != 0:
        print(f"baseline: the unmutated tests fail ({tail}); fix them first", file=sys.stderr)
        return 2
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    say(f"baseline: {len(tests)} test files pass unmutated ({tail}); commit {commit}, "
        "no corpus ($STRUCTKIT_DATA unset, an empty data cache)")
    caught = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for m, status, tail, secs in pool.map(lambda m: check(m, files, args.timeout), chosen):
            caught += status == "caught"
            say(f"{status:9} {m.name:28} {m.why} [{', '.join(existing(m.tests))}: {tail}; {secs:.0f} s]")
    say(f"mutation: {caught}/{len(chosen)} caught")
    if not args.only:
        Path(args.out).write_text("\n".join(report) + "\n")
    return 0 if caught == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
