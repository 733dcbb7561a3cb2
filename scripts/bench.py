"""Speed benchmarks for sequence labelling (`make bench`). Writes results/bench.json and .md.

Measures, on CoNLL-2000 with the numba cache warm:
- `structkit train` wall time (10 epochs, exact perceptron), best of --repeat runs;
- the same features and epochs in CRFsuite's averaged perceptron (C), when python-crfsuite is
  installed (`make bench` installs it), run in this same command as the baseline;
- tagging throughput with a loaded model, feature extraction included (tokens/s);
- wall time of a second `structkit chunk` of a one-sentence file (start-up cost);
- end-to-end tagging of CoNLL-2000 test x10: the whole `structkit chunk` command, and in one
  process the block path (``tag_conll_bytes``) against the old reader/tag_batches/writer path,
  with two threads on two blocks against one; CRFsuite's tagger on the same features;
- lookahead training at depth 2 (`--algo lookahead`): exact window DP against the paper's
  depth-first brute-force search, 10 epochs on CoNLL-2000, both as whole `structkit train`
  commands and as the learning epochs alone (features computed once, outside the timing).

Every command is timed with a warm numba cache (``NUMBA_CACHE``; ``PARSER_CACHE`` for
``--parser-only``), recorded in the JSON and said in the report: untimed 1-epoch trainings on 50
sentences compile the kernels first. ``--report-only`` rewrites the .md from the JSON.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, dump_json, machine, numba_cache, structkit, write_slice  # noqa: E402

from structkit.config import resolve_data_path  # noqa: E402


NUMBA_CACHE = numba_cache("warm", "untimed 1-epoch trainings on 50 sentences (chunk; lookahead depth 2, dp and "
                                  "brute force; parser depths 0 and 1), and chunking them, compiled the kernels first; "
                                  "the in-process figures come after an untimed pass")
PARSER_CACHE = numba_cache("warm", "untimed 1-epoch trainings on 50 sentences at depths 0 and 1 compiled the kernels "
                                   "first; the parsing speed after an untimed pass over the test set")
# what the report says for a JSON from before the script recorded it
LEGACY_CACHE = numba_cache("not recorded", "this older run warmed only the chunk training and tagging (an untimed "
                                           "1-epoch training on 50 sentences and chunking them); the lookahead dp "
                                           "figure is the best of its runs, the first of which was not warmed; the "
                                           "brute-force and parser trainings ran once each with no warm-up")


def warm_parser(tmp: Path) -> None:
    """Untimed: the arc-standard parser trained for one epoch on 50 sentences at depths 0 and 1."""
    warm = write_slice(resolve_data_path("ptb-dep/train.conll"), tmp / "warm.conll", 50)
    for depth in (0, 1):
        structkit("train", "--task", "parse", "--algo", "lookahead", "--train", warm, "--depth", str(depth),
                  "--epochs", "1", "--model", tmp / "warm.model")


def crfsuite_baseline(train_path: str, epochs: int, keep: Path | None = None) -> dict | None:
    """CRFsuite's averaged perceptron on exactly our feature strings (plus its label bigrams);
    ``keep``: where to leave its model file (for the tagging comparison)."""
    try:
        import pycrfsuite
    except ImportError:
        return None
    from structkit.sequence.features import FeatureSpace
    from structkit.sequence.task import read_labelled

    c = read_labelled(train_path, None)
    fs = FeatureSpace("chunk")
    indptr, indices = fs.fit_transform(c.words, c.pos, c.offsets)
    names = [fs.feature_name(i) for i in range(fs.n_features)]
    t0 = time.perf_counter()
    trainer = pycrfsuite.Trainer(algorithm="ap", verbose=False)
    trainer.set_params({"max_iterations": epochs, "epsilon": 0.0})
    o = c.offsets
    for k in range(len(o) - 1):
        xseq = [[names[f] for f in indices[indptr[t]:indptr[t + 1]]] for t in range(o[k], o[k + 1])]
        trainer.append(xseq, c.labels[o[k]:o[k + 1]])
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        trainer.train(str(keep or Path(tmp) / "crf.model"))
    t2 = time.perf_counter()
    return {"append_seconds": round(t1 - t0, 2), "train_seconds": round(t2 - t1, 2),
            "total_seconds": round(t2 - t0, 2), "version": pycrfsuite.__version__
            if hasattr(pycrfsuite, "__version__") else "?"}


def crfsuite_tagging(crf_model: Path, train_path: str, test_path: str, repeat: int) -> dict | None:
    """pycrfsuite.Tagger on the same feature strings as ours: tokens/s of its tagging alone
    (the feature strings are built beforehand, outside the timing)."""
    try:
        import pycrfsuite
    except ImportError:
        return None
    from structkit.sequence.features import FeatureSpace
    from structkit.sequence.task import read_labelled

    c = read_labelled(train_path, None)
    fs = FeatureSpace("chunk")
    fs.fit_transform(c.words, c.pos, c.offsets)
    t = read_labelled(test_path, None)
    indptr, indices = fs.transform(t.words, t.pos, t.offsets)
    names = {}
    o = t.offsets
    xseqs = [[[names.setdefault(f, fs.feature_name(f)) for f in indices[indptr[k]:indptr[k + 1]]]
              for k in range(o[s], o[s + 1])] for s in range(len(o) - 1)]
    tagger = pycrfsuite.Tagger()
    tagger.open(str(crf_model))
    rates = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for x in xseqs:
            tagger.tag(x)
        rates.append(int(o[-1]) / (time.perf_counter() - t0))
    return {"tokens": int(o[-1]), "tokens_per_second": round(statistics.median(rates))}


def end_to_end_tagging(model: Path, test: str, tmp: Path, repeat: int) -> dict:
    """Tagging CoNLL-2000 test x10 (474k tokens): the whole `structkit chunk` command (start-up
    included), and in one process the block path (tag_conll_bytes: read, features, decode,
    write) against the reader -> tag_batches -> write_conll path it replaced; and the wall
    time of two threads tagging two halves against one thread tagging both."""
    import io
    import threading

    from structkit.io.conll import write_conll
    from structkit.io.conllu import read_sequence
    from structkit.io.blocks import iter_blocks
    from structkit.sequence.task import SequenceTagger

    data = Path(test).read_bytes() * 10
    big = tmp / "test10.txt"
    big.write_bytes(data)
    n_tok = sum(1 for line in data.split(b"\n") if line.strip())
    structkit("chunk", "--model", model, big, "-o", tmp / "warm10.out")   # numba cache warm
    walls = [structkit("chunk", "--model", model, big, "-o", tmp / "big.out")[0] for _ in range(repeat)]
    tagger = SequenceTagger.load(str(model))
    tagger.tag_conll_bytes(next(iter_blocks(io.BytesIO(data), 100000))[1], str(big))   # kernels loaded

    def fast_run():
        t0 = time.perf_counter()
        out = tagger.tag_conll_bytes(big.read_bytes(), str(big))
        return time.perf_counter() - t0, out

    def old_run():
        t0 = time.perf_counter()
        buf = io.StringIO()
        for batch, labels in tagger.tag_batches(read_sequence(str(big)), str(big)):
            write_conll(batch, labels, buf)
        return time.perf_counter() - t0, buf.getvalue().encode("utf-8")

    fast_t, old_t, same = [], [], True
    for _ in range(repeat):
        tf, a = fast_run()
        to, b = old_run()
        fast_t.append(tf)
        old_t.append(to)
        same = same and a == b == (tmp / "big.out").read_bytes()
    # two blocks: one thread after the other, then two threads at once
    half = [b for _, b in iter_blocks(io.BytesIO(data), len(data) // 2)]
    first, rest = half[0], b"".join(half[1:])
    serial, threaded = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for b in (first, rest):
            tagger.tag_conll_bytes(b, str(big))
        serial.append(time.perf_counter() - t0)
        ths = [threading.Thread(target=tagger.tag_conll_bytes, args=(b, str(big))) for b in (first, rest)]
        t0 = time.perf_counter()
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        threaded.append(time.perf_counter() - t0)
    # what two threads can gain on this machine now: an existing nogil kernel (the UTF-8 check
    # of the scanner) on two buffers, one thread after the other and at once (other work on
    # the machine lowers both figures alike)
    from structkit.sequence.search.fast import utf8_plain

    import numpy as np

    bufs = [np.frombuffer(data * 4, dtype=np.uint8) for _ in range(2)]
    utf8_plain(bufs[0][:10], 0)
    cal_s, cal_t = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for b in bufs:
            utf8_plain(b, 0)
        cal_s.append(time.perf_counter() - t0)
        ths = [threading.Thread(target=utf8_plain, args=(b, 0)) for b in bufs]
        t0 = time.perf_counter()
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        cal_t.append(time.perf_counter() - t0)
    out = {"tokens": n_tok,
           "calibration_thread_speedup": round(min(cal_s) / min(cal_t), 2),
           "command_wall_seconds": [round(w, 2) for w in walls],
           "command_tokens_per_second": round(n_tok / min(walls)),
           "in_process_tokens_per_second": round(n_tok / min(fast_t)),
           "in_process_old_path_tokens_per_second": round(n_tok / min(old_t)),
           "identical_output": bool(same),
           "two_blocks_one_thread_seconds": round(min(serial), 3),
           "two_blocks_two_threads_seconds": round(min(threaded), 3),
           "thread_speedup": round(min(serial) / min(threaded), 2)}
    print(f"tagging CoNLL-2000 test x10 ({n_tok} tokens): `structkit chunk` {min(walls):.2f} s wall, "
          f"{out['command_tokens_per_second']:,} tokens/s with start-up; in process (read, features, decode, "
          f"write) {out['in_process_tokens_per_second']:,} tokens/s, old path "
          f"{out['in_process_old_path_tokens_per_second']:,}; identical output: {same}; two blocks, 2 threads "
          f"vs 1: {out['thread_speedup']}x (a plain nogil kernel: {out['calibration_thread_speedup']}x)", flush=True)
    return out


def lookahead_bench(train: str, tmp: Path, repeat: int) -> dict:
    """Depth-2 lookahead training, dp vs brute force, whole command and epochs alone."""
    import numpy as np

    from structkit.sequence.features import FeatureSpace
    from structkit.sequence.learn.perceptron import AveragedPerceptron
    from structkit.sequence.task import read_labelled

    out: dict = {}
    for search in ("dp", "brute"):
        walls = [structkit("train", "--task", "chunk", "--train", train, "--algo", "lookahead",
                           "--depth", "2", "--margin", "1", "--search", search, "--epochs", "10",
                           "--model", tmp / f"la-{search}.model")[0]
                 for _ in range(repeat if search == "dp" else 1)]
        out[f"{search}_command_seconds"] = round(min(walls), 2)
        print(f"structkit train --algo lookahead --depth 2 --search {search}, 10 epochs: {min(walls):.2f} s", flush=True)
    c = read_labelled(train, None)
    fs = FeatureSpace("chunk")
    indptr, indices = fs.fit_transform(c.words, c.pos, c.offsets)
    labels = sorted(set(c.labels))
    index = {l: i for i, l in enumerate(labels)}
    from structkit.sequence.features import Encoded
    data = Encoded(indptr, indices, c.offsets, np.array([index[l] for l in c.labels], dtype=np.int32))
    for search in ("dp", "brute"):
        learner = AveragedPerceptron(fs.n_features, len(labels), "lookahead", depth=2, margin=1.0,
                                     use_dp=search == "dp")
        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        for _ in range(10):
            learner.epoch(data, rng)
        out[f"{search}_epochs_seconds"] = round(time.perf_counter() - t0, 2)
        out[f"{search}_weights"] = learner.averaged()
    same = all(np.array_equal(getattr(out["dp_weights"], a), getattr(out["brute_weights"], a))
               for a in ("W", "T", "T2"))
    del out["dp_weights"], out["brute_weights"]
    out["identical_weights"] = bool(same)
    out["epochs_speedup"] = round(out["brute_epochs_seconds"] / out["dp_epochs_seconds"], 1)
    out["command_speedup"] = round(out["brute_command_seconds"] / out["dp_command_seconds"], 1)
    print(f"lookahead depth 2, 10 epochs alone: dp {out['dp_epochs_seconds']} s, brute "
          f"{out['brute_epochs_seconds']} s ({out['epochs_speedup']}x), identical weights: {same}")
    return out


def parser_bench(tmp: Path, repeat: int) -> dict:
    """Arc-standard parser: training time and parsing speed with a loaded model, depths 0-1."""
    from structkit.parse.parser import DependencyParser, encode, read_treebank

    train = resolve_data_path("ptb-dep/train.conll")
    test = resolve_data_path("ptb-dep/test.conll")
    out: dict = {}
    gold = read_treebank(test)
    for depth in (0, 1):
        model = tmp / f"parse{depth}.model"
        wall, _ = structkit("train", "--task", "parse", "--algo", "lookahead", "--train", train, "--depth", str(depth),
                            "--epochs", "10", "--model", model)
        parser = DependencyParser.load(str(model))
        tb = encode(gold, parser.words, parser.tags, "xpos", grow=False)
        parser.parse_encoded(tb)
        rates = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _b in parser.parse_batches(gold, test):
                pass
            rates.append(len(gold) / (time.perf_counter() - t0))
        out[f"depth{depth}"] = {"train_10_epochs_wall_seconds": round(wall, 2),
                                "sentences_per_second": round(statistics.median(rates)),
                                "test_sentences": len(gold)}
        print(f"parser depth {depth}: train 10 epochs {wall:.1f} s; parsing "
              f"{statistics.median(rates):,.0f} sentences/s (loaded model, encoding included)", flush=True)
    return out


def parser_only(args) -> None:
    """The parser benchmark alone (`python scripts/bench.py --parser-only`): training on ptb-dep
    with today's defaults (margin included) but 10 epochs, and parsing speed with a loaded model."""
    out = Path(args.out if args.out != str(RESULTS / "bench.json") else RESULTS / "bench-parser.json")
    if args.report_only:
        return parser_report(json.loads(out.read_text()), out, args.repeat)
    res: dict = {"machine": machine(), "command": "python scripts/bench.py --parser-only",
                 "repeat": args.repeat, "numba_cache": PARSER_CACHE}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        warm_parser(tmp)
        res["parser"] = parser_bench(tmp, args.repeat)
    dump_json(res, out)
    parser_report(res, out, args.repeat)


