"""structkit: structured prediction for NLP (sequence labelling, parsing, reranking).

The Python API (see docs/guide/python-api.md)::

    import structkit
    tagger = structkit.Tagger(task="chunk", epochs=5).fit(X, y)
    tagger.predict(X_test); tagger.score(X_test, y_test); tagger.save("chunk.model")

``Tagger``, ``Parser`` and ``Reranker`` take Python data or file paths; the readers and
writers of the file formats are here too (``read_conll``, ``read_conllx``, ``read_nbest``,
..., those of ``structkit.io`` behind argument checks: ``structkit.api_io``). Every mistake in input or options raises :class:`UserError` (also named
``StructkitError``), whose one-line message is what the command line prints. Names are
imported on first use, so ``import structkit`` stays cheap (no numpy, no numba).
"""
from __future__ import annotations

from structkit._lazy import lazy_getattr
from structkit.errors import UserError

__version__ = "0.1.0"

StructkitError = UserError
"""The one exception type of structkit's API (an alias of :class:`UserError`)."""

# name -> module that defines it; imported by __getattr__ on first use
_LAZY = {
    "Tagger": "structkit.api",
    "Morph": "structkit.api",
    "Parser": "structkit.api",
    "Reranker": "structkit.api",
    "load_conll": "structkit.api_io",
    "load_conllx": "structkit.api_io",
    "read_conll": "structkit.api_io",
    "read_text": "structkit.api_io",
    "write_conll": "structkit.api_io",
    "read_conllx": "structkit.api_io",
    "write_conllx": "structkit.api_io",
    "read_nbest": "structkit.api_io",
    "read_chosen": "structkit.api_io",
    "read_conllu": "structkit.api_io",
    "Doc": "structkit.doc",
    "render": "structkit.doc",
    "load": "structkit.pipeline.api",
    "tokenize": "structkit.api_io",
    "write_conllu": "structkit.api_io",
}

__all__ = ["Doc", "Morph", "Parser", "Reranker", "StructkitError", "Tagger", "UserError", "__version__",
           "load", "load_conll", "load_conllx", "read_chosen", "read_conll", "read_conllu", "read_conllx",
           "read_nbest", "read_text", "render", "tokenize", "write_conll", "write_conllu", "write_conllx"]


__getattr__ = lazy_getattr("structkit", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
