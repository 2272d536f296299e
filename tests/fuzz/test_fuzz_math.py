"""Differential fuzzing of element-wise math and reductions against Keras' numpy backend."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from fuzzing import FLOATS, INTS, array_and_axis, arrays, check, shapes
from reference import numpy_backend as npb
from torchk import core as K

UNARY = {
    'square': (K.square, np.square, -10, 10),
    'abs': (K.abs, np.abs, -10, 10),
    'sqrt': (K.sqrt, np.sqrt, 0, 10),
    'exp': (K.exp, np.exp, -10, 10),
    'log': (K.log, np.log, 0.125, 10),
    'sign': (K.sign, np.sign, -10, 10),
    'round': (K.round, np.round, -10, 10),
    'sin': (K.sin, np.sin, -10, 10),
    'cos': (K.cos, np.cos, -10, 10),
    'sigmoid': (K.sigmoid, npb.sigmoid, -10, 10),
    'tanh': (K.tanh, np.tanh, -10, 10),
    'softplus': (K.softplus, npb.softplus, -10, 10),
    'softsign': (K.softsign, npb.softsign, -10, 10),
    'hard_sigmoid': (K.hard_sigmoid, npb.hard_sigmoid, -10, 10),
    'elu': (K.elu, npb.elu, -10, 10),
    'relu': (K.relu, npb.relu, -10, 10),
}


@pytest.mark.parametrize('name', sorted(UNARY))
@given(data=st.data())
def test_unary(name, data):
    fn, reference, low, high = UNARY[name]
    dtype = data.draw(st.sampled_from(FLOATS))
    x = data.draw(arrays(dtype, shapes(), low, high))
    check(fn, lambda a: reference(a).astype(dtype), x, dtype=dtype)


BINARY = {
    'maximum': (K.maximum, np.maximum),
    'minimum': (K.minimum, np.minimum),
    'add': (lambda a, b: a + b, np.add),
    'subtract': (lambda a, b: a - b, np.subtract),
    'multiply': (lambda a, b: a * b, np.multiply),
    'equal': (K.equal, np.equal),
    'greater': (K.greater, np.greater),
    'less_equal': (K.less_equal, np.less_equal),
}


@pytest.mark.parametrize('name', sorted(BINARY))
@given(data=st.data())
def test_binary_broadcasting(name, data):
    fn, reference = BINARY[name]
    dtype = data.draw(st.sampled_from(FLOATS + INTS))
    shape_a, shape_b = data.draw(hnp_broadcastable())
    a = data.draw(arrays(dtype, shape_a))
    b = data.draw(arrays(dtype, shape_b))
    check(fn, reference, a, b)


def hnp_broadcastable():
    from hypothesis.extra import numpy as hnp
    return hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, min_side=0,
                                             max_side=3).map(lambda s: s.input_shapes)


REDUCTIONS = {
    'sum': (K.sum, npb.sum, FLOATS + INTS),
    'prod': (K.prod, npb.prod, FLOATS + INTS),
    'mean': (K.mean, npb.mean, FLOATS),
    'var': (K.var, npb.var, FLOATS),
    'std': (K.std, npb.std, FLOATS),
    'max': (K.max, npb.max, FLOATS + INTS),
    'min': (K.min, npb.min, FLOATS + INTS),
    # scipy's logsumexp, which the reference calls, fails on empty arrays.
    'logsumexp': (K.logsumexp, lambda a, axis, keepdims: np.log(
        np.sum(np.exp(a), axis=axis, keepdims=keepdims)), FLOATS),
}


@pytest.mark.parametrize('name', sorted(REDUCTIONS))
@given(data=st.data(), keepdims=st.booleans())
def test_reductions(name, data, keepdims):
    fn, reference, dtypes = REDUCTIONS[name]
    low, high = (-2, 2) if name == 'prod' else (-10, 10)
    x, axis = data.draw(array_and_axis(dtypes, low=low, high=high))
    reduced = range(x.ndim) if axis is None else np.atleast_1d(axis)
    if name in ('max', 'min') and any(x.shape[a] == 0 for a in reduced):
        return  # numpy refuses empty max/min; TF's -inf/+inf is checked in test_math_ops
    check(lambda t: fn(t, axis=axis, keepdims=keepdims),
          lambda a: np.asarray(reference(a, axis=axis, keepdims=keepdims)).astype(a.dtype),
          x, rtol=1e-4 if x.dtype == np.float32 else 1e-9)


@pytest.mark.parametrize('name', ['argmax', 'argmin'])
@given(data=st.data())
def test_arg_reductions(name, data):
    dtype = data.draw(st.sampled_from(FLOATS + INTS))
    x = data.draw(arrays(dtype, shapes(min_dims=1, min_side=1)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    check(lambda t: getattr(K, name)(t, axis), lambda a: getattr(np, name)(a, axis), x)


@pytest.mark.parametrize('name', ['cumsum', 'cumprod'])
@given(data=st.data())
def test_cumulative(name, data):
    dtype = data.draw(st.sampled_from(FLOATS + INTS))
    x = data.draw(arrays(dtype, shapes(min_dims=1), -2, 2))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    check(lambda t: getattr(K, name)(t, axis), lambda a: getattr(np, name)(a, axis), x)


@given(data=st.data())
def test_clip(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    x = data.draw(arrays(dtype, shapes()))
    low, high = sorted(data.draw(st.lists(st.floats(-5, 5), min_size=2, max_size=2)))
    check(lambda t: K.clip(t, low, high), lambda a: npb.clip(a, low, high).astype(dtype), x)


@pytest.mark.parametrize('name', ['any', 'all'])
@given(data=st.data(), keepdims=st.booleans())
def test_boolean_reductions(name, data, keepdims):
    x, axis = data.draw(array_and_axis(INTS, low=0, high=1))
    check(lambda t: getattr(K, name)(t, axis, keepdims),
          lambda a: getattr(np, name)(a, axis=axis, keepdims=keepdims), x)


@pytest.mark.parametrize('name', ['abs', 'square', 'sign'])
@given(data=st.data())
def test_unary_integer(name, data):
    fn, reference, low, high = UNARY[name]
    dtype = data.draw(st.sampled_from(INTS))
    x = data.draw(arrays(dtype, shapes(), low, high))
    check(fn, reference, x, dtype=dtype)


@pytest.mark.parametrize('name', sorted(UNARY))
@given(data=st.data())
def test_unary_float16(name, data):
    fn, reference, low, high = UNARY[name]
    x = data.draw(arrays('float16', shapes(max_dims=2), low, high))
    check(fn, lambda a: reference(a.astype('float32')).astype('float16'), x, rtol=1e-2,
          dtype='float16')