def parser_report(res: dict, out: Path, repeat: int) -> None:
    m, repeat = res["machine"], res.get("repeat", repeat)
    # an older JSON: the same warm-up (it was in --parser-only from the start), not recorded
    cache = res.get("numba_cache", numba_cache("warm", PARSER_CACHE["how"] + "; not recorded by this older run, "
                                                "but the script that wrote it, committed with it in 561a109, "
                                                "had this warm-up"))
    lines = ["# Parser benchmark (`python scripts/bench.py --parser-only`)", "",
             f"Machine: {m['cpu']}, {m['cores']} cores; commit {m['commit']}; {m['date']}. ptb-dep train -> test, "
             f"`--algo lookahead`, today's defaults (margin C = 1) but 10 epochs; {cache['words']}.", "",
             "| measure | value |", "|---|---|"]
    for depth in (0, 1):
        pr = res["parser"][f"depth{depth}"]
        lines.append(f"| parser depth {depth}: `structkit train --task parse` 10 epochs wall / parsing speed, "
                     f"loaded model (median of {repeat}) | {pr['train_10_epochs_wall_seconds']} s / "
                     f"{pr['sentences_per_second']:,} sentences/s |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(RESULTS / "bench.json"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parser-only", action="store_true", help="only the arc-standard parser's lines, into "
                    "results/bench-parser.json/.md (unless --out says otherwise)")
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the JSON")
    args = ap.parse_args()
    if args.parser_only:
        return parser_only(args)
    if args.report_only:
        return report(json.loads(Path(args.out).read_text()), Path(args.out), args.repeat)
    train = resolve_data_path("conll2000/train.txt")
    test = resolve_data_path("conll2000/test.txt")
    if not Path(train).exists():
        sys.exit("bench: CoNLL-2000 not found; `structkit data fetch conll2000` gets it")
    res: dict = {"machine": machine(), "repeat": args.repeat, "numba_cache": NUMBA_CACHE}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = tmp / "chunk.model"
        warm = write_slice(train, tmp / "warm.txt", 50)   # untimed: the numba cache warm (NUMBA_CACHE)
        structkit("train", "--task", "chunk", "--train", warm, "--epochs", "1", "--model", model)
        structkit("chunk", "--model", model, warm, "-o", tmp / "w.out")
        for search in ("dp", "brute"):
            structkit("train", "--task", "chunk", "--train", warm, "--algo", "lookahead", "--depth", "2",
                      "--margin", "1", "--search", search, "--epochs", "1", "--model", tmp / "w.model")
        warm_parser(tmp)

        times = [structkit("train", "--task", "chunk", "--train", train, "--epochs", "10",
                           "--model", model)[0] for _ in range(args.repeat)]
        res["train_chunk_conll2000_10_epochs"] = {"wall_seconds": [round(t, 2) for t in times],
                                                  "best": round(min(times), 2)}
        print(f"structkit train, CoNLL-2000, 10 epochs: best {min(times):.2f} s of {times}")
        base = crfsuite_baseline(train, 10, keep=tmp / "crf.model")
        if base is not None:
            res["crfsuite_ap_10_epochs"] = base
            print(f"CRFsuite averaged perceptron, same features, 10 epochs: train {base['train_seconds']} s "
                  f"(+ {base['append_seconds']} s to pass the data in)")
        else:
            print("CRFsuite baseline skipped: python-crfsuite not installed")

        from structkit.io.conll import read_conll
        from structkit.sequence.task import SequenceTagger

        t0 = time.perf_counter()
        tagger = SequenceTagger.load(str(model))
        load_s = time.perf_counter() - t0
        sents = list(read_conll(test))
        n_tok = sum(len(s) for s in sents)
        list(tagger.tag_batches(sents, test))   # warm: kernels loaded, compact weights built
        rates = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            for _b in tagger.tag_batches(sents, test):
                pass
            rates.append(n_tok / (time.perf_counter() - t0))
        res["tagging_throughput"] = {"tokens": n_tok, "tokens_per_second": [round(r) for r in rates],
                                     "median": round(statistics.median(rates)),
                                     "model_load_seconds": round(load_s, 3)}
        print(f"tagging throughput (features + Viterbi, loaded model): median "
              f"{statistics.median(rates):,.0f} tokens/s over {n_tok} tokens; model load {load_s:.2f} s")

        one = tmp / "one.txt"
        one.write_text("He NN\nreckons VBZ\nthe DT\ncurrent JJ\naccount NN\ndeficit NN\n. .\n")
        walls = [structkit("chunk", "--model", model, one)[0] for _ in range(3)]
        res["one_sentence_chunk_wall_seconds"] = [round(w, 2) for w in walls]
        print(f"`structkit chunk` of a one-sentence file: {', '.join(f'{w:.2f}' for w in walls)} s wall")
        res["tagging_end_to_end"] = end_to_end_tagging(model, test, tmp, args.repeat)
        crf_tag = crfsuite_tagging(tmp / "crf.model", train, test, args.repeat) if base is not None else None
        if crf_tag is not None:
            res["crfsuite_tagging"] = crf_tag
            print(f"CRFsuite tagger (pycrfsuite.Tagger, same features, feature strings prepared): "
                  f"{crf_tag['tokens_per_second']:,} tokens/s", flush=True)
        res["lookahead_depth2"] = lookahead_bench(train, tmp, args.repeat)
        res["parser"] = parser_bench(tmp, args.repeat)
    dump_json(res, Path(args.out))
    report(res, Path(args.out), args.repeat)


