"""structkit: structured prediction for NLP (sequence labelling, parsing, reranking)."""

__version__ = "0.1.0"
