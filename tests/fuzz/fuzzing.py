"""Strategies and runners shared by the differential fuzz tests.

Every op is run three ways: eagerly on torch tensors, through `K.function` on a placeholder
whose dimensions are all unknown, and on a `K.variable`; all three must match the reference.
"""
import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose

from torchk import core as K

FLOATS = ('float32', 'float64')
INTS = ('int32', 'int64')
TOLERANCE = {'float16': 1e-2, 'float32': 1e-5, 'float64': 1e-10}


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def arrays(dtype, shape, low=-10., high=10.):
    """Arrays of `dtype` with values in `[low, high]` (integers for integer dtypes)."""
    if np.dtype(dtype).kind == 'i':
        elements = st.integers(int(low), int(high))
    else:
        elements = st.floats(low, high, width=np.dtype(dtype).itemsize * 8)
    return hnp.arrays(dtype, shape, elements=elements)


@st.composite
def array_and_axis(draw, dtypes=FLOATS, min_dims=1, low=-10., high=10.):
    """An array and an axis argument: an int (possibly negative), None or a tuple."""
    dtype = draw(st.sampled_from(dtypes))
    x = draw(arrays(dtype, shapes(min_dims=min_dims), low, high))
    axes = st.integers(-x.ndim, x.ndim - 1) if x.ndim else st.none()
    axis = draw(st.one_of(st.none(), axes,
                          st.lists(axes, min_size=1, max_size=x.ndim, unique_by=lambda a: a % max(x.ndim, 1)).map(tuple))
                if x.ndim else st.none())
    return x, axis


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
