"""Tests for structkit.parse.projective: pseudo-projective parsing (Nivre & Nilsson 2005)."""
from __future__ import annotations

import random
import time

import pytest

from structkit.io.conllx import check_tree, is_projective, read_conllx
from structkit.parse.projective import (
    LIFT,
    SCHEMES,
    deprojectivize,
    is_projective_tree,
    nonprojective_arcs,
    projectivize,
    split_label,
)


def random_tree(rng: random.Random, n: int, roots: int = 1) -> list[int]:
    """Heads (1-based, 0 = root) of a random tree: nodes join in a random order, each under a
    random node already placed, so any shape (and any crossing) can come out."""
    order = list(range(1, n + 1))
    rng.shuffle(order)
    heads = [0] * n
    for i, node in enumerate(order):
        heads[node - 1] = 0 if i < min(roots, n) else order[rng.randrange(i)]
    return heads


def ancestors(heads: list[int], node: int) -> list[int]:
    out = []
    while node:
        node = heads[node - 1]
        out.append(node)
    return out


# ----------------------------------------------------------------------------- hand-made trees

# "A hearing is scheduled on the issue today": 'on the issue' belongs to 'hearing' and 'today'
# to 'scheduled', and the two arcs cross each other and the verb's.
HEARING_HEADS = [2, 3, 0, 3, 2, 7, 5, 4]
HEARING_LABELS = ["det", "nsubj", "root", "xcomp", "nmod", "det", "obj", "obl"]


def test_hearing_lifts_the_shorter_arc_first_then_the_other():
    assert nonprojective_arcs(HEARING_HEADS) == [5, 8]
    heads, labels, lifts = projectivize(HEARING_HEADS, HEARING_LABELS)
    # 2->5 (length 3) goes first, to 'is'; 4->8 stays crossing ('on' left 'hearing' for 'is',
    # which 'scheduled' does not dominate), so it is lifted too, to 'is'.
    assert heads == [2, 3, 0, 3, 3, 7, 5, 3]
    assert labels == ["det", "nsubj", "root", "xcomp", "nmod|nsubj", "det", "obj", "obl|xcomp"]
    assert lifts == 2
    assert is_projective(heads)
    assert deprojectivize(heads, labels) == (HEARING_HEADS, HEARING_LABELS)


# Token 1 hangs from 4, whose head 3 hangs from 5: 4->1 crosses 5->2, and so does 3->1 after one
# lift, so the arc is lifted twice, to 5; the label keeps the first head's label (e).
DOUBLE_HEADS = [4, 5, 5, 3, 0]
DOUBLE_LABELS = ["a", "b", "c", "e", "root"]


@pytest.mark.parametrize("scheme, labels", [
    ("head", ["a|e", "b", "c", "e", "root"]),
    ("path", ["a|", "b", "c%", "e%", "root"]),
    ("head+path", ["a|e", "b", "c%", "e%", "root"]),
])
def test_double_lift_in_each_scheme(scheme, labels):
    heads, got, lifts = projectivize(DOUBLE_HEADS, DOUBLE_LABELS, scheme)
    assert (heads, got, lifts) == ([5, 5, 5, 3, 0], labels, 2)
    assert deprojectivize(heads, got, scheme) == (DOUBLE_HEADS, DOUBLE_LABELS)


def test_ties_go_to_the_leftmost_dependent():
    # 5->2 and 1->4 are both non-projective and both of length 3. Lifting 2 first (the leftmost
    # dependent) takes it to 3 and then 4 twice, from 1 to 2 to 3; lifting 4 first would have
    # left it under 5 instead.
    heads = [2, 5, 0, 1, 3]
    assert nonprojective_arcs(heads) == [2, 4]
    new, labels, lifts = projectivize(heads, ["a", "b", "root", "d", "e"])
    assert (new, labels, lifts) == ([2, 3, 0, 3, 3], ["a", "b|e", "root", "d|a", "e"], 3)
    assert deprojectivize(new, labels) == (heads, ["a", "b", "root", "d", "e"])


def test_projective_trees_are_left_alone():
    heads, labels = [2, 0, 2, 3], ["nsubj", "root", "obj", "case"]
    assert projectivize(heads, labels) == (heads, labels, 0)
    assert deprojectivize(heads, labels) == (heads, labels)


def test_a_lift_not_found_by_the_search_only_loses_its_mark():
    # 'obl|nsubj' but no nsubj below the root: the arc stays, the label is stripped.
    assert deprojectivize([2, 0, 2], ["det", "root", "obl|nsubj"]) == ([2, 0, 2],
                                                                       ["det", "root", "obl"])


def test_the_search_is_breadth_first_then_left_to_right():
    # Below the root 1: dependents 2 (x) and 4 (x); 3 (x) under 2 is deeper. The lifted 5 goes
    # to the first x in breadth-first, left-to-right order: 2, not 3 (deeper) nor 4 (further right).
    heads, labels = deprojectivize([0, 1, 2, 1, 1], ["root", "x", "x", "x", "d|x"])
    assert heads == [0, 1, 2, 1, 2] and labels == ["root", "x", "x", "x", "d"]


