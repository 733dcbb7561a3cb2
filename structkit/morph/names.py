"""The names of the morph tagger's and lemmatizer's hashed feature columns, as ``explain`` shows
them: the template and the value it read (the layouts of ``features.tag_features`` and
``features.lemma_features``; tests/morph checks the names against the values)."""
from __future__ import annotations

from structkit.lattice.features import PAD, SUFFIXES, known_joined, own_strings, shape


def _own_values(form: str) -> list[tuple[str, str]]:
    """(template, value) of the word's own feature columns, as ``features.type_values`` reads it."""

    return own_strings(form)


def feature_names(words: list[str], i: int, known: bool, amb: str) -> list[str]:
    """The names of ``features.tag_features``' columns at word ``i``, ``amb`` what its
    ambiguity class (its candidates) is shown as."""

    def at(d):
        return words[i + d] if 0 <= i + d < len(words) else None

    own = [f"{t}={v}" for t, v in _own_values(words[i])]
    if not known:
        own[0], own[1] = "w=<unknown>", "l=<unknown>"

    def low(d):
        w = at(d)
        return PAD if w is None else w.lower()

    def suf(d, k):
        w = at(d)
        return PAD if w is None else w.lower()[-k:]

    def sh(d):
        w = at(d)
        return PAD if w is None else shape(w)

    names = own + [f"amb={'known' if known else 'guessed'}:{amb}", "bias"]
    names += [f"l[{d:+d}]={low(d)}" for d in (-2, -1, 1, 2)]
    names += [f"s{k}[{d:+d}]={suf(d, k)}" for k in (2, 3) for d in (-1, 1)]
    names += [f"s3[{d:+d}]={suf(d, 3)}" for d in (-2, 2)]
    for d in (-1, 1):
        names += [f"sh[{d:+d}]={sh(d)}", f"amb[{d:+d}]"]
    names += [f"l[-1]l[0]={low(-1)} {low(0)}", f"l[0]l[+1]={low(0)} {low(1)}"]
    values = dict(_own_values(words[i]))
    names += [f"{t}|{'known' if known else 'unknown'}={values[t]}" for t in known_joined()]
    return names


def lemma_feature_names(model, form: str, tag: str) -> list[str]:
    """The names of the lemmatizer's feature columns (``features.lemma_features``' layout)."""
    upos = tag.split("\t")[0]
    shown = tag.replace("\t", " ")
    own = [f"{t}={v}" for t, v in _own_values(form)]
    low = form.lower()
    names = own + [f"tag={shown}", f"upos={upos}", f"tag x l={shown} {low}"]

    for k in range(1, min(SUFFIXES, 5) + 1):
        names += [f"s{k} x upos={low[-k:]} {upos}", f"s{k} x tag={low[-k:]} {shown}"]
    clusters = model.tables.clusters
    if clusters is not None:   # ``features.cluster_lemma_features``
        ids = clusters.lookup(form)
        at = [("-" if ids is None else str(ids[j])) for j in range(len(clusters.levels))]
        names += [f"c{k}={v}" for k, v in zip(clusters.levels, at)]
        names.append(f"c{clusters.levels[-1]} x upos={at[-1]} {upos}")
    return names
