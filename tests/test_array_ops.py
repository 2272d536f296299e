"""torchk.array_ops against Keras' numpy backend (numpy where the reference lacks the op)."""
import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose, assert_array_equal

from reference import numpy_backend as npb
from torchk import array_ops as A
from torchk import core as K
from torchk import math_ops as M

RNG = np.random.RandomState(0)
X = RNG.randn(2, 3, 4)
TX = torch.from_numpy(X)


def _np(t):
    return t.detach().cpu().numpy()


# Joining and stacking.

@pytest.mark.parametrize('axis', [0, 1, 2, -1, -3])
def test_concatenate(axis):
    parts = [RNG.randn(*(3 if a == axis % 3 else s for a, s in enumerate(X.shape)))
             for _ in range(3)]
    result = A.concatenate([torch.from_numpy(p) for p in parts], axis=axis)
    assert_array_equal(_np(result), npb.concatenate(parts, axis=axis))


def test_concatenate_shape_vectors_with_numpy():
    shape = torch.tensor([5, 3, 4])
    result = A.concatenate([shape[1:], np.array([7])])
    assert result.dtype == torch.int64
    assert_array_equal(_np(result), [3, 4, 7])


def test_concatenate_sparse():
    dense = torch.eye(3, dtype=torch.float64)
    result = A.concatenate([dense.to_sparse(), dense.to_sparse()], axis=0)
    assert result.is_sparse
    assert_array_equal(_np(result.to_dense()), np.concatenate([np.eye(3)] * 2))
    mixed = A.concatenate([dense.to_sparse(), dense], axis=1)
    assert not mixed.is_sparse
    assert_array_equal(_np(mixed), np.concatenate([np.eye(3)] * 2, axis=1))


@pytest.mark.parametrize('axis, message', [
    (3, r'Invalid axis 3 for a tensor of rank 3: expected an integer in \[-3, 3\)'),
    ('1', 'axis must be an integer'),
])
def test_concatenate_bad_axis(axis, message):
    with pytest.raises((ValueError, TypeError), match=message):
        A.concatenate([TX, TX], axis=axis)


def test_concatenate_empty_list():
    with pytest.raises(ValueError, match='non-empty list'):
        A.concatenate([])


@pytest.mark.parametrize('axis', [0, 1, -1, 3])
def test_stack(axis):
    parts = [RNG.randn(2, 3, 4) for _ in range(3)]
    result = A.stack([torch.from_numpy(p) for p in parts], axis=axis)
    assert_array_equal(_np(result), npb.stack(parts, axis=axis))


@pytest.mark.parametrize('n_dtype', [torch.int32, torch.int64])
def test_stack_numbers_with_scalar_tensors(n_dtype):
    result = A.stack([1, torch.tensor(5, dtype=n_dtype)])
    assert result.dtype == n_dtype
    assert_array_equal(_np(result), [1, 5])


def test_stack_only_numbers():
    assert_array_equal(_np(A.stack([1, 2, 3])), [1, 2, 3])


def test_stack_bad_axis():
    with pytest.raises(ValueError, match='Invalid axis 2 for a tensor of rank 2'):
        A.stack([torch.ones(3), torch.ones(3)], axis=2)


# Shapes.

@pytest.mark.parametrize('shape', [(6, 4), (-1, 4), [2, -1], (24,), (2, 3, 2, 2), (1, 2, 1, 12)])
def test_reshape(shape):
    assert_array_equal(_np(A.reshape(TX, shape)), npb.reshape(X, shape))


def test_reshape_with_scalar_tensors():
    result = A.reshape(TX, (torch.tensor(2), -1))
    assert result.shape == (2, 12)


def test_reshape_with_shape_tensor():
    result = A.reshape(TX, torch.tensor([4, 6], dtype=torch.int32))
    assert_array_equal(_np(result), X.reshape(4, 6))


@pytest.mark.parametrize('shape, error, message', [
    ((5, -1), ValueError, r'Cannot reshape a tensor of shape \(2, 3, 4\) \(24 elements\) '
                          r'to shape \(5, -1\)'),
    ((2, 2.5), TypeError, r'shape must hold integers, got 2.5'),
    (torch.tensor([4., 6.]), TypeError, 'shape must hold integers, got a tensor of dtype float32'),
    (torch.ones(2, 2, dtype=torch.int64), ValueError, 'shape must be 1-D'),
])
def test_reshape_errors(shape, error, message):
    with pytest.raises(error, match=message):
        A.reshape(TX, shape)


