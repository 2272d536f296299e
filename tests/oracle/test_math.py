"""Element-wise math, reductions, comparisons and products against TF's Keras 2 backend."""
import numpy as np
import pytest

pytest.importorskip('tf_keras', reason='the TF oracle needs tensorflow-cpu and tf_keras '
                    "(pip install -e '.[oracle]')")

from hypothesis import given, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from oracle import TK, compare, covers, reference  # noqa: E402
from strategies import FLOATS, INTS, array_and_axis, arrays, shapes  # noqa: E402
from torchk import core as K  # noqa: E402

# name: (low, high) of the drawn values, dtypes
UNARY = {
    'abs': ((-10, 10), FLOATS + INTS), 'square': ((-10, 10), FLOATS + INTS),
    'sqrt': ((0, 10), FLOATS), 'exp': ((-10, 10), FLOATS), 'log': ((0, 10), FLOATS),
    'round': ((-10, 10), FLOATS), 'sign': ((-10, 10), FLOATS + INTS),
    'sin': ((-10, 10), FLOATS), 'cos': ((-10, 10), FLOATS), 'tanh': ((-10, 10), FLOATS),
    'sigmoid': ((-10, 10), FLOATS), 'hard_sigmoid': ((-5, 5), FLOATS),
    'softplus': ((-10, 10), FLOATS), 'softsign': ((-10, 10), FLOATS),
    'zeros_like': ((-10, 10), FLOATS + INTS), 'ones_like': ((-10, 10), FLOATS + INTS),
    'stop_gradient': ((-10, 10), FLOATS), 'transpose': ((-10, 10), FLOATS + INTS),
    'flatten': ((-10, 10), FLOATS + INTS),
}


@covers(*UNARY, 'identity')
@pytest.mark.parametrize('name', sorted(UNARY) + ['identity'])
@given(data=st.data())
def test_unary(name, data):
    (low, high), dtypes = UNARY.get(name, ((-10, 10), FLOATS + INTS))
    dtype = data.draw(st.sampled_from(dtypes))
    x = data.draw(arrays(dtype, shapes(), low, high))
    compare(getattr(K, name), reference(name), x)


@covers('relu')
@given(x=arrays('float32', shapes(), -5, 5),
       alpha=st.sampled_from([0., 0.3]), max_value=st.sampled_from([None, 0.5, 3.]),
       threshold=st.sampled_from([0., 1., -1.]))
def test_relu(x, alpha, max_value, threshold):
    compare(lambda t: K.relu(t, alpha, max_value, threshold),
            lambda t: TK.relu(t, alpha, max_value, threshold), x)


