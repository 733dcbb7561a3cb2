# structkit: set-up, tests, benchmarks and experiments.
# `make install`, `make demo`, `make test` is the whole set-up (README).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Our workspace keeps the public corpora beside the project; elsewhere structkit finds them in
# its cache (`structkit data fetch`) or wherever $STRUCTKIT_DATA says.
ifneq ($(wildcard ../shared/data/SOURCES.md),)
export STRUCTKIT_DATA ?= $(abspath ../shared/data)
endif

.PHONY: install demo test docs models mutation bench bench-serve experiments chunk pos ner lookahead parse clean kbest olarank rerank tokenize-peer tokenize morph official-eval pipeline conll18

install:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	$(BIN)/structkit compile   # numba's kernels into its cache: the first command does not wait for them

# Fetch CoNLL-2000 (or, offline, use the shipped sample), train a chunker, chunk, evaluate.
demo:
	SK=$(BIN)/structkit OUT=build/demo sh scripts/demo.sh

test:
	$(BIN)/python -m pytest -q

# The documentation site (mkdocs.yml, docs/): getting started, the guide (docs/guide/); the
# reference is generated from the commands and docstrings, the results pages are results/*.md.
# Strict: a warning or a broken internal link fails the build (tests/test_docs.py builds it too).
docs:
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

# Ready English models from their recipes (`structkit models list`; the same as `structkit models
# build NAME`), each written with its card (`structkit info MODEL`) to build/models, and what the
# cards say in results/models.md; a minute or two, not part of `make test`. Add the pipeline
# recipe to ENGLISH in scripts/models_build.py when `structkit train --task pipeline` lands.
models:
	$(BIN)/python scripts/models_build.py --out-dir build/models

# Plants curated bugs one at a time (a private copy each, fresh numba cache) and reports how many
# the tests catch; not part of `make test` (about 10 min).
mutation:
	$(BIN)/python scripts/mutation.py

# The speed benchmarks; the last three are issue 42's targets, each against a baseline tree in
# the same run (UD pipelines on Italian ParTUT and Turkish IMST, about 10 min; 2,000 short texts,
# about 3 min; a fresh install's first runs with and without `structkit compile`, about 12 min).
bench:
	$(BIN)/pip install --quiet -e '.[bench,dask]'
	$(BIN)/python scripts/bench.py --out results/bench.json
	$(BIN)/python scripts/bench_batch.py --out results/bench-batch.json
	$(BIN)/python scripts/bench_startup.py --out results/bench-startup.json
	$(BIN)/python scripts/bench_kbest.py
	$(BIN)/python scripts/bench_pipeline_speed.py
	$(BIN)/python scripts/bench_pipe.py
	$(BIN)/python scripts/bench_cold.py

# `structkit serve` under a bounded load on 127.0.0.1: latency with one client, requests/s with 16
# clients for 30 s, the server's memory before and after (results/bench-serve.md; about 2 min).
bench-serve:
	$(BIN)/pip install --quiet -e '.[serve]'
	$(BIN)/python scripts/bench_serve.py

# Issue 27's peer: UDPipe 1's tokenizer trained (defaults, tokenizer only) and scored on every UD
# treebank we hold (results/tokenize-udpipe.md; 34 CPU minutes, about an hour on 2 shared cores).
tokenize-peer:
	$(BIN)/pip install --quiet -e '.[peers]'
	$(BIN)/python scripts/tokenize_peer.py

# Issue 27: our tokenizer against UDPipe 1's cached runs (results/tokenize.md, a few minutes), then
# raw text to labelled trees on Italian and Turkish (results/ud-raw-text.md, about 5 min).
tokenize:
	$(BIN)/python scripts/tokenize_experiments.py
	$(BIN)/python scripts/ud_raw_text.py

# Issue 28: the morphological tagger and lemmatizer on every UD treebank we hold, then UDPipe 1's
# trained on the same files (the peers extra; several minutes a treebank): results/morph.md.
morph:
	$(BIN)/pip install --quiet -e '.[peers]'
	$(BIN)/python scripts/morph_experiments.py
	$(BIN)/python scripts/morph_experiments.py --peer