def test_reshape_with_minus_one_of_an_unknown_batch():
    # Found by fuzzing: the example batch sizes (83, 89) times 3 do not divide by 2, which
    # failed at build time; TF's static shape is (None, 2) and the error comes at run time.
    from torchk import core as K
    x = K.placeholder((None, 3))
    y = K.reshape(x, (-1, 2))
    assert K.int_shape(y) == (None, 2)
    f = K.function([x], [y])
    assert_array_equal(f([np.arange(6.).reshape(2, 3)])[0], np.arange(6.).reshape(3, 2))
    with pytest.raises(ValueError, match=r'Cannot reshape a tensor of shape \(1, 3\)'):
        f([np.ones((1, 3))])


@pytest.mark.parametrize('pattern', [(0, 1, 2), (2, 0, 1), [1, 2, 0], (0, 2, 1)])
def test_permute_dimensions(pattern):
    assert_array_equal(_np(A.permute_dimensions(TX, pattern)),
                       npb.permute_dimensions(X, pattern))


@pytest.mark.parametrize('pattern', [(0, 1), (0, 1, 1), (0, 1, 3), (-1, 0, 1)])
def test_permute_dimensions_bad_pattern(pattern):
    with pytest.raises(ValueError, match=r'pattern must be a permutation of \(0, 1, 2\)'):
        A.permute_dimensions(TX, pattern)


def test_transpose_like_permute_on_numpy_input():
    assert_array_equal(_np(A.permute_dimensions(X, (2, 1, 0))), X.T)


@pytest.mark.parametrize('axis', [None, 0, 2, -1])
def test_expand_dims(axis):
    result = A.expand_dims(TX) if axis is None else A.expand_dims(TX, axis)
    assert_array_equal(_np(result), np.expand_dims(X, -1 if axis is None else axis))


@pytest.mark.parametrize('axis', [3, -4])
def test_expand_dims_last_positions(axis):
    assert A.expand_dims(TX, axis).shape == np.expand_dims(X, axis).shape


def test_expand_dims_bad_axis():
    with pytest.raises(ValueError, match=r'Invalid axis 4 for a tensor of rank 4'):
        A.expand_dims(TX, 4)


@pytest.mark.parametrize('axis', [1, -2, 0])
def test_squeeze(axis):
    x = RNG.randn(1, 1, 3)
    assert_array_equal(_np(A.squeeze(torch.from_numpy(x), axis)), npb.squeeze(x, axis))


def test_squeeze_non_unit_axis():
    with pytest.raises(ValueError, match=r'Cannot squeeze axis 1 of a tensor of shape '
                                         r'\(2, 3, 4\): expected a dimension of 1, got 3'):
        A.squeeze(TX, 1)


def test_squeeze_of_a_rank_only_placeholder():
    # Keras calls K.squeeze(y_true, -1) on its (None, None) target placeholders.
    from torchk import core as K
    target = K.placeholder(ndim=2)
    squeezed = A.squeeze(target, -1)
    assert K.int_shape(squeezed) == (None,)
    assert K.function([target], [squeezed])([np.ones((3, 1))])[0].shape == (3,)


def test_flatten():
    assert_array_equal(_np(A.flatten(TX)), npb.flatten(X))


@pytest.mark.parametrize('shape', [(2, 3, 4), (5,), (0, 3), (3, 1, 1, 2)])
def test_batch_flatten(shape):
    x = RNG.randn(*shape)
    result = A.batch_flatten(torch.from_numpy(x))
    assert result.shape == (shape[0], int(np.prod(shape[1:])))
    if x.size:
        assert_array_equal(_np(result), npb.batch_flatten(x))


# Repetition.

@pytest.mark.parametrize('axis', [0, 1, 2, -1])
@pytest.mark.parametrize('rep', [1, 3])
def test_repeat_elements(axis, rep):
    assert_array_equal(_np(A.repeat_elements(TX, rep, axis)), npb.repeat_elements(X, rep, axis))


def test_repeat_elements_negative_rep():
    with pytest.raises(ValueError, match='rep must be >= 0, got -1'):
        A.repeat_elements(TX, -1, 0)


