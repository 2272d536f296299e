"""Runners shared by the differential fuzz tests (their strategies: tests/strategies.py).

Every op is run three ways: eagerly on torch tensors, through `K.function` on a placeholder
whose dimensions are all unknown, and on a `K.variable`; all three must match the reference.
"""
import numpy as np
import torch
from numpy.testing import assert_allclose

from strategies import (  # noqa: F401 (re-exported)
    FLOATS, INTS, array, array_and_axis, arrays, shapes)
from torchk import core as K

TOLERANCE = {'float16': 1e-2, 'float32': 1e-5, 'float64': 1e-10}


def _numpy(value):
    return value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)


def three_ways(fn, *arrays_):
    """`fn` of `arrays_` eagerly, through `K.function` on placeholders with unknown
    dimensions, and on variables: three numpy results."""
    eager = _numpy(fn(*[torch.from_numpy(np.array(a)) for a in arrays_]))
    placeholders = [K.placeholder(ndim=a.ndim, dtype=str(a.dtype)) for a in arrays_]
    graph = K.function(placeholders, [fn(*placeholders)])(list(arrays_))[0]
    variables = [K.variable(a, dtype=str(a.dtype)) for a in arrays_]
    on_variables = K.eval(fn(*variables))
    return eager, np.asarray(graph), np.asarray(on_variables)


def check(fn, reference, *arrays_, rtol=None, dtype=None):
    """Asserts that `fn` of `arrays_`, run three ways, matches `reference(*arrays_)` in value,
    shape and (when given) dtype."""
    expected = np.asarray(reference(*arrays_))
    floats = [str(a.dtype) for a in arrays_ if a.dtype.kind == 'f']
    if rtol is None:
        rtol = max([TOLERANCE[d] for d in floats], default=0)
    for how, result in zip(('eager', 'K.function', 'variable'), three_ways(fn, *arrays_)):
        assert result.shape == expected.shape, (how, result.shape, expected.shape)
        if dtype is not None:
            assert str(result.dtype) == dtype, (how, result.dtype, dtype)
        assert_allclose(result, expected, rtol=rtol, atol=rtol, err_msg=how)
