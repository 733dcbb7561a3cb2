"""Raw text to sentences, tokens (with character offsets) and syntactic words, and writing
them as CoNLL-U: ``tokenize``, ``iter_sentences``, ``write_conllu``."""
from __future__ import annotations

from structkit.text.base import Sentence, Token, Tokenizer
from structkit.text.conllu import write_conllu
from structkit.text.tokenize import TOKENIZERS, get_tokenizer, iter_sentences, tokenize

__all__ = ["Token", "Sentence", "Tokenizer", "TOKENIZERS", "get_tokenizer", "tokenize",
           "iter_sentences", "write_conllu"]
