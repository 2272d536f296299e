"""Tests for torchk.nn_ops: activations, losses, l2_normalize, in_top_k and batch norm.

The reference is Keras 2.3.1's numpy backend (`npb`), computed in float64. Where it lacks an op
or differs from TF (whose semantics torchk follows), plain numpy stands beside the test with a
comment saying why.
"""
import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose
from reference import numpy_backend as npb

from torchk import config
from torchk import nn_ops as K

RTOL, ATOL = 1e-5, 1e-6
DTYPES = [np.float32, np.float64]


def _values(shape, low=-3., high=3., kinks=(), seed=0):
    """Random float64 values, moved at least 0.05 away from each kink of a piecewise op."""
    x = np.random.RandomState(seed).uniform(low, high, size=shape)
    for kink in kinks:
        near = np.abs(x - kink) < 0.05
        x[near] = kink + 0.1
    return x


def _probabilities(shape, axis=-1, seed=0):
    p = np.random.RandomState(seed).uniform(0.05, 1., size=shape)
    return p / p.sum(axis=axis, keepdims=True)


def _one_hot(shape, axis=-1, seed=1):
    classes = shape[axis]
    labels = np.random.RandomState(seed).randint(0, classes, size=shape[:axis % len(shape)]
                                                 + shape[axis % len(shape) + 1:])
    return np.moveaxis(np.eye(classes)[labels], -1, axis), labels


def _check(result, expected, dtype):
    assert isinstance(result, torch.Tensor)
    assert result.dtype == torch.from_numpy(np.zeros(0, dtype)).dtype
    assert_allclose(result.detach().numpy(), expected, rtol=RTOL, atol=ATOL)


# name, kwargs, kinks to keep inputs away from (the reference and gradcheck disagree there)
ACTIVATIONS = [
    ('relu', {}, [0.]),
    ('relu', {'alpha': 0.3}, [0.]),
    ('relu', {'max_value': 1.5}, [0., 1.5]),
    ('relu', {'max_value': 6.}, [0., 6.]),
    ('relu', {'threshold': 0.5}, [0.5]),
    ('relu', {'alpha': 0.2, 'max_value': 2., 'threshold': 0.5}, [0.5, 2.]),
    ('relu', {'alpha': np.array(0.2, np.float32), 'max_value': np.array(2., np.float32),
              'threshold': np.array(0.5, np.float32)}, [0.5, 2.]),
    ('elu', {}, [0.]),
    ('elu', {'alpha': 0.5}, [0.]),
    ('softmax', {}, []),
    ('softmax', {'axis': 0}, []),
    ('softmax', {'axis': 1}, []),
    ('softplus', {}, []),
    ('softsign', {}, [0.]),
    ('sigmoid', {}, []),
    ('hard_sigmoid', {}, [-2.5, 2.5]),
    ('tanh', {}, []),
]
ACTIVATION_IDS = ['%s-%s' % (name, '-'.join(sorted(kwargs))) for name, kwargs, _ in ACTIVATIONS]


@pytest.mark.parametrize('name, kwargs, kinks', ACTIVATIONS, ids=ACTIVATION_IDS)
@pytest.mark.parametrize('shape', [(4, 5), (2, 3, 4)])
@pytest.mark.parametrize('dtype', DTYPES)
def test_activation_matches_reference(name, kwargs, kinks, shape, dtype):
    x = _values(shape, kinks=kinks)
    expected = getattr(npb, name)(x, **kwargs)
    _check(getattr(K, name)(torch.from_numpy(x.astype(dtype)), **kwargs), expected, dtype)


@pytest.mark.parametrize('name, kwargs, kinks', ACTIVATIONS, ids=ACTIVATION_IDS)
def test_activation_gradient(name, kwargs, kinks):
    x = torch.from_numpy(_values((3, 4), kinks=kinks)).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: getattr(K, name)(t, **kwargs), (x,))


@pytest.mark.parametrize('kwargs, expected', [
    # At x == threshold TF gives 0 (x > threshold fails, relu(threshold - x) is 0); the numpy
    # reference gives `threshold` there.
    ({'threshold': 1.}, [0., 0., 0., 0., 2.]),
    ({'alpha': 0.5, 'threshold': 1.}, [-1.5, -1., -0.5, 0., 2.]),
    # A negative threshold lets threshold < x < 0 through in TF; numpy clips it to 0.
    ({'threshold': -1.5}, [0., -1., 0., 1., 2.]),
    ({'threshold': -1.5, 'max_value': 1.}, [0., 0., 0., 1., 1.]),
    ({'alpha': 0.1}, [-0.2, -0.1, 0., 1., 2.]),
    ({'max_value': 6.}, [0., 0., 0., 1., 2.]),
])
def test_relu_follows_tf_at_and_below_threshold(kwargs, expected):
    x = torch.tensor([-2., -1., 0., 1., 2.])
    assert_allclose(K.relu(x, **kwargs).numpy(), expected, rtol=RTOL, atol=ATOL)


BOUNDARY_POINTS = [-1., 0., 1., 1.5, 6., 7.]


