"""Pseudo-projective dependency parsing (Nivre & Nilsson 2005, "Pseudo-Projective Dependency
Parsing", ACL).

A projective parser (arc-standard) cannot build a tree whose arcs cross. ``projectivize`` turns
any tree into a projective one by *lifting* non-projective arcs (``wj -> wk`` becomes
``wi -> wk`` where ``wi -> wj``) and records each lift in the dependency label, so a parser
trained on the transformed trees learns to predict the encoded labels; ``deprojectivize`` then
undoes the lifts in the parser's output with the paper's heuristic search.

Label encodings (the paper's Table 1; ``d`` is the lifted arc's own label, ``h`` the label of
its original syntactic head, ``p`` the label of an arc on a lifting path):

============  ===============  ====================
scheme        lifted arc       arc on a lift's path
============  ===============  ====================
``head``      ``d|h``          ``p`` (unchanged)
``path``      ``d|``           ``p%``
``head+path`` ``d|h``          ``p%``
============  ===============  ====================

``|`` stands for the paper's up-arrow and ``%`` for its down-arrow; neither occurs in UD
relation labels (``nsubj:pass``), and ``projectivize`` refuses labels that contain them. An arc
that is both lifted and on another lift's path carries both marks (``d|h%``).

Details the paper leaves open, settled as MaltParser (the authors' implementation) does:

* the lifted arc's ``h`` is the label of its *first* syntactic head (the head in the input
  tree) and is not changed by further lifts of the same arc;
* ties between equally short non-projective arcs go to the leftmost dependent.

Heads are 1-based with 0 = the artificial root, one list per sentence, as in
``structkit.io.conllx``. Everything here is O(n) per check and O(n^2) per lift in the worst
case; real sentences need few lifts (see ``tests/parse/test_projective.py``).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from structkit.io.conllx import check_tree

LIFT = "|"   # the paper's up-arrow: "d|h" = d lifted away from a head labelled h
PATH = "%"   # the paper's down-arrow: an arc on the path a lifted arc was moved along
SCHEMES = ("head", "path", "head+path")

__all__ = [
    "SCHEMES",
    "deprojectivize",
    "is_projective_tree",
    "nonprojective_arcs",
    "projectivize",
    "split_label",
]


def _check_scheme(scheme: str) -> None:
    if scheme not in SCHEMES:
        raise ValueError(f"unknown pseudo-projective scheme {scheme!r}; expected one of "
                         + ", ".join(SCHEMES))


def _check_input(heads: Sequence[int], deprels: Sequence[str]) -> None:
    if len(heads) != len(deprels):
        raise ValueError(f"{len(heads)} heads but {len(deprels)} labels")
    problem = check_tree(heads)
    if problem is not None:
        raise ValueError(f"not a tree: {problem}")


def _children(heads: Sequence[int]) -> list[list[int]]:
    """Dependents of each node 0..n, left to right."""
    kids: list[list[int]] = [[] for _ in range(len(heads) + 1)]
    for d, h in enumerate(heads, 1):
        kids[h].append(d)   # d increases, so every list is sorted
    return kids


def _euler(kids: list[list[int]]) -> tuple[list[int], list[int]]:
    """Pre-order entry time and last entry time within each node's subtree (node 0 = root):
    k descends from h (or is h) iff tin[h] <= tin[k] <= tout[h]."""
    n1 = len(kids)
    tin = [0] * n1
    tout = [0] * n1
    t = 0
    stack = [(0, False)]
    while stack:
        node, done = stack.pop()
        if done:
            tout[node] = t - 1
            continue
        tin[node] = t
        t += 1
        stack.append((node, True))
        for c in reversed(kids[node]):
            stack.append((c, False))
    return tin, tout


def is_projective_tree(heads: Sequence[int]) -> bool:
    """True if every arc is projective (root at position 0), for heads that form a tree.

    A tree is projective exactly when every node's subtree covers a contiguous span of
    positions, which a bottom-up pass over sizes and extreme positions decides in O(n).
    Agrees with ``structkit.io.conllx.is_projective`` (O(n^2)) on trees.
    """
    n = len(heads)
    kids = _children(heads)
    size = [1] * (n + 1)
    lo = list(range(n + 1))
    hi = list(range(n + 1))
    # Parents before children by an explicit stack (no recursion limit), then walked backwards.
    order: list[int] = []
    stack = [0]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(kids[node])
    for node in reversed(order):
        if hi[node] - lo[node] + 1 != size[node]:
            return False
        if node:
            h = heads[node - 1]
            size[h] += size[node]
            lo[h] = min(lo[h], lo[node])
            hi[h] = max(hi[h], hi[node])
    return True


def nonprojective_arcs(heads: Sequence[int]) -> list[int]:
    """The dependents (1-based) whose incoming arc is non-projective: some word strictly
    between head and dependent does not descend from the head. Heads must form a tree."""
    kids = _children(heads)
    tin, tout = _euler(kids)
    out = []
    for d, h in enumerate(heads, 1):
        a, b = (h, d) if h < d else (d, h)
        lo_t, hi_t = tin[h], tout[h]
        for k in range(a + 1, b):
            if not lo_t <= tin[k] <= hi_t:
                out.append(d)
                break
    return out


def projectivize(heads: Sequence[int], deprels: Sequence[str],
                 scheme: str = "head") -> tuple[list[int], list[str], int]:
    """Lift non-projective arcs until the tree is projective; return (heads, labels, lifts).

    The paper's PROJECTIVIZE: while the tree is not projective, take the non-projective arc
    with the shortest distance from head to dependent (ties: leftmost dependent) and move it
    to its head's head. ``lifts`` counts the single-step lifts. Labels encode the lifts by
    ``scheme`` (see the module docstring); a projective tree comes back unchanged.
    """
    _check_scheme(scheme)
    _check_input(heads, deprels)
    for label in deprels:
        if LIFT in label or PATH in label:
            raise ValueError(f"label {label!r} contains {LIFT!r} or {PATH!r}, which mark "
                             "pseudo-projective lifts")
    new_heads = list(heads)
    lifts = 0
    first_head = [0] * len(heads)   # 1-based syntactic head of each lifted dependent (0 = not lifted)
    on_path = [False] * len(heads)
    while not is_projective_tree(new_heads):
        candidates = nonprojective_arcs(new_heads)
        d = min(candidates, key=lambda k: (abs(new_heads[k - 1] - k), k))
        h = new_heads[d - 1]
        # h != 0: an arc from the root is always projective (every word descends from it).
        if first_head[d - 1] == 0:
            first_head[d - 1] = h
        on_path[h - 1] = True
        new_heads[d - 1] = heads_h = new_heads[h - 1]
        assert heads_h != d   # d is h's dependent, so it cannot be h's head
        lifts += 1
    labels = list(deprels)
    use_head = scheme in ("head", "head+path")
    use_path = scheme in ("path", "head+path")
    for i, label in enumerate(deprels):
        if first_head[i]:
            label += LIFT + (deprels[first_head[i] - 1] if use_head else "")
        if use_path and on_path[i]:
            label += PATH
        labels[i] = label
    return new_heads, labels, lifts


def split_label(label: str, scheme: str = "head") -> tuple[str, str | None, bool]:
    """Decode an encoded label: (plain label, head label or None when not lifted, on a path).

    In the ``path`` scheme a lifted arc has head label '' (it records no head). Any string is
    accepted: a malformed encoding decodes to something, never an error.
    """
    _check_scheme(scheme)
    path = False
    if scheme != "head" and label.endswith(PATH):
        label, path = label[:-1], True
    plain, sep, head = label.partition(LIFT)
    if not sep:
        return plain, None, path
    if scheme == "path":
        head = ""
    return plain, head, path


def deprojectivize(heads: Sequence[int], deprels: Sequence[str], scheme: str = "head", *,
                   nearest_first: bool = False) -> tuple[list[int], list[str]]:
    """Undo the lifts encoded in the labels (the paper's heuristic); return (heads, labels).

    Lifted arcs are handled top-down, breadth-first, left to right. For a lifted arc
    ``wi -> wj`` the new head is searched below ``wi``, breadth-first and left to right,
    outside ``wj``'s own subtree:

    * ``head``: the first node whose (decoded) label is the encoded head label;
    * ``path``: following only arcs marked as path arcs, the first node with no marked
      dependent (other than in ``wj``'s subtree);
    * ``head+path``: following only marked path arcs, the first node whose label is the
      encoded head label.

    Where the search finds nothing the arc stays where it is. Every label loses its marks.
    ``nearest_first`` visits each node's dependents nearest to ``wj`` first instead of left to
    right (MaltParser's variant of the search; not the paper's).
    The result is a tree whenever ``heads`` is one: a node is only ever moved below its
    current head and outside its own subtree.
    """
    _check_scheme(scheme)
    _check_input(heads, deprels)
    plain: list[str] = []
    want: list[str | None] = []
    marked: list[bool] = []
    for label in deprels:
        p, h, m = split_label(label, scheme)
        plain.append(p)
        want.append(h)
        marked.append(m)
    new_heads = list(heads)
    kids = _children(new_heads)
    follow_path = scheme in ("path", "head+path")
    match_head = scheme in ("head", "head+path")

    def dependents(node: int, avoid: int) -> list[int]:
        out = [c for c in kids[node] if c != avoid and (marked[c - 1] or not follow_path)]
        if nearest_first:
            out.sort(key=lambda c: abs(c - avoid))   # stable: ties stay left to right
        return out

    def search(start: int, avoid: int, target: str | None) -> int:
        queue = deque(dependents(start, avoid))
        while queue:
            node = queue.popleft()
            below = dependents(node, avoid)
            if match_head:
                if plain[node - 1] == target:
                    return node
            elif not below:
                return node
            queue.extend(below)
        return 0

    queue = deque(kids[0])
    while queue:
        d = queue.popleft()
        target = want[d - 1]
        if target is not None:
            h = new_heads[d - 1]
            found = search(h, d, target)
            if found:
                kids[h].remove(d)
                k = kids[found]
                # Keep the dependents sorted: the search goes left to right.
                pos = len(k)
                while pos and k[pos - 1] > d:
                    pos -= 1
                k.insert(pos, d)
                new_heads[d - 1] = found
        queue.extend(kids[d])
    return new_heads, plain
