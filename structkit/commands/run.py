"""Running models over files: `tag`, `chunk`, `ner`, `parse` (collections, cores, clusters) and `rerank`."""
from __future__ import annotations

import json

import click

from structkit.commands._util import INT, Choice, batch_options, run_batch
from structkit.errors import UserError

def _tag_command(name: str, task: str, help_text: str):
    @click.command(name, help=help_text + "\n\nFILES may be files, folders (read recursively; see "
                 "--glob) or '-'; none is standard input.", short_help=help_text)
    @click.option("-m", "--model", "model_path", required=True, help="A model trained with `structkit train`.")
    @click.argument("files", nargs=-1)
    @click.option("--text", is_flag=True,
                  help="Input is raw text: tokenised (UD English conventions) and split into sentences; "
                       "a blank line ends a paragraph.")
    @click.option("--no-split", is_flag=True, help="With --text: each line is one sentence.")
    @click.option("--format", "fmt", type=Choice(["conll", "conllu"]),
                  help="With --text: 'word label' rows (conll, the default) or CoNLL-U with # sent_id, "
                       "# text and SpaceAfter=No (conllu; pipe it to `structkit parse`).")
    @click.option("--lang", default="en", show_default=True, help="With --text: the tokenizer's language.")
    @click.option("--columns", type=str, help="Name the input columns, e.g. 'word,pos' or 'word,pos,label'.")
    @click.option("--depth", type=INT,
                  help="Lookahead depth for history-based models (default: the depth trained with).")
    @click.option("--scores", is_flag=True,
                  help="Add each token's margin (a last column, or Margin= in CoNLL-U MISC): for Viterbi "
                       "models the best sequence's score minus the best with another label at that token "
                       "(max-marginals); for history-based models (greedy, lookahead, OLaRank greedy) the "
                       "decision margin: the chosen label's score with its best lookahead continuation "
                       "minus the best other label's. Small margins are the doubtful tags.")
    @batch_options
    def command(model_path, files, text, no_split, fmt, lang, columns, depth, scores, output, output_dir,
                pattern, skip_existing, keep_going, jobs, dask_address, shared_fs, quiet):
        import gc

        from structkit.batch import TagJob
        from structkit.sequence.task import SequenceTagger

        if not text and (no_split or fmt):
            raise UserError(f"{'--no-split' if no_split else '--format'} goes with --text")
        if text and columns:
            raise UserError("--columns does not apply to --text (raw text has no columns)")
        # The collector would scan the model's objects (and numba's) over and over while they
        # are built; frozen, they are never scanned again, nor torn down one by one at exit.
        gc.disable()
        try:
            tagger = SequenceTagger.load(model_path, command=name, tasks=(task,))
        finally:
            gc.freeze()
            gc.enable()
        if depth is not None:
            tagger.check_depth(depth, model_path)
        if text:
            from structkit.text.tokenize import get_tokenizer
            get_tokenizer(lang)  # an unknown language is an error before any input is read
        job = TagJob(tagger, columns, text, "lines" if no_split else "auto", fmt, lang, depth, scores)
        run_batch(job, files, output, output_dir, pattern, skip_existing, keep_going, jobs,
                   dask_address, shared_fs, quiet, [model_path])
        gc.freeze()  # a quick exit: nothing left for the collector to scan
    return command


tag = _tag_command("tag", "pos", "POS-tag CoNLL files (or --text); writes each row plus the predicted tag.")
chunk = _tag_command("chunk", "chunk", "Chunk CoNLL files (word POS [gold]); writes each row plus the predicted chunk tag.")
ner = _tag_command("ner", "ner", "Find named entities in CoNLL files; writes each row plus the predicted tag.")


