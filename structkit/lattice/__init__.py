"""The candidate lattice that the morph wing and large-label sequence tasks (``structkit.sequence.lattice``)
both use: per word, the classes seen with its form (``lexicon``), the edit rules that make lemmas
(``rules``), the tagger's features (``features``), the numba kernels that tag, learn and score the
lattice with hashed weights (``kernels``) and its max-marginals (``margins``)."""