def test_the_search_skips_the_lifted_dependents_own_subtree():
    # The only x lies below the lifted word itself: attaching there would make a cycle.
    assert deprojectivize([0, 1, 2], ["root", "d|x", "x"]) == ([0, 1, 2], ["root", "d", "x"])


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="contains"):
        projectivize([0, 1], ["root", "a|b"])
    with pytest.raises(ValueError, match="contains"):
        projectivize([0, 1], ["root", "a%"], "path")
    with pytest.raises(ValueError, match="not a tree"):
        projectivize([2, 1], ["a", "b"])
    with pytest.raises(ValueError, match="not a tree"):
        deprojectivize([2, 1], ["a", "b"])
    with pytest.raises(ValueError, match="labels"):
        projectivize([0, 1], ["root"])
    with pytest.raises(ValueError, match="scheme"):
        projectivize([0], ["root"], "trace")


def test_split_label():
    assert split_label("nmod|obj") == ("nmod", "obj", False)
    assert split_label("nmod") == ("nmod", None, False)
    assert split_label("nmod|obj%", "head+path") == ("nmod", "obj", True)
    assert split_label("nmod|%", "path") == ("nmod", "", True)
    assert split_label("conj%", "path") == ("conj", None, True)
    assert split_label("a%", "head") == ("a%", None, False)   # '%' means nothing in 'head'


# ----------------------------------------------------------------------------- random trees

def test_fast_projectivity_check_agrees_with_the_pairwise_one():
    rng = random.Random(3)
    for _ in range(3000):
        heads = random_tree(rng, rng.randint(1, 12), rng.choice([1, 1, 2]))
        assert is_projective_tree(heads) == is_projective(heads)
        assert (nonprojective_arcs(heads) == []) == is_projective(heads)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_projectivize_random_trees(scheme):
    """Always a projective tree over the same words, each arc moved only up its own head chain,
    and the labels decode to the original ones."""
    rng = random.Random(11)
    nonprojective = 0
    for _ in range(2000):
        n = rng.randint(1, 16)
        heads = random_tree(rng, n, rng.choice([1, 1, 3]))
        labels = [rng.choice(["a", "b", "c"]) for _ in range(n)]
        new, enc, lifts = projectivize(heads, labels, scheme)
        nonprojective += not is_projective(heads)
        assert len(new) == len(enc) == n
        assert check_tree(new) is None and is_projective(new)
        assert (lifts == 0) == is_projective(heads)
        for d in range(1, n + 1):
            plain, head_label, _ = split_label(enc[d - 1], scheme)
            assert plain == labels[d - 1]
            if new[d - 1] == heads[d - 1]:
                assert head_label is None
            else:
                assert new[d - 1] in ancestors(heads, heads[d - 1])
                assert head_label == ("" if scheme == "path" else labels[heads[d - 1] - 1])
    assert nonprojective > 1000   # the sample does exercise lifting


@pytest.mark.parametrize("scheme", ["head", "head+path"])
def test_round_trip_is_exact_when_every_label_is_unique(scheme):
    """With one label per word the encoded head label names the syntactic head unambiguously,
    and the top-down search then finds it every time."""
    rng = random.Random(5)
    lifted = 0
    for _ in range(3000):
        n = rng.randint(2, 20)
        heads = random_tree(rng, n, rng.choice([1, 1, 2]))
        labels = [f"l{i}" for i in range(n)]
        new, enc, lifts = projectivize(heads, labels, scheme)
        lifted += lifts > 0
        assert deprojectivize(new, enc, scheme) == (heads, labels)
    assert lifted > 2000


def test_round_trip_rate_with_ambiguous_labels():
    """Few labels make the search ambiguous; measure how often the original comes back."""
    rng = random.Random(9)
    trees = []
    for _ in range(2000):
        n = rng.randint(2, 16)
        heads = random_tree(rng, n)
        trees.append((heads, [rng.choice(["a", "b", "c", "d", "e"]) for _ in range(n)]))
    rates = {}
    for scheme in SCHEMES:
        sent = arcs = total = 0
        for heads, labels in trees:
            if is_projective(heads):
                continue
            new, enc, _ = projectivize(heads, labels, scheme)
            back, plain = deprojectivize(new, enc, scheme)
            assert plain == labels
            sent += back == heads
            arcs += sum(a == b for a, b in zip(back, heads))
            total += len(heads)
        rates[scheme] = sent / sum(not is_projective(h) for h, _ in trees)
        print(f"\nrandom non-projective trees, 5 labels, {scheme}: sentences restored "
              f"{100 * rates[scheme]:.1f}%, arcs {100 * arcs / total:.1f}%")   # shown with -s or on failure
    # Measured (seed 9): sentences head 26.3%, path 23.6%, head+path 47.6% (arcs 75.9%, 66.0%,
    # 86.9%). Random trees with 5 labels are far more tangled and ambiguous than treebank trees
    # (see the corpus test); these floors guard against the search breaking, and the combined
    # scheme, which tells the search more, must do best.
    assert rates["head"] > 0.2 and rates["path"] > 0.18 and rates["head+path"] > 0.4
    assert rates["head+path"] > max(rates["head"], rates["path"])


