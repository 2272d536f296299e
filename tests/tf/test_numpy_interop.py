"""numpy on torch tensors, served as TensorFlow (torchk/tf/numpy_interop.py): numpy's
functions give the results numpy gives on the tensors' values; operators between arrays and
tensors compute as TF's, the array converted to the tensor's dtype, a tensor returned."""
import operator

import numpy as np
import pytest
import torch

from torchk.tf import numpy_interop

VALUES = np.random.RandomState(0).randn(3, 4).astype('float32')


@pytest.fixture
def interop():
    numpy_interop.install()
    yield
    numpy_interop.uninstall()


CALLS = [
    ('var', lambda a: np.var(a)),
    ('std_ddof', lambda a: np.std(a, axis=0, ddof=1)),
    ('mean', lambda a: np.mean(a, axis=1, keepdims=True)),
    ('sum_dtype', lambda a: np.sum(a, dtype='float64')),
    ('max', lambda a: np.max(a)),
    ('amin_axis', lambda a: np.amin(a, axis=1)),
    ('prod', lambda a: np.prod(a[:, :2])),
    ('any', lambda a: np.any(a > 1)),
    ('argmax', lambda a: np.argmax(a, axis=1)),
    ('round', lambda a: np.round(a, 2)),
    ('concatenate', lambda a: np.concatenate([a, a * 2])),
    ('where', lambda a: np.where(a > 0, a, 0.)),
    ('allclose', lambda a: np.allclose(a, a + 1e-9)),
]


@pytest.mark.parametrize('name,call', CALLS, ids=[c[0] for c in CALLS])
def test_numpy_functions_compute_on_tensor_values(interop, name, call):
    tensor = torch.tensor(VALUES, requires_grad=True)
    result, expected = call(tensor), call(VALUES)
    assert isinstance(result, (np.ndarray, np.generic, bool))
    np.testing.assert_array_equal(result, expected)


def test_numpy_ufuncs_on_tensors_return_arrays(interop):
    # TF: np.logical_and(eager_tensor > 0, array) is a bool ndarray, np.add(tensor, 1) an
    # ndarray, np.sqrt of a scalar tensor a numpy scalar.
    tensor = torch.tensor(VALUES)
    mask = np.array([[True], [False], [True]])
    both = np.logical_and(tensor > 0, mask)
    assert isinstance(both, np.ndarray) and both.dtype == bool
    np.testing.assert_array_equal(both, np.logical_and(VALUES > 0, mask))
    added = np.add(tensor, 1)
    assert isinstance(added, np.ndarray)
    np.testing.assert_array_equal(added, VALUES + 1)
    root = np.sqrt(torch.tensor(4.))
    assert isinstance(root, np.generic) and root == 2.


def test_bfloat16_tensors_compute_in_float32(interop):
    tensor = torch.tensor(VALUES).to(torch.bfloat16)
    np.testing.assert_array_equal(np.mean(tensor), np.mean(tensor.float().numpy()))


OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
             operator.mod, operator.pow, operator.lt, operator.le, operator.gt, operator.ge,
             operator.eq, operator.ne]
# TF's integer division and powers differ from torch's whatever the operands: not here.
INTEGER_OPERATORS = [o for o in OPERATORS if o not in (operator.truediv, operator.pow)]
CASES = ([('float32', o) for o in OPERATORS] + [('int32', o) for o in INTEGER_OPERATORS])


@pytest.mark.parametrize('dtype, op', CASES, ids=['%s-%s' % (d, o.__name__) for d, o in CASES])
@pytest.mark.parametrize('array_first', [True, False], ids=['array_op_tensor',
                                                            'tensor_op_array'])
def test_operators_between_arrays_and_tensors_are_tf_s(interop, dtype, op, array_first):
    # TF (tf_keras 2.21): `np.array([10., 20.]) - tf.constant([1., 2.])` is a float32
    # tf.Tensor; against an int32 tensor a float64 array becomes int32 (1.5 -> 1).
    values = np.array([[2., 1., 4.], [-1., 3., 2.]], dtype=dtype)
    array = np.array([[1.5, -2., 3.], [4., 2.5, 2.]])  # float64, as numpy makes it
    converted = array.astype(dtype)
    tensor = torch.tensor(values)
    result = op(array, tensor) if array_first else op(tensor, array)
    expected = op(converted, values) if array_first else op(values, converted)
    assert isinstance(result, torch.Tensor)
    assert result.dtype == (torch.bool if expected.dtype == bool else tensor.dtype)
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-6)


def test_lists_matmul_and_bool_operators_with_tensors(interop):
    tensor = torch.tensor([1., 2., 3.])
    np.testing.assert_array_equal(([1, 2, 3] - tensor).numpy(), [0., 0., 0.])
    product = np.ones((2, 3), 'float32') @ torch.ones(3, 2)
    assert isinstance(product, torch.Tensor)
    np.testing.assert_array_equal(product.numpy(), np.full((2, 2), 3.))
    both = np.array([True, False]) & torch.tensor([True, True])
    assert isinstance(both, torch.Tensor) and both.tolist() == [True, False]


def test_uninstall_gives_torch_its_own_behaviour():
    numpy_interop.install()
    numpy_interop.install()
    numpy_interop.uninstall()
    assert '__array_function__' not in torch.Tensor.__dict__
    assert isinstance(np.add(torch.tensor([1.]), 1), torch.Tensor)
    with pytest.raises(TypeError):
        np.var(torch.tensor(VALUES))
    with pytest.raises(TypeError):
        np.ones(3) - torch.tensor([1., 2., 3.])
    assert (torch.tensor([1., 2., 3.]) - np.ones(3)).dtype == torch.float64
