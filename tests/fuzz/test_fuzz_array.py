"""Differential fuzzing of array ops against Keras' numpy backend and numpy."""
import numpy as np
from hypothesis import given, strategies as st

from fuzzing import INTS, array, arrays, check, shapes
from reference import numpy_backend as npb
from torchk import core as K


@given(data=st.data())
def test_concatenate(data):
    x = data.draw(array(min_dims=1))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    other_shape = list(x.shape)
    other_shape[axis] = data.draw(st.integers(0, 3))
    y = data.draw(arrays(x.dtype, tuple(other_shape)))
    check(lambda a, b: K.concatenate([a, b], axis), lambda a, b: np.concatenate([a, b], axis),
          x, y)


@given(data=st.data())
def test_reshape_with_minus_one(data):
    x = data.draw(array(min_side=1))
    shape = list(data.draw(st.permutations(x.shape)))
    if shape:
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    check(lambda t: K.reshape(t, shape), lambda a: np.reshape(a, shape), x)


@given(data=st.data())
def test_permute_dimensions(data):
    x = data.draw(array())
    pattern = data.draw(st.permutations(range(x.ndim)))
    check(lambda t: K.permute_dimensions(t, pattern), lambda a: np.transpose(a, pattern), x)


@given(data=st.data())
def test_repeat_elements(data):
    x = data.draw(array(min_dims=1))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    rep = data.draw(st.integers(1, 3))
    check(lambda t: K.repeat_elements(t, rep, axis), lambda a: npb.repeat_elements(a, rep, axis),
          x)


@given(data=st.data())
def test_repeat(data):
    x = data.draw(array(min_dims=2, max_dims=2))
    n = data.draw(st.integers(0, 3))
    check(lambda t: K.repeat(t, n), lambda a: npb.repeat(a, n), x)


@given(data=st.data())
def test_tile(data):
    x = data.draw(array(min_dims=1))
    n = data.draw(st.lists(st.integers(0, 3), min_size=x.ndim, max_size=x.ndim))
    check(lambda t: K.tile(t, n), lambda a: np.tile(a, n), x)


@given(data=st.data())
def test_gather(data):
    x = data.draw(array(min_dims=1, min_side=1))
    indices = data.draw(arrays(data.draw(st.sampled_from(INTS)), shapes(max_dims=2), 0,
                               x.shape[0] - 1))
    check(K.gather, lambda a, i: a[i], x, indices)


@given(data=st.data())
def test_one_hot(data):
    classes = data.draw(st.integers(1, 4))
    indices = data.draw(arrays(data.draw(st.sampled_from(INTS)), shapes(max_dims=3), -1,
                               classes))
    check(lambda i: K.one_hot(i, classes),
          lambda i: (i[..., None] == np.arange(classes)).astype('float32'), indices)


@given(data=st.data())
def test_slice(data):
    x = data.draw(array(min_dims=1))
    start = [data.draw(st.integers(0, d)) for d in x.shape]
    size = [data.draw(st.sampled_from([-1, data.draw(st.integers(0, d - b))]))
            for b, d in zip(start, x.shape)]
    # The reference reads a size of -1 as a Python slice end; TF (and torchk) take the rest.
    ends = [d if n == -1 else b + n for b, n, d in zip(start, size, x.shape)]
    check(lambda t: K.slice(t, start, size),
          lambda a: a[tuple(slice(b, e) for b, e in zip(start, ends))], x)


@given(data=st.data())
def test_reverse(data):
    x = data.draw(array(min_dims=1))
    axes = data.draw(st.lists(st.integers(0, x.ndim - 1), min_size=1, unique=True))
    check(lambda t: K.reverse(t, axes), lambda a: np.flip(a, axes), x)


@given(data=st.data())
def test_expand_dims_and_squeeze(data):
    x = data.draw(array())
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    check(lambda t: K.squeeze(K.expand_dims(t, axis), axis), lambda a: a, x)
    check(lambda t: K.expand_dims(t, axis), lambda a: np.expand_dims(a, axis), x)


@given(data=st.data())
def test_stack(data):
    x = data.draw(array())
    y = data.draw(arrays(x.dtype, x.shape))
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    check(lambda a, b: K.stack([a, b], axis), lambda a, b: np.stack([a, b], axis), x, y)


@given(data=st.data())
def test_flatten_and_batch_flatten(data):
    x = data.draw(array(min_dims=1))
    check(K.flatten, np.ravel, x)
    check(K.batch_flatten, lambda a: a.reshape(a.shape[0], -1) if a.shape[0] else
          a.reshape(0, int(np.prod(a.shape[1:]))), x)


@given(data=st.data())
def test_transpose(data):
    x = data.draw(array())
    check(K.transpose, np.transpose, x)
