"""torchk.math_ops against Keras' numpy backend (numpy where the reference lacks the op)."""
import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal

from reference import numpy_backend as npb
from torchk import core as K
from torchk import math_ops as M

RNG = np.random.RandomState(0)
X = RNG.randn(2, 3, 4)


def _np(t):
    return t.detach().cpu().numpy()


# Conversion.

@pytest.mark.parametrize('value, dtype', [
    (1.5, torch.float32),
    (3, torch.int64),
    (True, torch.bool),
    ([1.0, 2.0], torch.float32),
    ([[1, 2], [3, 4]], torch.int64),
    (np.float64(2.0), torch.float64),
    (np.ones(3, 'int32'), torch.int32),
    (np.ones(3, 'float16'), torch.float16),
    (np.arange(4)[::-1], torch.int64),
])
def test_tensor_conversion_dtypes(value, dtype):
    t = M._tensor(value)
    assert t.dtype == dtype
    assert_array_equal(_np(t), np.asarray(value))


def test_python_floats_follow_floatx(floatx64):
    assert M._tensor(0.1).dtype == torch.float64
    assert M._tensor(0.1).item() == 0.1


def test_list_with_tensors_is_stacked():
    t = M._tensor([torch.tensor(3, dtype=torch.int32), 4])
    assert t.dtype == torch.int32
    assert_array_equal(_np(t), [3, 4])


def test_tensor_passes_through():
    x = torch.ones(2)
    assert M._tensor(x) is x


def test_unconvertible_value_raises():
    with pytest.raises(TypeError, match='Cannot convert'):
        M._tensor(object())


# cast.

@pytest.mark.parametrize('dtype, expected', [
    ('float16', torch.float16), ('float64', torch.float64), ('int32', torch.int32),
    ('bool', torch.bool), (np.float32, torch.float32), (np.dtype('int64'), torch.int64),
    (torch.float64, torch.float64), (torch.zeros(1, dtype=torch.int16).dtype, torch.int16),
])
def test_cast_dtype_forms(dtype, expected):
    x = np.array([-1.7, 0.0, 2.5], 'float32')
    y = M.cast(torch.from_numpy(x), dtype)
    assert y.dtype == expected
    assert_array_equal(_np(y), x.astype(np.dtype(str(expected).replace('torch.', ''))))


@pytest.mark.parametrize('value', [1.0, 0.1, 7, np.float32(0.5), np.array([1, 2])])
def test_cast_python_and_numpy_values(value):
    y = M.cast(value, 'float64')
    assert y.dtype == torch.float64
    assert_array_equal(_np(y), np.asarray(value, 'float64'))


def test_cast_to_same_dtype_returns_input():
    x = torch.ones(2)
    assert M.cast(x, 'float32') is x


def test_cast_unknown_dtype_raises():
    with pytest.raises(TypeError, match='Unknown dtype'):
        M.cast(torch.ones(2), 'float13')


# dot, batch_dot, transpose.

@pytest.mark.parametrize('x_shape, y_shape', [
    ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (4, 3, 5)), ((2, 6, 3), (4, 3, 5)),
    ((3,), (3, 4)), ((2, 3), (3,)),
])
def test_dot(x_shape, y_shape):
    x, y = RNG.randn(*x_shape), RNG.randn(*y_shape)
    result = M.dot(torch.from_numpy(x), torch.from_numpy(y))
    assert_allclose(_np(result), npb.dot(x, y), rtol=1e-10)


def test_dot_sparse():
    dense = np.array([[0., 2., 0.], [1., 0., 3.]])
    y = RNG.randn(3, 4)
    result = M.dot(torch.from_numpy(dense).to_sparse(), torch.from_numpy(y))
    assert not result.is_sparse
    assert_allclose(_np(result), dense.dot(y), rtol=1e-10)


def _dense_graph(x_shape, bias_add):
    """`bias_add(dot(x, kernel), bias)` and the gradients of a weighted sum of it."""
    rng = np.random.RandomState(1)
    x = K.placeholder(shape=(None,) + x_shape[1:])
    kernel = K.variable(rng.randn(x_shape[-1], 5))
    bias = K.variable(rng.randn(5))
    y = bias_add(K.dot(x, kernel), bias)
    loss = K.sum(y * K.constant(rng.randn(*x_shape[1:-1], 5)))
    return K.function([x], [y] + K.gradients(loss, [x, kernel, bias])), y


