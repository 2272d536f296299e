"""Variables: Parameters with Keras names, values, creators, updates, random initializers."""
import copy
import pickle

import numpy as np
import pytest
import torch

from torchk import core as K
from torchk import variables


def test_variable_is_a_parameter_with_keras_attributes():
    v = K.variable(np.ones((2, 3)), name='kernel', constraint=abs)
    assert isinstance(v, torch.nn.Parameter) and v.requires_grad
    assert v.constraint is abs and v._keras_shape == (2, 3)
    assert v.dtype == torch.float32 and K.dtype(v) == 'float32'
    assert K.is_variable(v) and K.is_tensor(v)
    assert not K.is_placeholder(v)


def test_names_are_unique_and_scoped():
    K.reset_uids()
    first = K.variable(1., name='w')
    second = K.variable(1., name='w')
    with K.name_scope('dense_1') as scope:
        scoped = K.variable(1., name='kernel')
    assert scope == 'dense_1/'
    assert (first.name, second.name, scoped.name) == ('w:0', 'w_1:0', 'dense_1/kernel:0')


def test_a_variable_laid_out_keeps_its_shape_and_values():
    """`lay_out` moves a variable's memory into another axis order once: values, shape,
    get_value, set_value, copies and pickles are those of the variable as it was."""
    values = np.arange(24, dtype='float32').reshape(2, 3, 4)
    v = K.variable(values)
    variables.lay_out(v, [2, 0, 1])
    assert v.stride() == (3, 1, 6) and tuple(v.shape) == (2, 3, 4)
    assert variables.memory_order(v) == [2, 0, 1]
    np.testing.assert_array_equal(K.get_value(v), values)
    assert K.get_value(v).flags['C_CONTIGUOUS']
    K.set_value(v, values + 1.)
    assert v.stride() == (3, 1, 6)
    np.testing.assert_array_equal(K.get_value(v), values + 1.)
    for copied in (copy.deepcopy(v), pickle.loads(pickle.dumps(v))):
        assert copied.stride() == (3, 1, 6)
        np.testing.assert_array_equal(K.get_value(copied), values + 1.)
    variables.lay_out(v, [0, 1, 2])  # only the first layout moves memory
    assert v.stride() == (3, 1, 6)


def test_int_variables_do_not_require_grad():
    iterations = K.variable(0, dtype='int64', name='iterations')
    assert iterations.dtype == torch.int64 and not iterations.requires_grad
    f = K.function([], [], updates=[K.update_add(iterations, 1)])
    f([])
    assert int(K.get_value(iterations)) == 1


def test_deepcopy_and_pickle_keep_name_and_value():
    v = K.variable([1., 2.], name='keep_me')
    for clone in (copy.deepcopy(v), pickle.loads(pickle.dumps(v))):
        assert type(clone) is type(v) and clone.name == v.name
        assert clone is not v and clone.tolist() == [1., 2.]


def test_set_value_copies_in_place_so_views_follow():
    v = K.variable(np.zeros((2, 2)))
    view = v.detach()[0]
    K.set_value(v, np.array([[1., 2.], [3., 4.]], dtype='float64'))
    assert view.tolist() == [1., 2.]
    K.batch_set_value([(v, 0)])
    assert K.get_value(v).tolist() == [[0., 0.], [0., 0.]]
    with pytest.raises(ValueError, match=r'\(shape \(2, 2\)\) to an array of shape \(3,\)'):
        K.set_value(v, np.ones(3))


def test_kernel_slices_follow_set_value():
    kernel = K.variable(np.zeros((2, 4)))
    part = kernel[:, 2:]
    K.set_value(kernel, np.arange(8).reshape(2, 4))
    np.testing.assert_array_equal(K.eval(part), [[2, 3], [6, 7]])


def test_torch_functions_on_variables_are_eager_and_trainable_by_torch():
    v = K.variable(np.array([1., -1.]))
    product = torch.mul(v, 2.)
    assert type(product) is torch.Tensor
    optimizer = torch.optim.SGD([v], lr=0.5)
    torch.sum(torch.mul(v, v)).backward()
    optimizer.step()
    np.testing.assert_allclose(K.get_value(v), [0., 0.])


@pytest.mark.parametrize('creator, expected', [
    (lambda: K.zeros((2, 3)), np.zeros((2, 3))),
    (lambda: K.ones(3), np.ones(3)),
    (lambda: K.eye(3), np.eye(3)),
    (lambda: K.eye((2, 3)), np.eye(2, 3)),
])
def test_creators_return_variables(creator, expected):
    v = creator()
    assert K.is_variable(v)
    np.testing.assert_array_equal(K.get_value(v), expected)