@click.command(short_help="Parse CoNLL-U (back into CoNLL-U), CoNLL-X or `word POS` files: heads and labels.")
@click.option("-m", "--model", "model_path", required=True, help="A parser trained with `structkit train --task parse`.")
@click.argument("files", nargs=-1)
@click.option("--depth", type=INT, help="Lookahead depth of a lookahead parser, or of the lookahead inside the beam "
              "of a beam parser (0..3; default: the depth trained with).")
@click.option("--beam", type=INT, help="Beam width of a beam parser (default: the width trained with).")
@click.option("--tagger", "tagger_path", type=str,
              help="POS-tag the words first with this tagger model (`structkit train --task pos`).")
@batch_options
def parse(model_path, files, depth, beam, tagger_path, output, output_dir, pattern, skip_existing,
          keep_going, jobs, dask_address, shared_fs, quiet) -> None:
    """Parse CoNLL-X or CoNLL-U files (or `word POS` columns): CoNLL-U comes back as CoNLL-U
    with HEAD and DEPREL predicted and every other line and column as read; other input as
    CoNLL-X. An unlabelled parser writes DEPREL '_', never the input's. FILES may be files,
    folders (read recursively; see --glob) or '-'; none is standard input."""
    from structkit.batch import ParseJob
    from structkit.parse.labelled import LabelledParser
    from structkit.parse.parser import DependencyParser

    parser = DependencyParser.load(model_path, command="parse")
    labelled = isinstance(parser, LabelledParser)
    if depth is not None:
        if labelled:  # lookahead inside the beam: re-rank the 2B best candidates by depth-D lookahead
            from structkit.parse.parser import BEAM_MAX_DEPTH
            if not 0 <= depth <= BEAM_MAX_DEPTH:
                raise UserError(f"--depth of a beam parser (lookahead inside the beam) is "
                                f"0..{BEAM_MAX_DEPTH}, got {depth}", model_path)
        else:
            from structkit.parse.parser import DEPTH
            DEPTH.check(depth)
    if beam is not None:
        if not labelled:
            raise UserError("--beam applies to beam parsers (--algo beam, the default)", model_path)
        from structkit.learn.registry import PARAMS
        beam = PARAMS["beam"].check(beam)
    tagger = None
    protect = [model_path]
    if tagger_path:
        from structkit.sequence.task import SequenceTagger
        tagger = SequenceTagger.load(tagger_path, command="parse --tagger", tasks=("pos",))
        protect.append(tagger_path)
    run_batch(ParseJob(parser, tagger, depth, beam), files, output, output_dir, pattern, skip_existing,
               keep_going, jobs, dask_address, shared_fs, quiet, protect)


@click.command(short_help="Choose one hypothesis per utterance from n-best lists with a trained reranker.")
@click.option("-m", "--model", "model_path", required=True, help="A reranker trained with `structkit train --task rerank`.")
@click.argument("files", nargs=-1)
@click.option("-o", "--output", type=str, help="Write here instead of standard output.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per utterance: id, group, index (0-based), score, text.")
def rerank(model_path, files, output, as_json) -> None:
    """Rerank n-best lists (HyPoradise JSON, JSON lines, or a Kaldi-style directory): writes the
    chosen hypothesis of each utterance, one per line."""
    from structkit.config import resolve_data_path
    from structkit.io.files import atomic_output, check_outputs
    from structkit.rerank.task import Reranker

    model = Reranker.load(model_path, command="rerank")
    paths = [resolve_data_path(f, must_exist=True) for f in files] or ["-"]
    check_outputs([output], paths + [model_path])
    results = []
    for path in paths:
        ns = model.read(path)
        idx, score = model.rerank(ns)
        results.append((ns, idx, score))
    with atomic_output(output) as out:
        for ns, idx, score in results:
            for u, g, k, s in zip(ns.utterances, ns.groups, idx, score):
                text = u.hypotheses[int(k)]
                if as_json:
                    out.write(json.dumps({"id": u.id, "group": g, "index": int(k),
                                          "score": float(s), "text": text}) + "\n")
                else:
                    out.write(text + "\n")