@pytest.mark.parametrize('kwargs, expected_gradient', [
    # Keras' TF backend runs tf.nn.relu6 for max_value == 6: Relu6Grad passes 0 < x < 6.
    ({'max_value': 6.}, [0., 0., 1., 1., 0., 0.]),
    ({'max_value': np.array(6., np.float32)}, [0., 0., 1., 1., 0., 0.]),
    ({'alpha': 0.1, 'max_value': 6.}, [0.1, 0., 1., 1., 0., 0.]),
    # Any other max_value: relu (ReluGrad passes x > 0), then clip_by_value, whose gradient
    # passes min <= value <= max, so x == max_value passes.
    ({'max_value': 1.5}, [0., 0., 1., 1., 0., 0.]),
    ({'max_value': 6.5}, [0., 0., 1., 1., 1., 0.]),
    ({'max_value': 1.}, [0., 0., 1., 0., 0., 0.]),
])
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
def test_relu_with_max_value_gradient_at_the_boundaries_follows_tf(kwargs, expected_gradient,
                                                                    dtype):
    x = torch.tensor(BOUNDARY_POINTS, dtype=dtype, requires_grad=True)
    result = K.relu(x, **kwargs)
    alpha = float(kwargs.get('alpha', 0.))
    max_value = float(kwargs['max_value'])
    expected = [min(max(v, 0.), max_value) + alpha * min(v, 0.) for v in BOUNDARY_POINTS]
    assert_allclose(result.detach().numpy(), expected, rtol=1e-7)
    gradient, = torch.autograd.grad(result.sum(), x)
    assert_allclose(gradient.numpy(), expected_gradient, rtol=1e-7)


# Keras' selu constants (activations.py:80-81).
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


@pytest.mark.parametrize('alpha, scale', [(1., None), (0.3, None), (SELU_ALPHA, SELU_SCALE)])
def test_elu_and_selu_follow_tf_float32_arithmetic_order(alpha, scale):
    # TF: `exp(x) - 1` (not expm1), then `alpha *`, then Keras' `scale *`, each rounded to
    # float32. The exp primitive itself is torch's (numpy's and Eigen's differ from it by an
    # ulp on some inputs), so the reference takes exp from torch and does the rest in numpy.
    x = np.random.RandomState(0).uniform(-6., 2., 10000).astype(np.float32)
    exp = torch.exp(torch.from_numpy(x)).numpy()
    expected = np.where(x > 0, x, exp - np.float32(1))
    if alpha != 1.:
        expected = np.where(x > 0, expected, np.float32(alpha) * expected)
    result = K.elu(torch.from_numpy(x), alpha)
    if scale is not None:
        expected, result = np.float32(scale) * expected, scale * result
    assert result.dtype == torch.float32
    np.testing.assert_array_equal(result.numpy(), expected)


@pytest.mark.parametrize('dtype', DTYPES)
def test_softplus_follows_tf_thresholds_and_arithmetic(dtype):
    # TF: x above -log(eps) - 2, exp(x) below log(eps) + 2, else log(exp(x) + 1) (not
    # log1p); exp and log are torch's, as in the elu test.
    x = np.random.RandomState(1).uniform(-40., 40., 10000).astype(dtype)
    exp = torch.exp(torch.from_numpy(x)).numpy()
    log = torch.log(torch.from_numpy(exp + dtype(1))).numpy()
    threshold = dtype(np.log(np.finfo(dtype).eps) + 2)
    expected = np.where(x > -threshold, x, np.where(x < threshold, exp, log))
    np.testing.assert_array_equal(K.softplus(torch.from_numpy(x)).numpy(), expected)


def test_elu_gradient_is_finite_where_exp_overflows():
    x = torch.tensor([-1., 0., 100.], requires_grad=True)
    K.elu(x, 0.5).sum().backward()
    assert_allclose(x.grad.numpy(), [0.5 * np.exp(-1.), 0.5, 1.], rtol=RTOL)


@pytest.mark.parametrize('name, kwargs, argument', [
    ('relu', {'alpha': [0.1, 0.2]}, '`alpha`'),
    ('relu', {'max_value': np.ones(2)}, '`max_value`'),
    ('relu', {'threshold': 'high'}, '`threshold`'),
    ('elu', {'alpha': None}, '`alpha`'),
])
def test_activation_rejects_non_scalar_hyperparameter(name, kwargs, argument):
    with pytest.raises(TypeError, match=argument + ' must be a Python number or a 0-d'):
        getattr(K, name)(torch.ones(2), **kwargs)


@pytest.mark.parametrize('axis, error, message', [
    (2, ValueError, r'Invalid axis 2 for a tensor of rank 2: expected an integer in \[-2, 2\)'),
    (-3, ValueError, r'Invalid axis -3 for a tensor of rank 2'),
    (1.5, TypeError, 'axis must be an integer, got 1.5'),
])
def test_softmax_rejects_bad_axis(axis, error, message):
    with pytest.raises(error, match=message):
        K.softmax(torch.ones(2, 3), axis=axis)


@pytest.mark.parametrize('value, dtype', [
    ([[-1., 2.]], torch.float32),       # Python floats take floatx
    (np.array([-1., 2.]), torch.float64),  # numpy arrays keep their dtype
    (np.float32(-1.), torch.float32),
    (2., torch.float32),
])
def test_inputs_may_be_numpy_or_python(value, dtype):
    result = K.relu(value)
    assert result.dtype == dtype
    assert_allclose(result.numpy(), np.maximum(value, 0.))


def test_python_floats_follow_floatx():
    config.set_floatx('float64')
    try:
        assert K.sigmoid(0.5).dtype == torch.float64
    finally:
        config.set_floatx('float32')