@pytest.mark.parametrize('n', [1, 3, torch.tensor(2)])
def test_repeat(n):
    x = RNG.randn(2, 5)
    assert_array_equal(_np(A.repeat(torch.from_numpy(x), n)), npb.repeat(x, int(n)))


def test_repeat_needs_rank_2():
    with pytest.raises(ValueError,
                       match=r"repeat expects a tensor of rank 2, got shape \(2, 3, 4\)"):
        A.repeat(TX, 2)


@pytest.mark.parametrize('n', [(1, 2, 3), [2, 1, 1], (2, 2), 3, (1, 1, 1)])
def test_tile(n):
    assert_array_equal(_np(A.tile(TX, n)), npb.tile(X, n))


def test_tile_with_a_tensor():
    n = torch.stack([torch.tensor(2), torch.tensor(1), torch.tensor(3)])
    assert_array_equal(_np(A.tile(TX, n)), np.tile(X, (2, 1, 3)))


def test_tile_too_many_multiples():
    with pytest.raises(ValueError, match=r'n must have at most 3 entries for a tensor of rank 3'):
        A.tile(TX, (1, 1, 1, 2))


# arange.

@pytest.mark.parametrize('args', [(5,), (2, 7), (0, 10, 3), (10, 0, -2), (-3,), (5, 2), (0,)])
@pytest.mark.parametrize('dtype', ['int32', 'int64', 'float32'])
def test_arange(args, dtype):
    result = A.arange(*args, dtype=dtype)
    expected = np.arange(*([0, max(args[0], 0)] if len(args) == 1 else args), dtype=dtype)
    assert result.dtype == getattr(torch, dtype)
    assert_array_equal(_np(result), expected)
    if len(args) > 1 or args[0] >= 0:
        assert_array_equal(_np(result), npb.arange(*args, dtype=dtype))


def test_arange_default_dtype_is_int32():
    assert A.arange(3).dtype == torch.int32


def test_arange_with_scalar_tensors():
    result = A.arange(torch.tensor(1), torch.tensor(4))
    assert_array_equal(_np(result), [1, 2, 3])


def test_arange_float_steps():
    result = A.arange(0., 1., 0.25, dtype='float32')
    assert_allclose(_np(result), [0., 0.25, 0.5, 0.75])


def test_arange_zero_step():
    with pytest.raises(ValueError, match='step must not be 0'):
        A.arange(0, 3, 0)


# Selection.

@pytest.mark.parametrize('num_classes', [3, 5])
@pytest.mark.parametrize('dtype', [torch.int32, torch.int64])
def test_one_hot(num_classes, dtype):
    indices = np.array([[0, 2], [1, 0], [2, 2]])
    result = A.one_hot(torch.from_numpy(indices).to(dtype), num_classes)
    assert result.dtype == torch.float32
    assert_array_equal(_np(result), npb.one_hot(indices, num_classes))


def test_one_hot_out_of_range_gives_zeros():
    assert_array_equal(_np(A.one_hot(torch.tensor([-1, 3, 1]), 3)),
                       [[0, 0, 0], [0, 0, 0], [0, 1, 0]])


def test_one_hot_follows_floatx(floatx64):
    assert A.one_hot(torch.tensor([1]), 2).dtype == torch.float64


@pytest.mark.parametrize('axes', [0, 2, -1, [0, 1], (1, 2), [0, 1, 2]])
def test_reverse(axes):
    assert_array_equal(_np(A.reverse(TX, axes)), npb.reverse(X, axes))


def test_reverse_bad_axis():
    with pytest.raises(ValueError, match='Invalid axes 3 for a tensor of rank 3'):
        A.reverse(TX, [0, 3])


@pytest.mark.parametrize('start, size', [
    ((0, 0, 0), (2, 3, 4)), ((1, 1, 2), (1, 2, 2)), ([0, 2, 1], [2, 1, 3]), ((1, 0, 4), (1, 3, 0)),
])
def test_slice(start, size):
    assert_array_equal(_np(A.slice(TX, start, size)), npb.slice(X, start, size))


def test_slice_size_minus_one_takes_the_rest():
    assert_array_equal(_np(A.slice(TX, (1, 1, 2), (-1, -1, -1))), X[1:, 1:, 2:])


