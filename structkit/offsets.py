"""Small kernels over a corpus split at sentence offsets (``offsets[s]`` is sentence s's first
token, ``offsets[-1]`` the token count), shared by the wings' decoders and learners."""
from __future__ import annotations

from structkit.jit import njit


@njit
def max_length(offsets):
    """The longest sentence's length (at least 1, for buffer sizes)."""
    m = 1
    for s in range(len(offsets) - 1):
        m = max(m, offsets[s + 1] - offsets[s])
    return m


@njit(inline="always")
def span(offsets, s):
    """Sentence s's first token and length."""
    return offsets[s], offsets[s + 1] - offsets[s]