@pytest.mark.parametrize('x_shape', [(4, 3), (2, 6, 3)])
def test_bias_add_of_a_dense_product_is_one_linear_with_the_same_values(x_shape):
    folded, y = _dense_graph(x_shape, K.bias_add)
    assert y.node.fn is M._linear
    unfolded, y = _dense_graph(x_shape, K.bias_add.__wrapped__)
    assert y.node.fn is not M._linear
    x = RNG.randn(*x_shape).astype('float32')
    for got, expected in zip(folded([x]), unfolded([x])):
        assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_bias_add_folds_only_a_matching_dense_bias():
    x = K.placeholder(shape=(None, 4, 3))
    y = K.dot(x, K.variable(RNG.randn(3, 4)))
    assert K.bias_add(y, K.variable(RNG.randn(4))).node.fn is M._linear
    assert K.bias_add(y, K.variable(RNG.randn(4, 4))).node.fn is not M._linear
    assert K.bias_add(y, K.variable(RNG.randn(4), dtype='float64')).node.fn is not M._linear
    assert K.bias_add(y * 2, K.variable(RNG.randn(4))).node.fn is not M._linear
    # channels_first adds a 1D bias of a rank-3 input on axis 1
    assert K.bias_add(y, K.variable(RNG.randn(4)), 'channels_first').node.fn is not M._linear


def test_dot_mismatch_raises():
    with pytest.raises(ValueError, match=r'x.shape\[-1\] \(3\) != y.shape\[0\] \(4\)'):
        M.dot(torch.ones(2, 3), torch.ones(4, 5))


def test_dot_scalar_raises():
    with pytest.raises(ValueError, match='rank >= 1'):
        M.dot(torch.tensor(2.), torch.ones(4, 5))


BATCH_DOT_CASES = [
    ((4, 3), (4, 3), None, (4, 1)),
    ((4, 3), (4, 3), 1, (4, 1)),
    ((4, 2, 3), (4, 3, 5), None, (4, 2, 5)),
    ((4, 2, 3), (4, 3, 5), (2, 1), (4, 2, 5)),
    ((4, 20), (4, 30, 20), (1, 2), (4, 30)),
    ((4, 20, 1), (4, 30, 20), (1, 2), (4, 1, 30)),
    ((4, 2, 3), (4, 3), None, (4, 2)),
    ((4, 3), (4, 3, 5), None, (4, 5)),
    ((4, 2, 3, 6), (4, 6, 5), None, (4, 2, 3, 5)),
    ((4, 2, 3), (4, 3, 5, 6), (-1, 1), (4, 2, 5, 6)),
    ((4, 3, 2), (4, 5, 3), [1, 2], (4, 2, 5)),
]


@pytest.mark.parametrize('x_shape, y_shape, axes, expected_shape', BATCH_DOT_CASES)
def test_batch_dot(x_shape, y_shape, axes, expected_shape):
    x, y = RNG.randn(*x_shape), RNG.randn(*y_shape)
    result = M.batch_dot(torch.from_numpy(x), torch.from_numpy(y), axes)
    assert tuple(result.shape) == expected_shape
    assert_allclose(_np(result), npb.batch_dot(x, y, axes), rtol=1e-10)


@pytest.mark.parametrize('x_shape, y_shape, axes, message', [
    ((4,), (4, 3), None, 'rank < 2'),
    ((4, 3), (5, 3), None, 'different batch sizes'),
    ((4, 3), (4, 3), 0, 'over axis 0'),
    ((4, 3, 2), (4, 3, 2), ((1, 2), (1, 2)), 'Multiple target dimensions'),
    ((4, 3), (4, 2), None, r'x.shape\[1\] != y.shape\[1\] \(3 != 2\)'),
    ((4, 3), (4, 3), (1, 5), r'Invalid axes\[1\] 5 for a tensor of rank 2'),
])
def test_batch_dot_errors(x_shape, y_shape, axes, message):
    with pytest.raises(ValueError, match=message):
        M.batch_dot(torch.ones(x_shape), torch.ones(y_shape), axes)


@pytest.mark.parametrize('shape', [(), (3,), (2, 3), (2, 3, 4)])
def test_transpose(shape):
    x = np.asarray(RNG.randn(*shape))
    assert_array_equal(_np(M.transpose(torch.from_numpy(x))), npb.transpose(x))


