"""Differential fuzzing of activations, losses and products against Keras' numpy backend,
and of gradients against central finite differences."""
import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose

from fuzzing import FLOATS, array_and_axis, arrays, check, shapes
from reference import numpy_backend as npb
from torchk import core as K


@st.composite
def probabilities(draw, dtype, shape):
    logits = draw(arrays(dtype, shape, -5, 5))
    return npb.softmax(logits, -1).astype(dtype)


@given(data=st.data())
def test_softmax(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    x = data.draw(arrays(dtype, shapes(min_dims=1, min_side=1)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    check(lambda t: K.softmax(t, axis), lambda a: npb.softmax(a, axis).astype(dtype), x)


@given(data=st.data())
def test_l2_normalize(data):
    x, axis = data.draw(array_and_axis())
    # TF's epsilon of 1e-12, which the reference lacks (it divides zero rows by zero).
    check(lambda t: K.l2_normalize(t, axis),
          lambda a: (a / np.sqrt(np.maximum(np.sum(a * a, axis, keepdims=True), 1e-12))
                     ).astype(a.dtype), x, rtol=1e-4 if x.dtype == np.float32 else 1e-9)


def _outputs(dtype, shape, from_logits):
    return arrays(dtype, shape, -5, 5) if from_logits else probabilities(dtype, shape)


def _log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), -1, keepdims=True))


def _tf_categorical_crossentropy(target, output, from_logits):
    """TF's loss: exact on logits (the numpy backend takes a clipped softmax), else as the
    numpy backend."""
    if from_logits:
        return -np.sum(target * _log_softmax(output), -1)
    return npb.categorical_crossentropy(target, output)


@pytest.mark.parametrize('from_logits', [False, True])
@given(data=st.data())
def test_categorical_crossentropy(from_logits, data):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1))
    target = data.draw(probabilities(dtype, shape))
    output = data.draw(_outputs(dtype, shape, from_logits))
    check(lambda t, o: K.categorical_crossentropy(t, o, from_logits),
          lambda t, o: _tf_categorical_crossentropy(t, o, from_logits).astype(dtype),
          target, output, rtol=1e-4 if dtype == 'float32' else 1e-9)


@pytest.mark.parametrize('from_logits', [False, True])
@given(data=st.data())
def test_sparse_categorical_crossentropy(from_logits, data):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(shapes(min_dims=2, max_dims=3, min_side=1))
    output = data.draw(_outputs(dtype, shape, from_logits))
    target = data.draw(arrays('int64', shape[:-1], 0, shape[-1] - 1))
    one_hot = np.eye(shape[-1], dtype=dtype)[target]
    # TF takes the log of clipped probabilities as logits, renormalizing them.
    logits = output if from_logits else np.log(np.clip(output, 1e-7, 1 - 1e-7))
    check(lambda t, o: K.sparse_categorical_crossentropy(t, o, from_logits),
          lambda t, o: _tf_categorical_crossentropy(one_hot, logits, True).astype(dtype),
          target, output, rtol=1e-4 if dtype == 'float32' else 1e-9)


@pytest.mark.parametrize('from_logits', [False, True])
@given(data=st.data())
def test_binary_crossentropy(from_logits, data):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(shapes())
    target = data.draw(arrays(dtype, shape, 0, 1))
    output = data.draw(arrays(dtype, shape, -5, 5) if from_logits else arrays(dtype, shape, 0, 1))
    check(lambda t, o: K.binary_crossentropy(t, o, from_logits),
          lambda t, o: npb.binary_crossentropy(t, o, from_logits).astype(dtype),
          target, output, rtol=1e-4 if dtype == 'float32' else 1e-9)


@given(data=st.data())
def test_dot(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    x = data.draw(arrays(dtype, shapes(min_dims=1, max_dims=3)))
    inner = x.shape[-1]
    y_shape = data.draw(shapes(min_dims=1, max_dims=3))
    y_shape = y_shape[:-2] + (inner,) + y_shape[-1:] if len(y_shape) >= 2 else (inner,)
    y = data.draw(arrays(dtype, y_shape))
    check(K.dot, lambda a, b: npb.dot(a, b).astype(dtype), x, y, rtol=1e-4)


@given(data=st.data())
def test_batch_dot(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    batch, rows, inner, cols = (data.draw(st.integers(1, 3)) for _ in range(4))
    x = data.draw(arrays(dtype, (batch, rows, inner)))
    y = data.draw(arrays(dtype, (batch, inner, cols)))
    axes = data.draw(st.sampled_from([None, (2, 1), [-1, -2]]))
    check(lambda a, b: K.batch_dot(a, b, axes), lambda a, b: npb.batch_dot(a, b, axes).astype(dtype),
          x, y, rtol=1e-4)


DIFFERENTIABLE = {
    'square': K.square, 'exp': K.exp, 'tanh': K.tanh, 'sigmoid': K.sigmoid,
    'softplus': K.softplus, 'softsign': K.softsign, 'softmax': K.softmax,
    # l2_normalize and std are not differentiable at zero norm / variance: kept away from it.
    'l2_normalize': lambda t: K.l2_normalize(K.concatenate([t, K.ones_like(t)], -1), -1), 'logsumexp': lambda t: K.logsumexp(t, -1),
    'sum': lambda t: K.sum(t, -1), 'mean': lambda t: K.mean(t, 0), 'var': lambda t: K.var(t, -1),
    'std': lambda t: K.std(K.concatenate([t, t + 1.], -1), -1), 'prod': lambda t: K.prod(t, -1),
    'cumsum': lambda t: K.cumsum(t, 0), 'cumprod': lambda t: K.cumprod(t, -1),
    'dot': lambda t: K.dot(t, K.transpose(t)), 'batch_flatten': K.batch_flatten,
    'categorical_crossentropy': lambda t: K.categorical_crossentropy(
        K.softmax(t * 0.5), K.softmax(t), from_logits=False),
    'binary_crossentropy_logits': lambda t: K.binary_crossentropy(K.sigmoid(-t), t, True),
    'permute_repeat_tile': lambda t: K.tile(K.repeat_elements(K.transpose(t), 2, 0), (1, 2)),
}


@pytest.mark.parametrize('name', sorted(DIFFERENTIABLE))
@given(x=hnp.arrays('float64', hnp.array_shapes(min_dims=2, max_dims=2, min_side=1,
                                                 max_side=3),
                    elements=st.floats(-2, 2)))
def test_gradient_matches_finite_differences(name, x):
    fn = DIFFERENTIABLE[name]
    weights = np.random.RandomState(0).randn(*np.shape(fn(torch.from_numpy(x))))
    placeholder = K.placeholder(x.shape, dtype='float64')
    loss = K.sum(fn(placeholder) * K.constant(weights, dtype='float64'))
    gradient = K.function([placeholder], K.gradients(loss, [placeholder]))([x])[0]

    def value(a):
        return float(np.sum(fn(torch.from_numpy(a)).numpy() * weights))

    step = 1e-6
    numeric = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        shift = np.zeros_like(x)
        shift[index] = step
        numeric[index] = (value(x + shift) - value(x - shift)) / (2 * step)
    assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-5)
