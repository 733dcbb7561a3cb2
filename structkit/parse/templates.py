"""Unrolling a parser's feature template table into a numba kernel.

Each parser declares its templates once, as data next to the kernel that computes their
atoms (:data:`structkit.parse.arcstandard.TEMPLATES`, :data:`structkit.parse.beam.TEMPLATES`);
the kernels, ``structkit dump`` (:mod:`structkit.parse.dump`) and the feature tests read that
table. A loop over the table in the kernel costs about twice the hand-unrolled code it
replaced (indirect atom loads and a runtime template id in every hash), so :func:`unroll`
writes the loop out: one line per template, atoms read as constant positions of the tuple the
kernel's atom function returns, template ids as literals, exactly as a hand-written kernel
would have it.

Plain Python (numba is imported when the kernel is first called, as everywhere).
"""
from __future__ import annotations

import zlib

from structkit.jit import njit


def unroll(name: str, params: str, hash_call: str, rows, env: dict, filename: str, target: str = "out[k]"):
    """A numba kernel ``name(params)`` that writes the hash of each row's template into
    ``target`` (``out[k]``, or e.g. ``out[r, k]``), k = 0, 1, ... in row order, and returns k.

    rows: (template id, gate, atom expressions); a row with a gate (an expression such as
    ``groups & 4``) is emitted only where the gate is true. ``hash_call`` formats one hash from
    ``{t}`` (the id) and ``{atoms}`` (the atom expressions joined by commas). The function is
    compiled in ``env`` (the kernel module's globals, where it finds the hash) with
    ``filename`` (the kernel module's file, where numba keeps its cache); its name carries a
    digest of its source, so a changed table never meets a stale cache entry. Inlined into
    its caller (``inline="always"``), so the atoms stay in registers."""
    lines = [f"def {{name}}({params}):", "    k = 0"]
    gate = None
    for t, g, atoms in rows:
        if g != gate:
            gate = g
            if g is not None:
                lines.append(f"    if {g}:")
        indent = "    " if g is None else "        "
        lines.append(f"{indent}{target} = {hash_call.format(t=t, atoms=', '.join(atoms))}")
        lines.append(f"{indent}k += 1")
    lines.append("    return k")
    src = "\n".join(lines)
    real = f"{name}_{zlib.crc32(src.encode()):08x}"
    exec(compile(src.format(name=real) + "\n", filename, "exec"), env)  # noqa: S102 (our own table)
    fn = env.pop(real)
    return njit(fn, inline="always")
