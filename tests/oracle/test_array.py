"""Array creation, shape, indexing, padding and resizing against TF's Keras 2 backend."""
import numpy as np
import pytest

pytest.importorskip('tf_keras', reason='the TF oracle needs tensorflow-cpu and tf_keras '
                    "(pip install -e '.[oracle]')")

import tensorflow as tf  # noqa: E402
from hypothesis import given, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from oracle import TK, compare, covers, reference  # noqa: E402
import strategies  # noqa: E402
from strategies import FLOATS, INTS, arrays, shapes  # noqa: E402
from torchk import core as K  # noqa: E402

DTYPES = FLOATS + INTS


def array(dtypes=DTYPES, **shape_kwargs):
    """`strategies.array` with values in [-5, 5]."""
    return strategies.array(dtypes, -5, 5, **shape_kwargs)


@covers('concatenate', 'stack')
@given(data=st.data())
def test_concatenate_and_stack(data):
    x = data.draw(array(min_dims=1))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    other = list(x.shape)
    other[axis] = data.draw(st.integers(0, 3))
    y = data.draw(arrays(x.dtype, tuple(other), -5, 5))
    compare(lambda a, b: K.concatenate([a, b], axis), lambda a, b: TK.concatenate([a, b], axis),
            x, y)
    stack_axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    compare(lambda a, b: K.stack([a, b], stack_axis), lambda a, b: TK.stack([a, b], stack_axis),
            x, x + 1)


@covers('reshape', 'permute_dimensions', 'batch_flatten', 'expand_dims', 'squeeze')
@given(data=st.data())
def test_shape_functions(data):
    x = data.draw(array(min_dims=1, min_side=1))
    shape = list(x.shape)
    data.draw(st.randoms()).shuffle(shape)
    if data.draw(st.booleans()):
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    compare(lambda t: K.reshape(t, shape), lambda t: TK.reshape(t, shape), x)
    pattern = data.draw(st.permutations(range(x.ndim)))
    compare(lambda t: K.permute_dimensions(t, pattern),
            lambda t: TK.permute_dimensions(t, pattern), x)
    compare(K.batch_flatten, TK.batch_flatten, x)
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    compare(lambda t: K.expand_dims(t, axis), lambda t: TK.expand_dims(t, axis), x)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    compare(lambda t: K.squeeze(t, axis), lambda t: TK.squeeze(t, axis), x)


@covers('repeat_elements', 'repeat', 'tile', 'reverse')
@given(data=st.data())
def test_repetition(data):
    x = data.draw(array(min_dims=1, max_side=3))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    rep = data.draw(st.integers(1, 3))
    compare(lambda t: K.repeat_elements(t, rep, axis), lambda t: TK.repeat_elements(t, rep, axis),
            x, extends='repeat_elements')
    n = [data.draw(st.integers(0, 2)) for _ in range(x.ndim)]
    compare(lambda t: K.tile(t, n), lambda t: TK.tile(t, n), x)
    axes = data.draw(st.lists(st.integers(0, x.ndim - 1), unique=True, max_size=x.ndim))
    compare(lambda t: K.reverse(t, axes), lambda t: TK.reverse(t, axes), x)
    matrix = data.draw(array(min_dims=2, max_dims=2))
    compare(lambda t: K.repeat(t, rep), lambda t: TK.repeat(t, rep), matrix)


@covers('gather', 'slice', 'one_hot')
@given(data=st.data())
def test_indexing(data):
    x = data.draw(array(min_dims=1, min_side=1))
    # Out-of-range indices too: TF's CPU kernel refuses them, as must torchk.
    indices = data.draw(arrays(data.draw(st.sampled_from(INTS)), shapes(max_dims=2),
                               -1, x.shape[0]))
    compare(K.gather, TK.gather, x, indices)
    start = [data.draw(st.integers(0, side - 1)) for side in x.shape]
    size = [data.draw(st.integers(-1, side - s)) for side, s in zip(x.shape, start)]
    compare(lambda t: K.slice(t, start, size), lambda t: reference('slice')(t, start, size), x)
    classes = data.draw(st.integers(1, 4))
    labels = data.draw(arrays('int32', shapes(max_dims=2), -1, classes))
    compare(lambda t: K.one_hot(t, classes), lambda t: TK.one_hot(t, classes), labels)


@covers('arange', 'eye', 'zeros', 'ones', 'constant', 'cast')
@given(data=st.data())
def test_creation(data):
    start, stop = data.draw(st.integers(-4, 4)), data.draw(st.one_of(st.none(),
                                                                     st.integers(-4, 6)))
    step = data.draw(st.sampled_from([1, 2, -1, 3]))
    dtype = data.draw(st.sampled_from(['int32', 'int64', 'float32']))
    compare(lambda: K.arange(start, stop, step, dtype), lambda: TK.arange(start, stop, step, dtype),
            graph=False, extends='arange')
    size = data.draw(st.one_of(st.integers(0, 3), st.tuples(st.integers(0, 3), st.integers(0, 3))))
    compare(lambda: K.eye(size, dtype), lambda: TK.eye(size, dtype), graph=False,
            extends='eye')
    shape = data.draw(shapes(max_side=3))
    for name in ('zeros', 'ones'):
        compare(lambda: K.eval(getattr(K, name)(shape, dtype)),
                lambda: getattr(TK, name)(shape, dtype), graph=False)
    value = data.draw(array())
    compare(lambda: K.constant(value, dtype, value.shape), lambda: TK.constant(value, dtype,
                                                                               value.shape),
            graph=False)
    target = data.draw(st.sampled_from(DTYPES + ('bool', 'float16')))
    compare(lambda t: K.cast(t, target), lambda t: TK.cast(t, target), value)