# Reductions.

REDUCTIONS = ['max', 'min', 'sum', 'prod', 'mean', 'var', 'std', 'logsumexp', 'any', 'all']
AXES = [None, 0, 1, -1, (0, 2), [1, 2], [], (-1, 0), [0, 1, 2]]


@pytest.mark.parametrize('name', REDUCTIONS)
@pytest.mark.parametrize('axis', AXES, ids=repr)
@pytest.mark.parametrize('keepdims', [False, True])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_reduction(name, axis, keepdims, dtype):
    x = X.astype(dtype)
    x[0, 1] = 0.  # a zero row, so that any/all differ from a constant
    result = getattr(M, name)(torch.from_numpy(x), axis=axis, keepdims=keepdims)
    expected = getattr(npb, name)(x, axis=axis, keepdims=keepdims)
    assert tuple(result.shape) == np.shape(expected)
    assert result.dtype == (torch.bool if name in ('any', 'all') else torch.from_numpy(x).dtype)
    assert_allclose(_np(result), expected, rtol=1e-5 if dtype == 'float32' else 1e-12,
                    atol=1e-6)


@pytest.mark.parametrize('name', REDUCTIONS)
def test_reduction_of_scalar(name):
    result = getattr(M, name)(torch.tensor(2.5, dtype=torch.float64))
    assert result.shape == ()
    assert_allclose(_np(result), getattr(npb, name)(np.float64(2.5)))


@pytest.mark.parametrize('name, dtype, expected_dtype', [
    ('sum', torch.int32, torch.int32),
    ('sum', torch.bool, torch.int64),
    ('prod', torch.int32, torch.int32),
    ('max', torch.int32, torch.int32),
    ('mean', torch.int32, torch.float32),
    ('mean', torch.bool, torch.float32),
    ('var', torch.int64, torch.float32),
    ('std', torch.bool, torch.float32),
    ('logsumexp', torch.int32, torch.float32),
    ('any', torch.int32, torch.bool),
])
@pytest.mark.parametrize('axis', [None, 1, []], ids=repr)
def test_reduction_dtypes(name, dtype, expected_dtype, axis):
    x = np.array([[1, 0, 3], [0, 1, 1]])
    result = getattr(M, name)(torch.from_numpy(x).to(dtype), axis=axis)
    assert result.dtype == expected_dtype
    reference = x.astype(bool) if dtype == torch.bool else x
    assert_allclose(_np(result), getattr(npb, name)(reference, axis=axis), rtol=1e-6)


def test_mean_follows_floatx(floatx64):
    assert M.mean(torch.tensor([True, False, False])).dtype == torch.float64


def test_prod_of_a_list_of_scalar_tensors():
    result = M.prod([torch.tensor(6), 3, torch.tensor(2)])
    assert result.dtype == torch.int64
    assert int(result) == 36


@pytest.mark.parametrize('name', ['sum', 'mean', 'max'])
@pytest.mark.parametrize('axis, message', [
    (3, r'Invalid axis 3 for a tensor of rank 3: expected an integer in \[-3, 3\)'),
    ([0, -4], r'Invalid axis -4 for a tensor of rank 3'),
    ((1, -2), 'must not repeat an axis'),
])
def test_reduction_bad_axis(name, axis, message):
    with pytest.raises(ValueError, match=message):
        getattr(M, name)(torch.ones(2, 3, 4), axis=axis)


def test_reduction_non_integer_axis():
    with pytest.raises(TypeError, match=r"axis must be an integer, got 1.5 \(of type float\)"):
        M.sum(torch.ones(2, 3), axis=1.5)


@pytest.mark.parametrize('name', ['cumsum', 'cumprod'])
@pytest.mark.parametrize('axis', [0, 1, -1])
@pytest.mark.parametrize('dtype', ['float64', 'int32'])
def test_cumulative(name, axis, dtype):
    x = (X * 3).astype(dtype)
    result = getattr(M, name)(torch.from_numpy(x), axis=axis)
    assert result.dtype == torch.from_numpy(x).dtype
    assert_allclose(_np(result), getattr(npb, name)(x, axis=axis), rtol=1e-10)


def test_cumulative_bad_axis():
    with pytest.raises(ValueError, match='Invalid axis 2 for a tensor of rank 2'):
        M.cumsum(torch.ones(2, 3), axis=2)