def test_non_numeric_input_is_rejected():
    with pytest.raises(TypeError, match='`x` must be a tensor, a numpy array or a number'):
        K.tanh('a')


# ---------------------------------------------------------------------------------------------
# Crossentropies

def _cce_reference(target, output, from_logits, axis):
    """npb.categorical_crossentropy works on the last axis only: move `axis` there first."""
    target, output = np.moveaxis(target, axis, -1), np.moveaxis(output, axis, -1).copy()
    return npb.categorical_crossentropy(target, output, from_logits=from_logits)


@pytest.mark.parametrize('shape, axis', [((5, 4), -1), ((5, 4), 1), ((2, 4, 3), 1),
                                         ((2, 3, 4), -1), ((4, 5), 0)])
@pytest.mark.parametrize('from_logits', [False, True])
@pytest.mark.parametrize('dtype', DTYPES)
def test_categorical_crossentropy_matches_reference(shape, axis, from_logits, dtype):
    target, _ = _one_hot(shape, axis)
    if from_logits:
        # Moderate logits: no softmax value reaches epsilon, where the reference would clip.
        output = _values(shape)
    else:
        # Unnormalized on purpose: the op rescales over `axis` first.
        output = 3. * _probabilities(shape, axis)
    expected = _cce_reference(target, output, from_logits, axis)
    result = K.categorical_crossentropy(torch.from_numpy(target.astype(dtype)),
                                        torch.from_numpy(output.astype(dtype)),
                                        from_logits=from_logits, axis=axis)
    _check(result, expected, dtype)


def test_categorical_crossentropy_clips_probabilities_by_current_epsilon():
    target = torch.tensor([[1., 0.]], dtype=torch.float64)
    output = torch.tensor([[0., 1.]], dtype=torch.float64)
    assert_allclose(K.categorical_crossentropy(target, output).numpy(), [-np.log(1e-7)])
    config.set_epsilon(1e-2)
    try:
        assert_allclose(K.categorical_crossentropy(target, output).numpy(), [-np.log(1e-2)])
    finally:
        config.set_epsilon(1e-7)


def test_categorical_crossentropy_from_logits_is_not_clipped():
    # TF computes the exact log-softmax; the numpy/Theano backends would cap this at -log(eps).
    target = torch.tensor([[1., 0.]], dtype=torch.float64)
    logits = torch.tensor([[0., 40.]], dtype=torch.float64)
    assert_allclose(K.categorical_crossentropy(target, logits, from_logits=True).numpy(), [40.])


def _log_softmax(z, axis):
    return z - np.log(np.sum(np.exp(z - z.max(axis, keepdims=True)), axis, keepdims=True)) \
        - z.max(axis, keepdims=True)


def _symbolic(fn, values):
    """`fn` of placeholders for `values` (numpy arrays), run by a `K.function`."""
    from torchk import core
    inputs = [core.placeholder(shape=v.shape, dtype=str(v.dtype)) for v in values]
    return core.function(inputs, [fn(*inputs)])(list(values))[0]


# tf.keras' rule (backend._get_logits): a loss of probabilities given the recorded result of
# a softmax (a sigmoid, for binary crossentropy) reads the activation's input as logits,
# unclipped. Logits of 40 make a probability below epsilon: the clipped formula would give
# -log(1e-7) = 16.1 where the logits give 40.
LOGITS = np.array([[0., 40., 1.], [2., -1., 0.5]])


@pytest.mark.parametrize('axis', [-1, 1])
def test_categorical_crossentropy_of_a_recorded_softmax_uses_its_logits(axis):
    target = np.array([[1., 0., 0.], [0., 0.5, 0.5]])
    result = _symbolic(lambda t, z: K.categorical_crossentropy(t, K.softmax(z, axis), axis=axis),
                       [target, LOGITS])
    assert_allclose(result, -np.sum(target * _log_softmax(LOGITS, -1), -1), rtol=RTOL)
    assert result[0] > 39.


def test_sparse_categorical_crossentropy_of_a_recorded_softmax_uses_its_logits():
    labels = np.array([0, 2])
    result = _symbolic(lambda t, z: K.sparse_categorical_crossentropy(t, K.softmax(z)),
                       [labels, LOGITS])
    expected = -np.take_along_axis(_log_softmax(LOGITS, -1), labels[:, None], -1)[:, 0]
    assert_allclose(result, expected, rtol=RTOL)


def test_binary_crossentropy_of_a_recorded_sigmoid_uses_its_logits():
    target = np.array([[0., 1., 1.], [0.5, 0., 1.]])
    result = _symbolic(lambda t, z: K.binary_crossentropy(t, K.sigmoid(z)), [target, LOGITS])
    expected = np.maximum(LOGITS, 0) - LOGITS * target + np.log1p(np.exp(-np.abs(LOGITS)))
    assert_allclose(result, expected, rtol=RTOL)
    assert result[0, 1] == pytest.approx(0.) and result[0, 0] == pytest.approx(0.6931, 1e-3)


