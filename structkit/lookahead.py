"""What the two lookahead searches share, the tagger's (``structkit.sequence.search.lookahead``)
and the parser's (``structkit.parse.arcstandard``): Figure 3's choice among the actions of a
state (Tsuruoka et al. 2011, lines 9-16), one action at a time."""
from __future__ import annotations

from structkit.jit import njit


@njit(inline="always")   # inlined into each search: a call per action cost ~10% of lookahead training
def weigh_action(a, v, gold, margin, path, d, path_gold, path_best, best):
    """Action a, whose lookahead backed up the score v along ``path[:d]``, against the actions
    weighed before it: ``best`` = (best_v, best_a, plain_v, plain_a), the chosen action and
    its score after the margin is subtracted from the gold action's (line 13; gold < 0: none),
    and the plain best (no margin). Ties keep the earlier action. ``path[:d]`` is copied into
    ``path_gold`` if a is gold and into ``path_best`` if a becomes the chosen one. Returns the
    new ``best``."""
    best_v, best_a, plain_v, plain_a = best
    if v > plain_v:
        plain_v = v
        plain_a = a
    if a == gold:
        v -= margin
        for j in range(d):
            path_gold[j] = path[j]
    if v > best_v:
        best_v = v
        best_a = a
        for j in range(d):
            path_best[j] = path[j]
    return best_v, best_a, plain_v, plain_a