@covers('elu', 'softmax', 'l2_normalize')
@given(data=st.data())
def test_axis_activations(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    x = data.draw(arrays(dtype, shapes(min_dims=1, min_side=1)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    alpha = data.draw(st.sampled_from([1., 0.5]))
    compare(lambda t: K.elu(t, alpha), lambda t: TK.elu(t, alpha), x)
    compare(lambda t: K.softmax(t, axis), lambda t: reference('softmax')(t, axis), x)
    compare(lambda t: K.l2_normalize(t, axis), lambda t: TK.l2_normalize(t, axis), x,
            rtol=1e-4 if dtype == 'float32' else None)


REDUCTIONS = ['max', 'min', 'sum', 'prod', 'mean', 'var', 'std', 'any', 'all', 'logsumexp']


@covers(*REDUCTIONS)
@pytest.mark.parametrize('name', REDUCTIONS)
@given(data=st.data(), keepdims=st.booleans())
def test_reduction(name, data, keepdims):
    dtypes = FLOATS + INTS if name in ('max', 'min', 'sum', 'prod', 'any', 'all') else FLOATS
    x, axis = data.draw(array_and_axis(dtypes, min_dims=1, low=-3, high=3))
    compare(lambda t: getattr(K, name)(t, axis, keepdims),
            lambda t: reference(name)(t, axis, keepdims), x,
            rtol=1e-4 if name in ('var', 'std', 'prod') and x.dtype == np.float32 else None)


@covers('argmax', 'argmin', 'cumsum', 'cumprod')
@given(data=st.data())
def test_axis_functions(data):
    dtype = data.draw(st.sampled_from(FLOATS + INTS))
    x = data.draw(arrays(dtype, shapes(min_dims=1, min_side=1), -3, 3))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    for name in ('argmax', 'argmin', 'cumsum', 'cumprod'):
        compare(lambda t: getattr(K, name)(t, axis), lambda t: getattr(TK, name)(t, axis), x)


BINARY = ['equal', 'not_equal', 'greater', 'greater_equal', 'less', 'less_equal',
          'maximum', 'minimum']


@covers(*BINARY)
@pytest.mark.parametrize('name', BINARY)
@given(data=st.data())
def test_binary(name, data):
    dtype = data.draw(st.sampled_from(FLOATS + INTS))
    x_shape, y_shape = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2,
                                                                  max_side=3)).input_shapes
    x = data.draw(arrays(dtype, x_shape, -3, 3))
    y = data.draw(arrays(dtype, y_shape, -3, 3))
    compare(getattr(K, name), getattr(TK, name), x, y)


@covers('pow', 'clip')
@given(x=arrays('float32', shapes(), 0.125, 4), a=st.sampled_from([0, 1, 2, 3, -1, 0.5]),
       bounds=st.sampled_from([(0., 1.), (1., 2.), (-1., 5.), (2., 1.), (None, 1.)]))
def test_pow_and_clip(x, a, bounds):
    compare(lambda t: K.pow(t, a), lambda t: TK.pow(t, a), x)
    compare(lambda t: K.clip(t, *bounds), lambda t: TK.clip(t, *bounds), x)


@covers('dot')
@given(data=st.data())
def test_dot(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    x_ndim, y_ndim = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    inner = data.draw(st.integers(1, 3))
    x_shape = data.draw(shapes(x_ndim - 1, x_ndim - 1, 1, 3)) + (inner,)
    y_shape = ((inner,) if y_ndim == 1 else data.draw(shapes(y_ndim - 2, y_ndim - 2, 1, 3))
               + (inner, data.draw(st.integers(1, 3))))
    compare(K.dot, TK.dot, data.draw(arrays(dtype, x_shape, -3, 3)),
            data.draw(arrays(dtype, y_shape, -3, 3)), rtol=1e-4,
            extends='dot')


@covers('batch_dot')
@given(data=st.data())
def test_batch_dot(data):
    batch = data.draw(st.integers(1, 3))
    x_ndim, y_ndim = data.draw(st.integers(2, 4)), data.draw(st.integers(2, 4))
    x_shape = (batch,) + data.draw(shapes(x_ndim - 1, x_ndim - 1, 1, 3))
    y_shape = (batch,) + data.draw(shapes(y_ndim - 1, y_ndim - 1, 1, 3))
    axes = data.draw(st.one_of(
        st.none(), st.tuples(st.integers(1, x_ndim - 1), st.integers(1, y_ndim - 1))))
    if axes is not None and data.draw(st.booleans()):  # make the contracted sides agree
        side = x_shape[axes[0]]
        y_shape = y_shape[:axes[1]] + (side,) + y_shape[axes[1] + 1:]
    elif axes is None:
        y_shape = y_shape[:y_ndim - 1 if y_ndim > 2 else 1] + (x_shape[-1],) \
            + y_shape[y_ndim:] if y_ndim > 2 else (batch, x_shape[-1])
    x = data.draw(arrays('float32', x_shape, -3, 3))
    y = data.draw(arrays('float32', y_shape, -3, 3))
    compare(lambda a, b: K.batch_dot(a, b, axes), lambda a, b: TK.batch_dot(a, b, axes), x, y,
            rtol=1e-4)


@covers('in_top_k')
@given(data=st.data())
def test_in_top_k(data):
    samples, classes = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 5))
    predictions = data.draw(arrays('float32', (samples, classes), -2, 2))
    targets = data.draw(arrays('int32', (samples,), 0, classes - 1))
    k = data.draw(st.integers(0, classes + 1))
    compare(lambda p, t: K.in_top_k(p, t, k), lambda p, t: TK.in_top_k(p, t, k),
            predictions, targets)
