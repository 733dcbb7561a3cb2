#!/bin/sh
# `make demo`: the main job in one command. Fetch CoNLL-2000 if it is not here (a verified copy
# is left alone), train a chunker, chunk the test set and print conlleval's report. Where the
# corpus cannot be fetched (no network), the same steps run on the shipped sample, and it says so.
set -e
SK="${SK:-.venv/bin/structkit}"
OUT="${OUT:-build/demo}"
mkdir -p "$OUT"
if "$SK" data fetch conll2000; then
    train=conll2000/train.txt test=conll2000/test.txt what="CoNLL-2000"
else
    echo "demo: CoNLL-2000 could not be fetched (the line above says why); running the same steps on the shipped sample (sample/chunk) instead"
    train=sample/chunk/train.txt test=sample/chunk/test.txt what="the shipped sample"
fi
echo "demo: training a chunker on $what ($train)"
echo "+ structkit train --task chunk --train $train --model $OUT/chunk.model"
start=$(date +%s)
"$SK" train --task chunk --train "$train" --model "$OUT/chunk.model"
echo "demo: trained in $(( $(date +%s) - start )) s"
echo "+ structkit chunk --model $OUT/chunk.model $test -o $OUT/chunked.txt"
"$SK" chunk --model "$OUT/chunk.model" "$test" -o "$OUT/chunked.txt"
echo "+ structkit eval --task chunk $OUT/chunked.txt"
"$SK" eval --task chunk "$OUT/chunked.txt"
echo "demo: model $OUT/chunk.model, output $OUT/chunked.txt ($what)"
