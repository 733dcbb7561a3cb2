"""Readers and writers of the file formats: CoNLL columns (``read_conll``, ``read_text``,
``write_conll``), CoNLL-X/CoNLL-U (``read_conllx``, ``write_conllx``: sentences as
``structkit.io.document.Sentence``, the Doc's) and n-best lists
(``read_nbest``, ``read_chosen``). Imported lazily, like the top-level ``structkit``.
These are the functions of the format modules (``structkit.io.conll``, ...) behind argument
checks (``structkit.api_io``): a wrong argument is a UserError naming it."""
from __future__ import annotations

from structkit._lazy import lazy_getattr

_LAZY = {
    "read_conll": "structkit.api_io",
    "read_text": "structkit.api_io",
    "write_conll": "structkit.api_io",
    "Sentence": "structkit.io.conll",
    "read_conllx": "structkit.api_io",
    "write_conllx": "structkit.api_io",
    "read_nbest": "structkit.api_io",
    "read_chosen": "structkit.api_io",
    "NbestSet": "structkit.io.nbest",
}

__all__ = list(_LAZY)


__getattr__ = lazy_getattr("structkit.io", _LAZY, globals())