@pytest.mark.parametrize('name', ['argmax', 'argmin'])
@pytest.mark.parametrize('axis', [0, 1, -1])
def test_arg_reductions(name, axis):
    result = getattr(M, name)(torch.from_numpy(X), axis)
    assert result.dtype == torch.int64
    assert_array_equal(_np(result), getattr(npb, name)(X, axis=axis))


def test_argmax_default_axis_is_last():
    assert_array_equal(_np(M.argmax(torch.from_numpy(X))), np.argmax(X, axis=-1))


# Element-wise.

UNARY = ['square', 'abs', 'sqrt', 'exp', 'log', 'round', 'sign', 'sin', 'cos']


@pytest.mark.filterwarnings('ignore:invalid value encountered in sqrt')  # the reference
@pytest.mark.parametrize('name', UNARY)
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_unary(name, dtype):
    x = (X * 2).astype(dtype)
    if name == 'log':
        x = np.abs(x)
    result = getattr(M, name)(torch.from_numpy(x))
    assert result.dtype == torch.from_numpy(x).dtype
    assert_allclose(_np(result), getattr(npb, name)(x), rtol=1e-6)


@pytest.mark.parametrize('name', UNARY)
def test_unary_on_python_number(name):
    result = getattr(M, name)(2.)
    assert result.dtype == torch.float32
    assert_allclose(_np(result), getattr(npb, name)(np.array([2.], 'float32'))[0], rtol=1e-6)


def test_round_half_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5])
    assert_array_equal(_np(M.round(torch.from_numpy(x))), [-2., -2., -0., 0., 2., 2., 4.])


def test_sqrt_clips_negative_values_to_zero():
    assert_array_equal(_np(M.sqrt(torch.tensor([-4., 0., 4.]))), [0., 0., 2.])


COMPARISONS = ['equal', 'not_equal', 'greater', 'greater_equal', 'less', 'less_equal']
BINARY_OPERANDS = {
    'tensor-tensor': (lambda x, y: (torch.from_numpy(x), torch.from_numpy(y))),
    'tensor-number': (lambda x, y: (torch.from_numpy(x), 0.5)),
    'number-tensor': (lambda x, y: (0.5, torch.from_numpy(y))),
    'numpy-number': (lambda x, y: (x, 0)),
    'numpy-tensor': (lambda x, y: (x, torch.from_numpy(y))),
    'tensor-numpy0d': (lambda x, y: (torch.from_numpy(x), np.array(0.5))),
}


@pytest.mark.parametrize('name', COMPARISONS + ['maximum', 'minimum'])
@pytest.mark.parametrize('operands', list(BINARY_OPERANDS), ids=str)
def test_binary(name, operands):
    x, y = np.round(RNG.randn(3, 4)), np.round(RNG.randn(4))
    x[0, :2] = 0.5
    a, b = BINARY_OPERANDS[operands](x, y)
    result = getattr(M, name)(a, b)
    expected = getattr(npb, name)(*(_np(v) if torch.is_tensor(v) else v for v in (a, b)))
    assert result.dtype == (torch.float64 if name in ('maximum', 'minimum') else torch.bool)
    assert_array_equal(_np(result), expected)


@pytest.mark.parametrize('name', ['maximum', 'minimum', 'greater'])
@pytest.mark.parametrize('number', [0., 0, np.float64(0.)])
def test_binary_number_keeps_tensor_dtype(name, number):
    x = torch.tensor([-1., 2.], dtype=torch.float16)
    for a, b in ((x, number), (number, x)):
        expected = torch.bool if name == 'greater' else torch.float16
        assert getattr(M, name)(a, b).dtype == expected


def test_binary_int_tensor_with_float_number():
    result = M.maximum(torch.tensor([1, 3], dtype=torch.int32), 1.5)
    assert result.dtype == torch.float32
    assert_array_equal(_np(result), [1.5, 3.])


def test_binary_on_two_numbers():
    result = M.maximum(1., 2.)
    assert result.dtype == torch.float32 and float(result) == 2.


@pytest.mark.parametrize('x, a', [
    (np.abs(X), 2),
    (np.abs(X), 0.5),
    (np.abs(X), np.abs(X)),
    (np.float32(0.96), np.array([1., 2., 3.], 'float32')),
    (2., np.array([1., 2., 3.])),
])
def test_pow(x, a):
    for tx, ta in ((torch.as_tensor(x), a), (x, torch.as_tensor(a)),
                   (torch.as_tensor(x), torch.as_tensor(a))):
        assert_allclose(_np(M.pow(tx, ta)), npb.pow(x, a), rtol=1e-6)