# Issue 38: `eval --task morph` and `eval --task ud` against the CoNLL 2018 shared task's own
# conll18_ud_eval.py v1.2 (taken from the stanza 1.0.0 wheel into build/official, never
# committed) on Turkish IMST and Italian ParTUT: morph models and pipelines trained with the
# defaults, their test output scored by both (results/official-eval.md; about 6 CPU minutes).
official-eval:
	$(BIN)/python scripts/official_eval.py

# One target per experiment: each writes results/<name>.json and results/<name>.md.
experiments: chunk pos ner

chunk:
	$(BIN)/python scripts/run_experiment.py configs/chunk-conll2000-perceptron.toml configs/chunk-conll2000-greedy.toml

pos:
	$(BIN)/python scripts/run_experiment.py configs/pos-ptb-perceptron.toml

ner:
	$(BIN)/python scripts/run_experiment.py configs/ner-conll2002-esp-perceptron.toml

# Tsuruoka et al. (2011) Tables 1-3 on our data: results/lookahead.md and lookahead.png.
LOOKAHEAD_CONFIGS ?= configs/grids/lookahead-chunk-conll2000.toml \
	configs/grids/lookahead-ner-conll2002-esp.toml \
	configs/grids/lookahead-ner-jnlpba.toml \
	configs/grids/lookahead-pos-ptb.toml
lookahead:
	$(BIN)/pip install --quiet -e '.[experiments]'
	$(BIN)/python scripts/lookahead_experiments.py $(LOOKAHEAD_CONFIGS)

# Tsuruoka et al. (2011) Table 4 on our data: results/parse.md and parse.png; then the labelled
# beam parser on UD English ParTUT at beams 8 (default), 1 and 32: results/ud-parse.md (about 5 min).
parse:
	$(BIN)/pip install --quiet -e '.[experiments]'
	$(BIN)/python scripts/parse_experiments.py configs/grids/parse-ptb-dep.toml
	$(BIN)/python scripts/ud_parse_experiments.py --beams default,1,32

# Mancev & Todorovic Table 1 on our data: results/kbest.md and kbest.png (about 75 min).
kbest:
	$(BIN)/pip install --quiet -e '.[experiments]'
	$(BIN)/python scripts/kbest_experiments.py configs/grids/kbest-chunk-conll2000.toml \
		configs/grids/kbest-ner-conll2002-esp.toml

# Bordes, Usunier & Bottou (2008) Tables 2-4 and Fig. 1 on our data: results/olarank.md and .png.
olarank:
	$(BIN)/pip install --quiet -e '.[experiments]'
	$(BIN)/python scripts/olarank_experiments.py

# Singh-Miller & Collins Table 3 on our data (ATIS, and 5-fold CV on Switchboard, WSJ, CHiME-4):
# results/rerank.md and rerank.json (about 70 s).
rerank:
	$(BIN)/python scripts/rerank_experiments.py configs/grids/rerank-hyporadise.toml

clean:
	rm -rf build dist *.egg-info .pytest_cache

# Issue 29: raw text to CoNLL-U, structkit's pipeline beside UDPipe 1's full pipeline (tokenizer,
# tagger, parser; defaults) trained on the same files, scored by `eval --task ud`
# (results/pipeline.md). UDPipe's training is tens of CPU minutes per treebank; its models are
# kept in build/pipeline-peer. Pass ONLY='--only ud-italian-partut' to run some treebanks.
pipeline:
	$(BIN)/pip install --quiet -e '.[peers]'
	$(BIN)/python scripts/pipeline_experiments.py $(ONLY)

# Issue 43: the CoNLL 2018 shared task on every UD treebank of $STRUCTKIT_DATA: a pipeline each
# (`structkit models build --all --jobs 2`, models kept in build/conll18 and kept on a rerun),
# its test file's raw text annotated and scored with the 13 metrics, beside the official UDPipe
# 1.2 baseline and best system where the treebank was a test set (results/conll18.md). About
# ten minutes on 2 cores for the treebanks here.
conll18:
	$(BIN)/python scripts/conll18.py --out build/conll18