@pytest.mark.parametrize('loss', [
    lambda t, z: K.categorical_crossentropy(t, K.softmax(z, axis=0)),  # another axis
    lambda t, z: K.categorical_crossentropy(t, K.softmax(z) * 1.),
    lambda t, z: K.binary_crossentropy(t, K.tanh(z)),
], ids=['softmax_over_another_axis', 'scaled_softmax', 'tanh'])
def test_crossentropy_of_other_outputs_clips_probabilities(loss):
    target = np.array([[1., 0., 0.], [0., 1., 0.]])
    logits = np.array([[-40., 40., 0.], [0., 0., 0.]])
    result = _symbolic(loss, [target, logits])
    assert result.max() < 17.  # clipped at -log(1e-7) (x2 for the binary sum of two terms)


def test_crossentropy_of_eager_probabilities_clips_them():
    # TF's eager tensors have no producing op: the probabilities' formula applies.
    target = torch.tensor([[1., 0., 0.]], dtype=torch.float64)
    probabilities = K.softmax(torch.from_numpy(LOGITS[:1]))
    assert_allclose(K.categorical_crossentropy(target, probabilities).numpy(),
                    [-np.log(1e-7)], rtol=RTOL)


def _sparse_reference(labels, output, from_logits, axis):
    """npb has no sparse crossentropy. TF: clip, log, then log-softmax over `axis`, pick."""
    output = np.moveaxis(output, axis, -1)
    if not from_logits:
        output = np.log(np.clip(output, 1e-7, 1. - 1e-7))
    log_p = output - np.log(np.sum(np.exp(output), axis=-1, keepdims=True))
    return -np.take_along_axis(log_p, labels[..., None], axis=-1)[..., 0]


@pytest.mark.parametrize('shape, axis, target_shape', [
    ((5, 4), -1, (5,)),
    ((5, 4), -1, (5, 1)),      # Keras' float targets of the output's rank
    ((2, 3, 4), -1, (2, 3)),
    ((2, 3, 4), -1, (2, 3, 1)),
    ((2, 4, 3), 1, (2, 3)),    # channels_first
    ((2, 4, 3), 1, (2, 1, 3)),
    ((4,), 0, ()),
])
@pytest.mark.parametrize('from_logits', [False, True])
@pytest.mark.parametrize('dtype', DTYPES)
def test_sparse_categorical_crossentropy_matches_reference(shape, axis, target_shape,
                                                           from_logits, dtype):
    output = _values(shape) if from_logits else _probabilities(shape, axis)
    _, labels = _one_hot(shape, axis)
    expected = _sparse_reference(labels, output, from_logits, axis)
    target = torch.from_numpy(labels.reshape(target_shape).astype(np.float32))
    result = K.sparse_categorical_crossentropy(target, torch.from_numpy(output.astype(dtype)),
                                               from_logits=from_logits, axis=axis)
    assert tuple(result.shape) == labels.shape
    _check(result, expected, dtype)


@pytest.mark.parametrize('from_logits', [False, True])
@pytest.mark.parametrize('dtype', DTYPES)
def test_binary_crossentropy_matches_reference(from_logits, dtype):
    target = np.random.RandomState(2).uniform(0., 1., size=(4, 3))  # soft labels too
    output = _values((4, 3)) if from_logits else _probabilities((4, 3))
    expected = npb.binary_crossentropy(target, output, from_logits=from_logits)
    result = K.binary_crossentropy(torch.from_numpy(target.astype(dtype)),
                                   torch.from_numpy(output.astype(dtype)),
                                   from_logits=from_logits)
    _check(result, expected, dtype)


def test_binary_crossentropy_clips_probabilities_by_epsilon():
    target = torch.tensor([1., 0.], dtype=torch.float64)
    output = torch.tensor([0., 1.], dtype=torch.float64)
    assert_allclose(K.binary_crossentropy(target, output).numpy(), -np.log([1e-7, 1e-7]),
                    rtol=RTOL)


@pytest.mark.parametrize('from_logits', [False, True])
@pytest.mark.parametrize('name, axis', [('categorical_crossentropy', -1),
                                        ('categorical_crossentropy', 0),
                                        ('binary_crossentropy', None)])
def test_crossentropy_gradient(name, axis, from_logits):
    shape = (3, 4)
    output = _values(shape) if from_logits else _probabilities(shape)
    target = _probabilities(shape, seed=3)
    output = torch.from_numpy(output).requires_grad_()
    target = torch.from_numpy(target).requires_grad_()
    kwargs = {'from_logits': from_logits}
    if axis is not None:
        kwargs['axis'] = axis
    assert torch.autograd.gradcheck(lambda t, o: getattr(K, name)(t, o, **kwargs),
                                    (target, output))


@pytest.mark.parametrize('from_logits', [False, True])
@pytest.mark.parametrize('axis', [-1, 1])
def test_sparse_categorical_crossentropy_gradient(from_logits, axis):
    shape = (2, 4, 3)
    output = _values(shape) if from_logits else _probabilities(shape, axis)
    _, labels = _one_hot(shape, axis)
    output = torch.from_numpy(output).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda o: K.sparse_categorical_crossentropy(torch.from_numpy(labels), o,
                                                    from_logits=from_logits, axis=axis),
        (output,))