@pytest.mark.parametrize('low, high, expected', [
    (-0.5, 0.5, [-0.5, -0.2, 0., 0.2, 0.5]),
    (0., None, [0., 0., 0., 0.2, 3.]),
    (None, 0., [-2., -0.2, 0., 0., 0.]),
    (None, None, [-2., -0.2, 0., 0.2, 3.]),
    (1., -1., [1., 1., 1., 1., 1.]),
    (np.array(0., 'float32'), np.array(1.), [0., 0., 0., 0.2, 1.]),
    (torch.tensor(-1.), 1., [-1., -0.2, 0., 0.2, 1.]),
    (-1., torch.tensor([0., 0., 0., 0., 2.]), [-1., -0.2, 0., 0., 2.]),
])
def test_clip(low, high, expected):
    result = M.clip(torch.tensor([-2., -0.2, 0., 0.2, 3.]), low, high)
    assert result.dtype == torch.float32
    assert_allclose(_np(result), expected, rtol=1e-6)


def test_clip_matches_reference():
    assert_allclose(_np(M.clip(torch.from_numpy(X), -0.3, 0.7)), npb.clip(X, -0.3, 0.7))


# Gradients.

@pytest.mark.parametrize('name', ['sum', 'prod', 'mean', 'var', 'std', 'max', 'logsumexp'])
@pytest.mark.parametrize('axis', [None, 1, (0, 2)], ids=repr)
def test_reduction_gradients(name, axis):
    x = torch.from_numpy(RNG.rand(2, 3, 4) + 0.5).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: getattr(M, name)(t, axis=axis, keepdims=True),
                                    (x,))


@pytest.mark.parametrize('x_shape, y_shape, axes', [
    ((3, 4), (3, 4), None), ((3, 2, 4), (3, 4, 5), None), ((3, 4), (3, 5, 4), (1, 2)),
    ((3, 2, 4, 2), (3, 2, 5), (1, 1)),
])
def test_batch_dot_gradient(x_shape, y_shape, axes):
    x = torch.from_numpy(RNG.randn(*x_shape)).requires_grad_()
    y = torch.from_numpy(RNG.randn(*y_shape)).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: M.batch_dot(a, b, axes), (x, y))


def test_dot_gradient():
    x = torch.from_numpy(RNG.randn(2, 3)).requires_grad_()
    y = torch.from_numpy(RNG.randn(4, 3, 2)).requires_grad_()
    assert torch.autograd.gradcheck(M.dot, (x, y))


@pytest.mark.parametrize('dtype, lowest, highest', [
    (torch.float32, -np.inf, np.inf), (torch.float64, -np.inf, np.inf),
    (torch.int32, np.iinfo(np.int32).min, np.iinfo(np.int32).max),
    (torch.int64, np.iinfo(np.int64).min, np.iinfo(np.int64).max)])
@pytest.mark.parametrize('axis, keepdims, shape', [
    (None, False, ()), (0, False, (3,)), (0, True, (1, 3)), ((0, 1), True, (1, 1))])
def test_max_and_min_over_no_values_give_the_identity_as_in_tf(dtype, lowest, highest,
                                                               axis, keepdims, shape):
    x = torch.zeros((0, 3), dtype=dtype)
    assert_array_equal(M.max(x, axis, keepdims).numpy(), np.full(shape, lowest))
    assert_array_equal(M.min(x, axis, keepdims).numpy(), np.full(shape, highest))
    assert M.max(x, axis, keepdims).dtype == dtype


def test_divide_no_nan_is_zero_where_the_divisor_is_zero_in_programs_too():
    x = np.array([1., -2., 3.], 'float32')
    y = np.array([0., 4., 0.], 'float32')
    expected = np.array([0., -0.5, 0.], 'float32')
    np.testing.assert_array_equal(_np(M.divide_no_nan(x, y)), expected)
    a, b = K.placeholder(shape=(3,)), K.placeholder(shape=(3,))
    program = K.function([a, b], [M.divide_no_nan(a, b)])
    np.testing.assert_array_equal(program([x, y])[0], expected)
