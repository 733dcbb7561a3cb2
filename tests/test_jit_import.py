"""structkit.jit imports numba without scipy (numba's arraymath would import scipy.linalg to
ask for BLAS, 0.1 s of every command that runs a kernel), and scipy stays importable and
usable by numba afterwards."""
from __future__ import annotations

import subprocess
import sys

from tests.clitools import sk_env


def _run(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=sk_env())
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_a_kernel_call_does_not_import_scipy_and_scipy_still_works():
    out = _run("""
import sys
import numpy as np
from structkit.parse import beam as bm
out = np.zeros(2, dtype=np.int64)
bm.hash_slots(3, np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64), 1023, out)
ref = [bm._h.py_func(3, *row) & 1023 for row in ([1, 2, 3], [4, 5, 6])]
first = [out.tolist() == [int(x) for x in ref], 'numba' in sys.modules, 'scipy' in sys.modules]
import scipy.linalg                       # still importable once numba is in
from structkit.jit import njit
def inner(a, b):                          # and numba's BLAS functions still compile
    return np.dot(a, b)
kernel = njit(inner)
print(first + [float(kernel(np.ones(3), np.arange(3.0)))])
""")
    assert out == "[True, True, False, 3.0]"


def test_scipy_imported_first_is_left_alone():
    out = _run("""
import sys
import scipy.linalg
import numpy as np
from structkit.parse import beam as bm
out = np.zeros(1, dtype=np.int64)
bm.hash_slots(0, np.zeros((1, 3), dtype=np.int64), 255, out)
import numba.np.arraymath as am
print([sys.modules['scipy'] is not None, am._HAVE_BLAS])
""")
    assert out == "[True, True]"
