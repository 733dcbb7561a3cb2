"""Readers and writers of the file formats: CoNLL columns (``read_conll``, ``read_text``,
``write_conll``), CoNLL-X/CoNLL-U (``read_conllx``, ``write_conllx``) and n-best lists
(``read_nbest``, ``read_chosen``). Imported lazily, like the top-level ``structkit``."""
from __future__ import annotations

from structkit._lazy import lazy_getattr

_LAZY = {
    "read_conll": "structkit.io.conll",
    "read_text": "structkit.io.conll",
    "write_conll": "structkit.io.conll",
    "Sentence": "structkit.io.conll",
    "read_conllx": "structkit.io.conllx",
    "write_conllx": "structkit.io.conllx",
    "DepSentence": "structkit.io.conllx",
    "read_nbest": "structkit.io.nbest",
    "read_chosen": "structkit.io.nbest",
    "NbestSet": "structkit.io.nbest",
}

__all__ = list(_LAZY)


__getattr__ = lazy_getattr("structkit.io", _LAZY, globals())