def test_slice_with_tensors():
    result = A.slice(TX, torch.tensor([0, 1, 0]), [torch.tensor(1), 2, -1])
    assert_array_equal(_np(result), X[0:1, 1:3, :])


@pytest.mark.parametrize('start, size, message', [
    ((0, 0), (1, 1), 'The dimension and the size of indices should match'),
    ((0, 0, 0), (1, 1), 'The dimension and the size of indices should match'),
    ((0, 2, 0), (1, 2, 1), r'does not fit in a tensor of shape \(2, 3, 4\)'),
    ((-1, 0, 0), (1, 1, 1), 'does not fit'),
])
def test_slice_errors(start, size, message):
    with pytest.raises(ValueError, match=message):
        A.slice(TX, start, size)


@pytest.mark.parametrize('indices', [
    np.array([2, 0, 2]), np.array([[0, 1], [2, 2]]), np.array(1), np.array([], 'int64'),
])
@pytest.mark.parametrize('dtype', [torch.int32, torch.int64])
def test_gather(indices, dtype):
    reference = RNG.randn(3, 4, 2)
    result = A.gather(torch.from_numpy(reference), torch.from_numpy(indices).to(dtype))
    assert result.dtype == torch.float64
    assert_array_equal(_np(result), npb.gather(reference, indices))


def test_gather_list_indices():
    assert_array_equal(_np(A.gather(TX, [1, 0])), X[[1, 0]])


def test_gather_float_indices():
    with pytest.raises(TypeError, match="indices must be an integer tensor, got dtype float32"):
        A.gather(TX, torch.tensor([0., 1.]))


# Tensors like others.

@pytest.mark.parametrize('fn, value', [(A.zeros_like, 0), (A.ones_like, 1)])
@pytest.mark.parametrize('dtype, expected', [
    (None, torch.float32), ('int32', torch.int32), (np.float64, torch.float64),
    (torch.int16, torch.int16),
])
def test_filled_like(fn, value, dtype, expected):
    x = torch.ones(2, 3, dtype=torch.int64)
    result = fn(x, dtype=dtype)
    assert result.dtype == expected
    assert_array_equal(_np(result), np.full((2, 3), value))


def test_filled_like_follows_floatx(floatx64):
    assert A.zeros_like(torch.ones(2, dtype=torch.int32)).dtype == torch.float64


def test_identity_is_a_new_object_with_the_same_values():
    x = torch.nn.Parameter(torch.randn(3))
    y = A.identity(x)
    assert y is not x
    assert not isinstance(y, torch.nn.Parameter)
    assert_array_equal(_np(y), _np(x))
    assert y.requires_grad


@pytest.mark.parametrize('module', [A, M])
def test_all_lists_the_public_ops(module):
    public = {name for name, value in vars(module).items()
              if callable(value) and not name.startswith('_')
              and getattr(value, '__module__', None) == module.__name__}
    assert set(module.__all__) == public


def test_identity_of_numpy():
    assert_array_equal(_np(A.identity(X)), X)


@pytest.mark.parametrize('placeholder_shape, target, value_shape', [
    ((None,), (1,), (1,)), ((None, None), (1, 3), (3, 1)), ((None, None), (6,), (2, 3))])
def test_reshape_of_unknown_dimensions_to_a_fixed_shape_builds(placeholder_shape, target,
                                                               value_shape):
    # As in TF: the static shape is the target; the sizes are checked when the graph runs.
    x = K.placeholder(shape=placeholder_shape)
    y = A.reshape(x, target)
    assert K.int_shape(y) == target
    value = np.arange(np.prod(value_shape), dtype='float32').reshape(value_shape)
    assert_array_equal(K.function([x], [y])([value])[0], value.reshape(target))
    with pytest.raises(ValueError, match='Cannot reshape'):
        K.function([x], [y])([np.zeros((4, 4)[:len(placeholder_shape)], 'float32')])


def test_squeeze_of_an_unknown_dimension_builds_and_checks_when_run():
    x = K.placeholder(shape=(None, None))
    y = A.squeeze(x, 0)
    assert K.int_shape(y) == (None,)
    assert_array_equal(K.function([x], [y])([np.ones((1, 3), 'float32')])[0], np.ones(3))
    with pytest.raises(ValueError, match='Cannot squeeze axis 0'):
        K.function([x], [y])([np.ones((2, 3), 'float32')])
