"""The compiled kernels (``bisimkit_native``) against their Python bodies: the same outputs, bit for bit."""

import numpy as np
import scipy.sparse as sp

from bisimkit import roundoff


def test_breakpoint_errors_are_the_python_bodys_bit_for_bit():
    rng = np.random.default_rng(9)
    X = rng.random((40, 9)) * (rng.random((40, 9)) < 0.5)
    X[0] = 0.0  # an all-zero row
    X[1] = 0.0
    X[1, 4] = 0.3  # one atom
    X[2] = 1e-300  # tiny masses
    X[3] = 1 / 3  # a total that is not 1 in floats
    X[4] = 0.0
    X[4, :4] = [0.5, 0.25, 0.125, 0.125]  # dyadic: exact sums
    X = sp.csr_matrix(X)
    indptr = X.indptr.astype(np.int64)
    assert roundoff._breakpoint_errors.native is not None
    compiled, python = np.zeros(40), np.zeros(40)
    roundoff._breakpoint_errors(indptr, X.data, compiled)
    roundoff._breakpoint_errors.py_func(indptr, X.data, python)
    assert compiled.tobytes() == python.tobytes()
    assert compiled[1] == 0.0 and compiled[4] == 0.0 and compiled[0] == 0.0