@pytest.mark.parametrize('call, error, message', [
    (lambda: K.categorical_crossentropy(torch.ones(2, 3), torch.ones(2, 4)), ValueError,
     r'`target` and `output` must have the same shape, got \(2, 3\) and \(2, 4\)'),
    (lambda: K.binary_crossentropy(torch.ones(2), torch.ones(2, 1)), ValueError,
     r'`target` and `output` must have the same shape, got \(2,\) and \(2, 1\)'),
    (lambda: K.categorical_crossentropy(torch.ones(2, 3), torch.ones(2, 3), axis=2), ValueError,
     'Invalid axis 2 for a tensor of rank 2'),
    (lambda: K.sparse_categorical_crossentropy(torch.ones(2), torch.ones(2, 3), axis=-3),
     ValueError, 'Invalid axis -3 for a tensor of rank 2'),
    (lambda: K.sparse_categorical_crossentropy(torch.ones(3, 1), torch.ones(2, 3)), ValueError,
     r'`target` of shape \(3, 1\) must hold one class index per prediction: 2 values'),
    (lambda: K.categorical_crossentropy(None, torch.ones(2, 3)), TypeError,
     '`target` must be a tensor, a numpy array or a number, got None'),
])
def test_crossentropy_rejects_bad_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---------------------------------------------------------------------------------------------
# l2_normalize and in_top_k

@pytest.mark.parametrize('axis', [-1, 0, 1, (0, 2), [1, 2]])
@pytest.mark.parametrize('dtype', DTYPES)
def test_l2_normalize_matches_reference(axis, dtype):
    x = _values((2, 3, 4))
    # npb takes a single axis (its max over `axis` is a no-op then); tuples via plain numpy.
    if isinstance(axis, int):
        expected = npb.l2_normalize(x, axis)
    else:
        expected = x / np.sqrt(np.sum(x ** 2, axis=tuple(axis), keepdims=True))
    _check(K.l2_normalize(torch.from_numpy(x.astype(dtype)), axis=axis), expected, dtype)


def test_l2_normalize_default_axis_is_all_axes():
    x = _values((2, 3))
    assert_allclose(K.l2_normalize(torch.from_numpy(x)).numpy(), x / np.sqrt(np.sum(x ** 2)))


def test_l2_normalize_uses_tf_epsilon():
    # TF floors the squared norm at 1e-12 (not K.epsilon(), as Theano does, which would give
    # 0.316 here); a zero vector stays zero.
    x = torch.tensor([[1e-4, 0.], [0., 0.]], dtype=torch.float64)
    assert_allclose(K.l2_normalize(x, axis=1).numpy(), [[1., 0.], [0., 0.]], rtol=RTOL)


@pytest.mark.parametrize('axis, error, message', [
    (2, ValueError, 'Invalid axis 2 for a tensor of rank 2'),
    ((0, -2), ValueError, r'axis must not repeat an axis, got \(0, -2\)'),
    ('a', TypeError, 'axis must be an integer'),
])
def test_l2_normalize_rejects_bad_axis(axis, error, message):
    with pytest.raises(error, match=message):
        K.l2_normalize(torch.ones(2, 3), axis=axis)


@pytest.mark.parametrize('k', [1, 2, 4, 6])
@pytest.mark.parametrize('target_dtype', [np.int32, np.int64])
def test_in_top_k_matches_reference(k, target_dtype):
    predictions = np.random.RandomState(4).permutation(30).reshape(6, 5).astype(np.float32)
    targets = np.random.RandomState(5).randint(0, 5, size=6)
    expected = npb.in_top_k(predictions, targets, k)
    result = K.in_top_k(torch.from_numpy(predictions), targets.astype(target_dtype), k)
    assert result.dtype == torch.bool and result.shape == (6,)
    assert result.numpy().tolist() == expected.tolist()


def test_in_top_k_follows_tf_on_ties_range_and_non_finite_values():
    # npb's argsort breaks ties by position; TF counts a target as in the top k when fewer
    # than k classes score strictly higher, and says False for out-of-range targets and for
    # rows holding a NaN or an infinity.
    predictions = torch.tensor([[1., 2., 2., 0.],
                                [1., 2., 2., 0.],
                                [1., 2., 2., 0.],
                                [1., 2., 2., 0.],
                                [1., float('nan'), 3., 0.],
                                [1., float('inf'), 3., 0.]])
    targets = torch.tensor([1, 2, 0, 4, 2, 1])
    assert K.in_top_k(predictions, targets, 1).tolist() == [True, True, False, False, False,
                                                            False]
    assert K.in_top_k(predictions, targets, 3).tolist() == [True, True, True, False, False,
                                                            False]


@pytest.mark.parametrize('k', [0, -1])
def test_in_top_k_of_no_classes_is_false_as_in_tf(k):
    assert K.in_top_k(torch.ones(2, 3), torch.zeros(2), k).tolist() == [False, False]


@pytest.mark.parametrize('predictions, targets, k, error, message', [
    (torch.ones(2, 3), torch.zeros(2), 1.5, TypeError, '`k` must be an int, got 1.5'),
    (torch.ones(2, 3, 1), torch.zeros(2), 1, ValueError,
     r'`predictions` must have shape \(batch_size, classes\), got \(2, 3, 1\)'),
    (torch.ones(2, 3), torch.zeros(2, 1), 1, ValueError,
     r'`targets` must have shape \(2,\) to match `predictions` of shape \(2, 3\), got \(2, 1\)'),
])
def test_in_top_k_rejects_bad_arguments(predictions, targets, k, error, message):
    with pytest.raises(error, match=message):
        K.in_top_k(predictions, targets, k)


# ---------------------------------------------------------------------------------------------
# Batch normalization

