"""The pipeline wing: one model file holding a tokenizer, a morphological tagger and
lemmatizer and a parser (each optional), trained by one command (`structkit train --task
pipeline`), run on raw text by `structkit annotate`, `structkit.load(path)` and `structkit serve`."""