GARBAGE = ["a", "b", "a|b", "b|a", "|", "||", "a|", "|a", "%", "a%", "a|b%", "%|%", "b|a|b",
           "a|a", "", "root|a"]


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("nearest_first", [False, True])
def test_deprojectivize_always_returns_a_tree(scheme, nearest_first):
    rng = random.Random(13)
    for _ in range(3000):
        n = rng.randint(1, 14)
        heads = random_tree(rng, n, rng.choice([1, 1, 2]))
        labels = [rng.choice(GARBAGE) for _ in range(n)]
        new, plain = deprojectivize(heads, labels, scheme, nearest_first=nearest_first)
        assert len(new) == len(plain) == n
        assert check_tree(new) is None
        for d in range(1, n + 1):
            assert LIFT not in plain[d - 1]
            if new[d - 1] != heads[d - 1]:
                # Only lifted arcs move, and only down into their head's subtree.
                assert LIFT in labels[d - 1]
                assert heads[d - 1] in ancestors(new, new[d - 1]) + [new[d - 1]]


# ----------------------------------------------------------------------------- treebanks

UD_FILES = [
    "ud-english-partut/en_partut-ud-train.conllu",
    "ud-english-partut/en_partut-ud-dev.conllu",
    "ud-english-partut/en_partut-ud-test.conllu",
    "ud-english-ewt/en_ewt-ud-dev.conllu",
    "ud-english-ewt/en_ewt-ud-test.conllu",
]


@pytest.mark.corpus
@pytest.mark.parametrize("scheme", SCHEMES)
def test_ud_treebanks_round_trip(corpus, scheme):
    """Every UD tree becomes projective; deprojectivizing the gold transformed trees restores
    nearly all of them.

    Measured (head scheme; sentences / all arcs / lifted arcs restored): ParTUT train 99.72% /
    99.979% / 35 of 44, dev and test 100%, EWT dev 99.95% / 99.996% / 46 of 47, EWT test
    99.86% / 99.984% / 33 of 37. Non-projective arcs are only 0.06-0.19% of all arcs here, so a
    floor on all arcs says little: the floors that matter are per file >= 99.5% of sentences
    (the worst measured is 99.72%) and, pooled, >= 80% of the lifted arcs (measured 89.6% for
    head, 97.0% path, 99.3% head+path). The misses are real ambiguities of the heuristic (an
    earlier word in breadth-first order with the encoded head label), not bugs.
    """
    pooled_lifted = pooled_restored = 0
    for rel in UD_FILES:
        sents = [s for s in read_conllx(str(corpus(rel)))]
        encoded = []
        t0 = time.perf_counter()
        for s in sents:
            encoded.append(projectivize(s.heads, s.deprels, scheme))
        t1 = time.perf_counter()
        decoded = [deprojectivize(h, l, scheme) for h, l, _ in encoded]
        t2 = time.perf_counter()
        n_arcs = sum(len(s.heads) for s in sents)
        nonproj_arcs = nonproj_sents = sent_ok = arc_ok = lifted = lifted_ok = lifts = 0
        for s, (ph, pl, k), (rh, rl) in zip(sents, encoded, decoded):
            assert is_projective(ph) and check_tree(rh) is None
            assert rl == s.deprels
            np_arcs = len(nonprojective_arcs(s.heads))
            nonproj_arcs += np_arcs
            nonproj_sents += np_arcs > 0
            lifts += k
            ok = [a == b for a, b in zip(rh, s.heads)]
            sent_ok += all(ok)
            arc_ok += sum(ok)
            moved = [i for i in range(len(ph)) if ph[i] != s.heads[i]]
            lifted += len(moved)
            lifted_ok += sum(ok[i] for i in moved)
        pooled_lifted += lifted
        pooled_restored += lifted_ok
        per_k = 1e6 / len(sents)
        print(f"\n{rel.split('/')[1]} [{scheme}]: {len(sents)} sentences, {n_arcs} arcs; "
              f"non-projective: {nonproj_sents} sentences ({100 * nonproj_sents / len(sents):.2f}%), "
              f"{nonproj_arcs} arcs ({100 * nonproj_arcs / n_arcs:.3f}%), {lifts} lifts; "
              f"restored: sentences {100 * sent_ok / len(sents):.2f}%, "
              f"arcs {100 * arc_ok / n_arcs:.3f}%, lifted arcs {lifted_ok}/{lifted}; "
              f"ms per 1000 sentences: projectivize {(t1 - t0) * per_k:.0f}, "
              f"deprojectivize {(t2 - t1) * per_k:.0f}")
        assert sent_ok / len(sents) >= 0.995
        assert arc_ok / n_arcs >= 0.999
    assert pooled_restored / pooled_lifted >= 0.80