@covers('temporal_padding', 'spatial_2d_padding', 'spatial_3d_padding')
@given(data=st.data())
def test_padding(data):
    rank = data.draw(st.sampled_from([1, 2, 3]))
    x = data.draw(array(FLOATS, min_dims=rank + 2, max_dims=rank + 2, max_side=3))
    padding = tuple(tuple(data.draw(st.integers(0, 2)) for _ in range(2)) for _ in range(rank))
    if rank == 1:
        compare(lambda t: K.temporal_padding(t, padding[0]),
                lambda t: TK.temporal_padding(t, padding[0]), x)
        return
    data_format = data.draw(st.sampled_from(['channels_last', 'channels_first']))
    name = 'spatial_%dd_padding' % rank
    compare(lambda t: getattr(K, name)(t, padding, data_format),
            lambda t: getattr(TK, name)(t, padding, data_format), x)


def _tf_231_resize_images(x, height_factor, width_factor, data_format, interpolation):
    """Keras 2.3.1's resize_images: TF 1's resize_nearest_neighbor / resize_bilinear (corner
    pixels not aligned, no half-pixel centres); tf_keras uses TF 2's half-pixel resize."""
    if data_format == 'channels_first':
        x = tf.transpose(x, [0, 2, 3, 1])
    size = (x.shape[1] * height_factor, x.shape[2] * width_factor)
    resize = (tf.compat.v1.image.resize_nearest_neighbor if interpolation == 'nearest'
              else tf.compat.v1.image.resize_bilinear)
    x = resize(x, size)
    return tf.transpose(x, [0, 3, 1, 2]) if data_format == 'channels_first' else x


@covers('resize_images', 'resize_volumes')
@given(data=st.data())
def test_resize(data):
    data_format = data.draw(st.sampled_from(['channels_last', 'channels_first']))
    factors = [data.draw(st.integers(1, 3)) for _ in range(3)]
    x = data.draw(array(('float32',), min_dims=4, max_dims=4, min_side=1, max_side=3))
    interpolation = data.draw(st.sampled_from(['nearest', 'bilinear']))
    compare(lambda t: K.resize_images(t, factors[0], factors[1], data_format, interpolation),
            lambda t: _tf_231_resize_images(t, factors[0], factors[1], data_format,
                                            interpolation), x, known_shapes=True)
    volume = data.draw(array(min_dims=5, max_dims=5, min_side=1, max_side=3))
    compare(lambda t: K.resize_volumes(t, *factors, data_format),
            lambda t: TK.resize_volumes(t, *factors, data_format), volume)


@covers('bias_add')
@given(data=st.data())
def test_bias_add(data):
    x = data.draw(array(FLOATS, min_dims=2, max_dims=5, min_side=1, max_side=3))
    data_format = data.draw(st.sampled_from(['channels_last', 'channels_first']))
    channels = x.shape[-1] if data_format == 'channels_last' else x.shape[1]
    # A full bias is in Keras' (*spatial, channels) layout for both formats; TF broadcasts
    # other layouts where their sizes allow, torchk refuses them (tests/test_conv_ops.py).
    bias = data.draw(arrays(x.dtype, data.draw(st.sampled_from(
        [(channels,), x.shape[2:] + (channels,) if data_format == 'channels_first'
         else x.shape[1:]])), -5, 5))
    compare(lambda t, b: K.bias_add(t, b, data_format),
            lambda t, b: TK.bias_add(t, b, data_format), x, bias)


@covers('shape', 'int_shape', 'ndim', 'dtype', 'size', 'is_sparse', 'to_dense')
@given(x=array())
def test_shape_queries(x):
    # torchk's shapes and sizes are int64 (torch's index dtype), TF's int32.
    compare(K.shape, lambda t: TK.cast(TK.shape(t), 'int64'), x, graph=False)
    compare(K.int_shape, TK.int_shape, x, graph=False)
    compare(K.ndim, TK.ndim, x, graph=False)
    compare(K.dtype, TK.dtype, x, graph=False)
    # tf_keras has no size: 2.3.1 calls tf.size.
    compare(K.size, lambda t: tf.size(t, out_type=tf.int64), x)
    compare(K.is_sparse, TK.is_sparse, x, graph=False)
    compare(K.to_dense, TK.to_dense, x)


@covers('switch')
@given(data=st.data())
def test_switch(data):
    x = data.draw(array(FLOATS, min_dims=1, max_side=3))
    condition = data.draw(st.one_of(
        hnp.arrays('bool', x.shape[:data.draw(st.integers(0, x.ndim))]),
        st.booleans().map(np.bool_)))
    compare(lambda c, t: K.switch(c, t, -t), lambda c, t: TK.switch(c, t, -t),
            np.asarray(condition), x)


@covers('map_fn', 'foldl', 'foldr')
@given(x=array(FLOATS, min_dims=1, max_dims=3, min_side=1, max_side=3))
def test_functional(x):
    compare(lambda t: K.map_fn(lambda r: r * 2. + 1., t),
            lambda t: TK.map_fn(lambda r: r * 2. + 1., t), x)
    compare(lambda t: K.foldl(lambda a, r: a * 0.5 + r, t),
            lambda t: TK.foldl(lambda a, r: a * 0.5 + r, t), x)
    compare(lambda t: K.foldr(lambda a, r: a * 0.5 + r, t),
            lambda t: TK.foldr(lambda a, r: a * 0.5 + r, t), x)