def _bn_stats(x, reduction_axes):
    """Plain numpy: npb has no normalize_batch_in_training. Population statistics (ddof 0)."""
    keep = tuple(sorted(reduction_axes))
    return x.mean(axis=keep, keepdims=True), x.var(axis=keep, keepdims=True)


@pytest.mark.parametrize('shape, axis, broadcast_params', [
    ((4, 3), -1, False),
    ((5, 4, 3), -1, False),
    ((2, 3, 4, 5), -1, False),
    ((2, 3, 4, 5, 2), -1, False),
    ((2, 3, 4, 5, 2), 1, True),
    ((2, 3, 4, 5), 2, False),
    ((2, 3, 4, 5), 1, False),   # 1-D parameters are laid along `axis`
    ((2, 3, 4, 5), 1, True),    # as Keras passes them: reshaped to (1, 3, 1, 1)
    ((2, 3, 4), 1, True),
])
@pytest.mark.parametrize('with_beta_gamma', [True, False])
@pytest.mark.parametrize('dtype', DTYPES)
def test_batch_normalization_matches_reference(shape, axis, broadcast_params, with_beta_gamma,
                                               dtype):
    x = _values(shape)
    channels = shape[axis]
    broadcast_shape = [1] * len(shape)
    broadcast_shape[axis] = channels
    mean, var, beta, gamma = (_values((channels,), 0.1, 2., seed=s) for s in range(4))
    expected = npb.batch_normalization(
        x, *(p.reshape(broadcast_shape) for p in (mean, var, beta, gamma)), epsilon=1e-3)
    if not with_beta_gamma:
        expected = (x - mean.reshape(broadcast_shape)) / np.sqrt(
            var.reshape(broadcast_shape) + 1e-3)
        beta = gamma = None

    def tensor(p):
        if p is None:
            return None
        return torch.from_numpy((p.reshape(broadcast_shape) if broadcast_params else p)
                                .astype(dtype))

    result = K.batch_normalization(torch.from_numpy(x.astype(dtype)), tensor(mean), tensor(var),
                                   tensor(beta), tensor(gamma), axis=axis)
    _check(result, expected, dtype)


@pytest.mark.parametrize('shape, axis', [((4, 3), -1), ((5, 4, 3), -1), ((2, 4, 5, 3), -1),
                                         ((2, 3, 4, 5), 1), ((2, 3, 4, 5, 2), 1)])
@pytest.mark.parametrize('statistics_need_gradients', [False, True])
def test_batch_normalization_gradients_match_the_formula(shape, axis, statistics_need_gradients):
    """The fused kernel (statistics without gradients) and the element-wise path (with them)
    against autograd through the formula, in float64."""
    channels = shape[axis]
    x = torch.from_numpy(_values(shape))
    mean, var, beta, gamma = (torch.from_numpy(_values((channels,), 0.1, 2., seed=s))
                              for s in range(4))
    upstream = torch.from_numpy(np.random.RandomState(7).normal(size=shape))
    broadcast_shape = [1] * len(shape)
    broadcast_shape[axis] = channels
    gradients = []
    for fused in (True, False):
        inputs = [v.clone().requires_grad_(statistics_need_gradients or i in (0, 3, 4))
                  for i, v in enumerate((x, mean, var, beta, gamma))]
        if fused:
            output = K.batch_normalization(*inputs, axis=axis)
        else:
            b_mean, b_var, b_beta, b_gamma = (v.reshape(broadcast_shape) for v in inputs[1:])
            output = (inputs[0] - b_mean) / torch.sqrt(b_var + 1e-3) * b_gamma + b_beta
        wrt = [v for v in inputs if v.requires_grad]
        gradients.append(torch.autograd.grad(output, wrt, upstream))
    for ours, reference in zip(*gradients):
        assert_allclose(ours.numpy(), reference.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize('args, message', [
    ((torch.ones(2, 3), torch.ones(4), torch.ones(3), None, None),
     '`mean` has 4 entries but axis 1 of `x` \\(shape \\(2, 3\\)\\) has 3'),
    ((torch.ones(2, 3, 4), torch.ones(3), torch.ones(2, 3, 2), None, None),
     r'`var` of shape \(2, 3, 2\) does not broadcast to `x` of shape \(2, 3, 4\)'),
])
def test_batch_normalization_rejects_misfit_statistics(args, message):
    with pytest.raises(ValueError, match=message):
        K.batch_normalization(*args, axis=1)


BN_REDUCTIONS = [
    ((6, 3), [0]),
    ((5, 4, 3), [0, 1]),                # channels_last 3-D: a (rest, channels) view
    ((5, 3, 4), [0, 2]),                # channels_first 3-D
    ((2, 4, 5, 3), [0, 1, 2]),          # channels_last, few channels: a channels-first copy
    ((2, 3, 2, 16), [0, 1, 2]),         # channels_last: torch's channels_last NCHW
    ((2, 3, 4, 5), [0, 2, 3]),          # channels_first
    ((2, 3, 4, 5, 3), [0, 1, 2, 3]),    # channels_last 5-D: channels_last_3d NCDHW
    ((2, 3, 4, 5, 2), [0, 2, 3, 4]),    # channels_first 5-D
    ((2, 3, 4), (0, -1)),
    ((3, 2, 4), [1, 2]),                # statistics per leading position
    ((2, 3, 4, 5), [0, 1]),             # two kept trailing axes
    ((2, 3, 4, 5), [1, 3]),             # kept axes 0 and 2: not one block
    ((2, 3, 4, 5), [0, 1, 2, 3]),       # no kept axis: one mean and variance
]


@pytest.mark.parametrize('shape, reduction_axes', BN_REDUCTIONS)
@pytest.mark.parametrize('with_gamma, with_beta', [(True, True), (False, True), (True, False),
                                                   (False, False)])
@pytest.mark.parametrize('dtype', DTYPES)
def test_normalize_batch_in_training(shape, reduction_axes, with_gamma, with_beta, dtype):
    x = _values(shape)
    axes = tuple(a % len(shape) for a in reduction_axes)
    stats_shape = tuple(s for i, s in enumerate(shape) if i not in axes)
    mean, var = _bn_stats(x, axes)
    gamma = _values(stats_shape, 0.5, 2., seed=1)
    beta = _values(stats_shape, -1., 1., seed=2)
    expected = (x - mean) / np.sqrt(var + 1e-3)
    if with_gamma:
        expected = expected * gamma.reshape(mean.shape)
    if with_beta:
        expected = expected + beta.reshape(mean.shape)
    normed, batch_mean, batch_var = K.normalize_batch_in_training(
        torch.from_numpy(x.astype(dtype)),
        torch.from_numpy(gamma.astype(dtype)) if with_gamma else None,
        torch.from_numpy(beta.astype(dtype)) if with_beta else None,
        reduction_axes)
    _check(normed, expected, dtype)
    _check(batch_mean, mean.reshape(stats_shape), dtype)
    if len(shape) == 4 and axes == (0, 1, 2):  # TF's fused kernel: the sample variance
        count = x.size // var.size
        var = var * count / (count - 1)
    _check(batch_var, var.reshape(stats_shape), dtype)


def test_normalize_batch_in_training_gradient():
    x = torch.from_numpy(_values((4, 3))).requires_grad_()
    gamma = torch.from_numpy(_values((3,), 0.5, 2., seed=1)).requires_grad_()
    beta = torch.from_numpy(_values((3,), seed=2)).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda *a: K.normalize_batch_in_training(*a, reduction_axes=[0]), (x, gamma, beta))
    assert torch.autograd.gradgradcheck(
        lambda *a: K.normalize_batch_in_training(*a, reduction_axes=[0]), (x, gamma, beta))