def test_zeros_with_int_dtype():
    v = K.zeros((2,), dtype='int32')
    assert K.dtype(v) == 'int32'


def test_constant_broadcasts_scalars_and_reshapes():
    assert K.constant(2., shape=(2, 2)).tolist() == [[2., 2.], [2., 2.]]
    assert K.constant([1, 2, 3, 4], shape=(2, 2)).shape == (2, 2)
    assert K.constant(1).dtype == torch.float32
    with pytest.raises(ValueError, match='3 elements cannot take shape'):
        K.constant([1, 2, 3], shape=(2, 2))


def test_moving_average_update():
    v = K.variable(np.array([1., 2.]))
    K.function([], [], updates=[K.moving_average_update(v, np.array([3., 6.]), 0.9)])([])
    np.testing.assert_allclose(K.get_value(v), [1.2, 2.4], rtol=1e-6)


def test_moving_average_update_rounds_the_decay_to_float32_as_tf():
    v = K.variable(np.array([1., 2.]), dtype='float64')
    K.function([], [], updates=[K.moving_average_update(v, np.array([3., 6.]), 0.9)])([])
    decay = np.float64(np.float32(0.1))  # Keras 2.3.1: convert_to_tensor(1.0 - momentum)
    np.testing.assert_allclose(K.get_value(v), [1. + 2. * decay, 2. + 4. * decay], rtol=1e-15)


def test_update_needs_a_variable():
    with pytest.raises(TypeError, match='needs a Keras variable'):
        K.update(K.placeholder(shape=(1,)), 1.)


def test_count_params_and_size():
    v = K.variable(np.zeros((3, 4)))
    assert K.count_params(v) == 12
    assert int(K.eval(K.size(v))) == 12


def test_random_ops_draw_new_samples_each_run():
    sample = K.random_normal((1000,))
    first, second = K.eval(sample), K.eval(sample)
    assert not np.array_equal(first, second)
    assert abs(first.mean()) < 0.1 and abs(first.std() - 1.) < 0.1


def test_seeded_random_ops_are_reproducible():
    a = K.random_uniform((5,), seed=3)
    b = K.random_uniform((5,), seed=3)
    np.testing.assert_array_equal(K.eval(a), K.eval(b))


@pytest.mark.parametrize('make, check', [
    (lambda: K.random_uniform((20000,), -2., 3.), lambda v: v.min() >= -2. and v.max() < 3.),
    (lambda: K.random_binomial((20000,), p=0.3), lambda v: abs(v.mean() - 0.3) < 0.02),
    (lambda: K.truncated_normal((20000,), 1., 2.),
     lambda v: v.min() >= -3. and v.max() <= 5. and abs(v.mean() - 1.) < 0.05),
])
def test_random_distributions(make, check):
    assert check(K.eval(make()))


def test_random_shape_from_symbolic_batch_size():
    x = K.placeholder(shape=(None, 3))
    noise = K.random_normal(K.shape(x))
    assert K.int_shape(noise) == (None, 3)
    assert K.function([x], [noise])([np.zeros((5, 3))])[0].shape == (5, 3)


def test_dropout_scales_kept_units_and_validates_level():
    x = K.placeholder(shape=(1000,))
    out = K.function([x], [K.dropout(x, 0.25, seed=1)])([np.ones(1000)])[0]
    np.testing.assert_allclose(np.unique(out), [0., 1. / 0.75], rtol=1e-6)
    assert abs((out == 0).mean() - 0.25) < 0.05
    with pytest.raises(ValueError, match=r'in \[0, 1\)'):
        K.dropout(x, 1.)


def test_variable_from_symbolic_initial_value_is_evaluated_once():
    v = K.variable(K.random_normal((3,)))
    assert np.array_equal(K.get_value(v), K.get_value(v))


def test_get_uid_counts_per_prefix_from_one():
    K.reset_uids()
    assert [K.get_uid('dense'), K.get_uid('dense'), K.get_uid('conv')] == [1, 2, 1]
    K.reset_uids()
    assert K.get_uid('dense') == 1


def test_update_sub():
    v = K.variable(np.array([5., 6.]))
    K.function([], [], updates=[K.update_sub(v, np.array([1., 2.], 'float32'))])([])
    assert K.get_value(v).tolist() == [4., 4.]