def report(res: dict, out: Path, repeat: int) -> None:
    """results/bench.md from the JSON ``main`` wrote."""
    repeat = res.get("repeat", len(res["train_chunk_conll2000_10_epochs"]["wall_seconds"]))
    base = res.get("crfsuite_ap_10_epochs")
    lines = ["# Benchmarks (`make bench`)", "", f"Machine: {res['machine']['cpu']}, "
             f"{res['machine']['cores']} cores; commit {res['machine']['commit']}; {res['machine']['date']}; "
             f"{res.get('numba_cache', LEGACY_CACHE)['words']}.", "",
             "| measure | value |", "|---|---|",
             f"| structkit train, CoNLL-2000 chunk, 10 epochs, wall (best of {repeat}) | "
             f"{res['train_chunk_conll2000_10_epochs']['best']} s |"]
    if base is not None:
        lines.append(f"| CRFsuite averaged perceptron, same features, 10 epochs (train only / with data passing) | "
                     f"{base['train_seconds']} s / {base['total_seconds']} s |")
    tp = res["tagging_throughput"]
    lines += [f"| tagging throughput, loaded model, features included (median of {repeat}) | "
              f"{tp['median']:,} tokens/s |",
              f"| model load | {tp['model_load_seconds']} s |"]
    ee = res["tagging_end_to_end"]
    lines += [f"| tagging CoNLL-2000 test x10 ({ee['tokens']:,} tokens): `structkit chunk` wall, best of {repeat} "
              f"(tokens/s, start-up included) | {min(ee['command_wall_seconds'])} s ({ee['command_tokens_per_second']:,}) |",
              f"| the same in one process, read + features + decode + write: block path / old path | "
              f"{ee['in_process_tokens_per_second']:,} / {ee['in_process_old_path_tokens_per_second']:,} tokens/s; "
              f"identical output: {'yes' if ee['identical_output'] else 'NO'} |",
              f"| two blocks of it, two threads vs one (tag_conll_bytes) | {ee['two_blocks_two_threads_seconds']} s vs "
              f"{ee['two_blocks_one_thread_seconds']} s ({ee['thread_speedup']}x; a plain nogil kernel on this machine at "
              f"the time: {ee['calibration_thread_speedup']}x) |"]
    if "crfsuite_tagging" in res:
        lines.append(f"| CRFsuite tagger (pycrfsuite.Tagger), same features, CoNLL-2000 test, tagging alone | "
                     f"{res['crfsuite_tagging']['tokens_per_second']:,} tokens/s |")
    lines += [
              f"| `structkit chunk` one sentence, wall (3 runs) | "
              f"{', '.join(str(w) for w in res['one_sentence_chunk_wall_seconds'])} s |"]
    la = res["lookahead_depth2"]
    lines += [f"| lookahead depth 2, C=1, 10 epochs, `structkit train` wall: dp / brute force | "
              f"{la['dp_command_seconds']} s / {la['brute_command_seconds']} s ({la['command_speedup']}x) |",
              f"| the same, learning epochs alone (features computed once): dp / brute force | "
              f"{la['dp_epochs_seconds']} s / {la['brute_epochs_seconds']} s ({la['epochs_speedup']}x); "
              f"identical weights: {'yes' if la['identical_weights'] else 'NO'} |"]
    for depth in (0, 1):
        pr = res["parser"][f"depth{depth}"]
        lines.append(f"| parser depth {depth}: `structkit train --task parse` 10 epochs wall / parsing speed, "
                     f"loaded model | {pr['train_10_epochs_wall_seconds']} s / {pr['sentences_per_second']:,} sentences/s |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