def _formula_batch_norm(x, gamma, beta, axes, epsilon=1e-3):
    """normalize_batch_in_training as element-wise torch ops, for autograd's gradients."""
    var, mean = torch.var_mean(x, dim=axes, correction=0, keepdim=True)
    normed = (x - mean) / torch.sqrt(var + epsilon)
    if gamma is not None:
        normed = normed * gamma.reshape(mean.shape)
    if beta is not None:
        normed = normed + beta.reshape(mean.shape)
    stats_shape = [n for i, n in enumerate(x.shape) if i not in axes]
    if x.ndim == 4 and tuple(axes) == (0, 1, 2):  # TF's fused kernel: the sample variance
        count = x.numel() // var.numel()
        var = var * count / (count - 1)
    return normed, mean.reshape(stats_shape), var.reshape(stats_shape)


@pytest.mark.parametrize('shape, reduction_axes, channels_last_memory',
                         [case + (False,) for case in BN_REDUCTIONS]
                         + [((2, 3, 4, 5), [0, 2, 3], True),    # a channels_first Keras tensor
                            ((2, 4, 5, 3), [0, 1, 2], True)])   # neither layout: a copy
@pytest.mark.parametrize('with_params', [True, False])
def test_normalize_batch_in_training_gradients_match_the_formula(shape, reduction_axes,
                                                                 with_params,
                                                                 channels_last_memory):
    """The native kernel's backward (and the statistics' own) against autograd through the
    element-wise formula, in float64, for upstream gradients on all three outputs."""
    axes = tuple(a % len(shape) for a in reduction_axes)
    x = torch.from_numpy(_values(shape))
    if channels_last_memory:
        x = x.contiguous(memory_format=torch.channels_last)
    elif len(shape) == 4 and axes == (0, 1, 2):
        x = x.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)  # NCHW memory
    stats_shape = [n for i, n in enumerate(shape) if i not in axes]
    gamma = beta = None
    if with_params:
        gamma = torch.from_numpy(_values(stats_shape, 0.5, 2., seed=1))
        beta = torch.from_numpy(_values(stats_shape, seed=2))
    rng = np.random.RandomState(7)
    upstream = [torch.from_numpy(rng.normal(size=s)) for s in (shape, stats_shape, stats_shape)]
    gradients = []
    for function in (lambda *a: K.normalize_batch_in_training(*a, reduction_axes),
                     lambda *a: _formula_batch_norm(*a, axes)):
        inputs = [v.clone().requires_grad_() if v is not None else None
                  for v in (x, gamma, beta)]
        outputs = function(*inputs)
        differentiable = [v for v in inputs if v is not None]
        gradients.append(torch.autograd.grad(outputs, differentiable, upstream))
    for ours, reference in zip(*gradients):
        assert_allclose(ours.numpy(), reference.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize('gamma, reduction_axes, error, message', [
    (None, [], ValueError, '`reduction_axes` must name at least one axis'),
    (None, [0, 3], ValueError, 'Invalid reduction_axes 3 for a tensor of rank 3'),
    (None, 0.5, TypeError, 'reduction_axes must be an integer, got 0.5'),
    (torch.ones(4), [0, 2], ValueError,
     r'`gamma` of shape \(4,\) must hold 3 values, one per position of the axes of `x` '
     r'\(shape \(2, 3, 4\)\) outside reduction_axes \(0, 2\)'),
])
def test_normalize_batch_in_training_rejects_bad_arguments(gamma, reduction_axes, error,
                                                           message):
    with pytest.raises(error, match=message):
        K.normalize_batch_in_training(torch.ones(2, 3, 4), gamma, None, reduction_axes)


@pytest.mark.parametrize('shape, reduction_axes', [
    ((6, 3), [0]), ((2, 3, 4, 5), [0, 1, 2]), ((2, 3, 4, 5), [0, 2, 3]), ((2, 3, 4), [0, 2]),
    ((3, 2, 4), [0])])
@pytest.mark.parametrize('dtype', DTYPES)
def test_normalize_batch_with_moving_statistics(shape, reduction_axes, dtype):
    """normalize_batch_in_training's tensor, and the moving statistics moved in place as
    torch's kernel does: the batch variance with Bessel's n / (n - 1)."""
    x = _values(shape)
    axes = tuple(a % len(shape) for a in reduction_axes)
    stats_shape = tuple(s for i, s in enumerate(shape) if i not in axes)
    gamma, beta = _values(stats_shape, 0.5, 2., seed=1), _values(stats_shape, seed=2)
    moving = [_values(stats_shape, seed=3), _values(stats_shape, 0.5, 2., seed=4)]
    moving_mean, moving_variance = (torch.from_numpy(m.astype(dtype)) for m in moving)
    normed = K.normalize_batch_with_moving_statistics(
        *(torch.from_numpy(v.astype(dtype)) for v in (x, gamma, beta)), moving_mean,
        moving_variance, reduction_axes, momentum=0.25, epsilon=1e-3)
    expected = K.normalize_batch_in_training(
        *(torch.from_numpy(v.astype(dtype)) for v in (x, gamma, beta)), reduction_axes)[0]
    torch.testing.assert_close(normed, expected, rtol=0, atol=0)
    mean, var = _bn_stats(x, axes)
    count = x.size // var.size
    _check(moving_mean, 0.75 * moving[0] + 0.25 * mean.reshape(stats_shape), dtype)
    _check(moving_variance, 0.75 * moving[1] + 0.25 * var.reshape(stats_shape) * count
           / (count - 1), dtype)


def test_normalize_batch_with_moving_statistics_of_one_value_per_channel():
    """One value per channel: the variance moves towards 0 (Keras' corrected variance of
    0), the mean towards the values; torch's kernel alone would divide by 0."""
    x = torch.tensor([[1., -2., 3.]])
    moving_mean, moving_variance = torch.zeros(3), torch.ones(3)
    normed = K.normalize_batch_with_moving_statistics(
        x, None, None, moving_mean, moving_variance, [0], momentum=0.5)
    torch.testing.assert_close(normed, torch.zeros(1, 3))
    torch.testing.assert_close(moving_mean, torch.tensor([0.5, -1., 1.5]))
    torch.testing.assert_close(moving_variance, torch.full((3,), 0.5))


# ---------------------------------------------------------------------------------------------
# Shape inference runs every op on meta tensors: they must work there, without reading values.

def _meta(*shape, dtype=torch.float32):
    return torch.empty(shape, dtype=dtype, device='meta')


@pytest.mark.parametrize('call, shapes', [
    (lambda: K.relu(_meta(2, 3), 0.1, 6., 0.5), [(2, 3)]),
    (lambda: K.elu(_meta(2, 3)), [(2, 3)]),
    (lambda: K.softmax(_meta(2, 3), axis=0), [(2, 3)]),
    (lambda: K.hard_sigmoid(_meta(2, 3)), [(2, 3)]),
    (lambda: K.categorical_crossentropy(_meta(2, 5, 3), _meta(2, 5, 3), axis=1), [(2, 3)]),
    (lambda: K.sparse_categorical_crossentropy(_meta(2, 3, 1), _meta(2, 3, 5)), [(2, 3)]),
    (lambda: K.sparse_categorical_crossentropy(np.zeros((2, 3)), _meta(2, 5, 3), axis=1),
     [(2, 3)]),
    (lambda: K.binary_crossentropy(np.ones((2, 3)), _meta(2, 3), from_logits=True), [(2, 3)]),
    (lambda: K.l2_normalize(_meta(2, 3), axis=1), [(2, 3)]),
    (lambda: K.in_top_k(_meta(4, 5), _meta(4, dtype=torch.int32), 2), [(4,)]),
    (lambda: K.batch_normalization(_meta(2, 3, 4, 4), _meta(3), _meta(3), _meta(3), _meta(3),
                                   axis=1), [(2, 3, 4, 4)]),
    (lambda: K.normalize_batch_in_training(_meta(2, 3, 4, 4), _meta(3), _meta(3), [0, 2, 3]),
     [(2, 3, 4, 4), (3,), (3,)]),
])
def test_ops_run_on_meta_tensors(call, shapes):
    results = call()
    results = results if isinstance(results, tuple) else (results,)
    assert [tuple(r.shape) for r in results] == shapes
    assert all(r.device.type == 'meta' for r in results)