@pytest.mark.parametrize('make, check', [
    (lambda: K.random_uniform_variable((20000,), -1., 2., seed=1),
     lambda v: v.min() >= -1. and v.max() < 2. and abs(v.mean() - 0.5) < 0.05),
    (lambda: K.random_normal_variable((20000,), 3., 0.5, seed=1),
     lambda v: abs(v.mean() - 3.) < 0.02 and abs(v.std() - 0.5) < 0.02),
])
def test_random_variables(make, check):
    v = make()
    assert K.is_variable(v)
    value = K.get_value(v)
    assert check(value)
    np.testing.assert_array_equal(K.get_value(v), value)


# ---------------------------------------------------------------------------------------------
# Arrays with negative strides, scipy.sparse values, updates with numpy values

FLIPPED = np.arange(12, dtype='float32').reshape(3, 4)[::-1, ::-1]


@pytest.mark.parametrize('convert, expected', [
    (lambda a: K.get_value(K.variable(a)), lambda a: a),
    (lambda a: K.constant(a).numpy(), lambda a: a),
    (lambda a: K.eval(K.variable(np.zeros((3, 4))) + a), lambda a: a),
    (lambda a: K.eval(K.maximum(a, a)), lambda a: a),
    (lambda a: K.eval(K.elu(a)), lambda a: np.where(a > 0, a, np.expm1(a))),
    (lambda a: K.eval(K.conv1d(a[None], np.ones((1, 4, 1), 'float32'))), lambda a: a.sum(
        axis=1)[None, :, None]),
], ids=['variable', 'constant', 'operator', 'math_op', 'nn_op', 'conv_op'])
def test_negative_stride_arrays_are_accepted(convert, expected):
    assert any(s < 0 for s in FLIPPED.strides)
    np.testing.assert_allclose(convert(FLIPPED), expected(FLIPPED), rtol=1e-6)


def test_set_value_and_batch_set_value_take_negative_stride_arrays():
    a, b = K.variable(np.zeros((3, 4))), K.variable(np.zeros(4, dtype='int32'), dtype='int32')
    K.set_value(a, FLIPPED)
    np.testing.assert_array_equal(K.get_value(a), FLIPPED)
    K.batch_set_value([(a, np.flip(FLIPPED)), (b, np.arange(4)[::-1])])
    np.testing.assert_array_equal(K.get_value(a), np.flip(FLIPPED))
    np.testing.assert_array_equal(K.get_value(b), [3, 2, 1, 0])


def test_dtypes_as_tensor_copies_only_negative_stride_arrays():
    from torchk import dtypes
    plain = np.ones((3, 4), 'float32')
    assert dtypes.as_tensor(plain).data_ptr() == plain.ctypes.data
    strided = plain[:, ::2]
    assert dtypes.as_tensor(strided).data_ptr() == strided.ctypes.data
    np.testing.assert_array_equal(dtypes.as_tensor(FLIPPED).numpy(), FLIPPED)


@pytest.mark.parametrize('dtype', [None, 'float64'])
def test_variable_of_a_scipy_sparse_matrix_is_sparse(dtype):
    scipy_sparse = pytest.importorskip('scipy.sparse')
    matrix = scipy_sparse.random(3, 5, density=0.4, format='csc', random_state=0)
    value = K.variable(matrix, dtype=dtype)
    assert K.is_sparse(value) and K.int_shape(value) == (3, 5)
    assert K.dtype(value) == (dtype or 'float32')
    np.testing.assert_allclose(K.eval(value), matrix.toarray(), rtol=1e-6)


@pytest.mark.parametrize('new_value', [np.full(3, 4.), [4., 4., 4.], 4.])
def test_update_takes_numpy_values_lists_and_numbers(new_value):
    variable = K.variable(np.zeros(3))
    K.function([], [], updates=[K.update(variable, new_value)])([])
    np.testing.assert_array_equal(K.get_value(variable), [4., 4., 4.])


# ---------------------------------------------------------------------------------------------
# seed=None: seeds come from numpy's global generator

@pytest.mark.parametrize('make', [
    lambda: K.random_normal((5,)), lambda: K.random_uniform((5,)),
    lambda: K.truncated_normal((5,)), lambda: K.random_binomial((5,), 0.5),
    lambda: K.dropout(K.ones((5,)), 0.5),
    lambda: K.random_uniform_variable((5,), 0., 1.),
    lambda: K.random_normal_variable((5,), 0., 1.),
])
def test_random_ops_without_seed_follow_numpy_seed(make):
    np.random.seed(3)
    first = K.eval(make())
    np.random.seed(3)
    again = K.eval(make())
    np.random.seed(4)
    other = K.eval(make())
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
