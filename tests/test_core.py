"""The backend namespace: every name Keras imports, predicates, shapes and Keras 1 names."""
import importlib.util
import os
import re

import numpy as np
import pytest
import scipy.sparse as scipy_sparse
import torch
from dispatched import DispatchedOps

from torchk import core as K

KERAS_1_NAMES = ['image_dim_ordering', 'set_image_dim_ordering', 'get_variable_shape',
                 'lesser', 'lesser_equal', 'deconv2d', 'asymmetric_temporal_padding',
                 'asymmetric_spatial_2d_padding']


def keras_backend_imports():
    """The names keras/backend/__init__.py of 2.3.1 imports from the loaded backend."""
    spec = importlib.util.find_spec('keras')
    path = os.path.join(list(spec.submodule_search_locations)[0], 'backend', '__init__.py')
    with open(path) as f:
        return re.findall(r'from \.load_backend import (\w+)', f.read())


def test_every_name_keras_imports_exists_and_is_callable():
    names = keras_backend_imports()
    assert len(names) >= 150
    theano_only = {'pattern_broadcast'}
    missing = [n for n in names if n not in theano_only and not callable(getattr(K, n, None))]
    assert missing == []


@pytest.mark.parametrize('name', KERAS_1_NAMES)
def test_keras_1_names_exist(name):
    assert callable(getattr(K, name))


def test_keras_1_aliases_compute():
    x = torch.tensor([1., 2., 3.])
    assert K.lesser(x, 2.).tolist() == [True, False, False]
    assert K.lesser_equal(x, 2.).tolist() == [True, True, False]
    assert K.get_variable_shape(K.variable(np.zeros((2, 3)))) == (2, 3)


@pytest.mark.parametrize('value, expected', [
    (K.placeholder(shape=(2,)), True), (K.variable(1.), True), (torch.ones(2), True),
    (np.ones(2), False), (1.5, False), ([1., 2.], False),
])
def test_is_tensor(value, expected):
    assert K.is_tensor(value) is expected


def test_is_keras_tensor_raises_for_non_tensors():
    with pytest.raises(ValueError, match='Expected a symbolic tensor'):
        K.is_keras_tensor(np.ones(2))
    assert K.is_keras_tensor(K.placeholder(shape=(2,))) is False
    assert K.is_keras_tensor(K.variable(1.)) is False


@pytest.mark.parametrize('value', [None, 1, 'name', [1], {}, len, object()])
def test_is_variable_is_false_for_anything_else(value):
    assert K.is_variable(value) is False


def test_placeholder_predicates_and_shapes():
    x = K.placeholder(shape=(None, 3), name='x')
    assert K.is_placeholder(x) and not K.is_placeholder(x * 2.)
    assert K.int_shape(x) == (None, 3) and K.ndim(x) == 2 and K.dtype(x) == 'float32'
    assert K.int_shape(K.placeholder(ndim=3)) == (None, None, None)
    assert list(x.shape) == [None, 3]
    assert K.int_shape(np.zeros((4, 2))) == (4, 2)
    assert K.ndim(K.cast(1.0, 'float32')) == 0


def test_the_static_part_of_a_shape_is_known_when_the_graph_is_built():
    x = K.placeholder(shape=(None, 4, 5))
    shape = K.shape(x)
    assert not K.is_keras_tensor(shape) and K.int_shape(shape) == (3,)
    for static in (shape[1], shape[-1], shape[1:], K.shape(K.variable(np.zeros((2, 3))))):
        assert isinstance(static, torch.Tensor) and not isinstance(static, K.KerasTensor)
    assert shape[1].dtype == torch.int64 and shape[1].tolist() == 4
    assert shape[1:].tolist() == [4, 5] and K.shape(K.variable(np.zeros((2, 3)))).tolist() == [2, 3]
    # Keras 2.3.1 BatchNormalization's sample size of channels-last images.
    size = K.cast(K.prod([shape[a] for a in (0, 1, 2)]), 'float32')
    ratio = K.cast(K.prod([shape[1], shape[2]]), 'float32')
    f = K.function([x], [x * ratio, size, shape, shape[:2], shape[0]])
    value = torch.ones(3, 4, 5)
    scaled, got_size, got_shape, first_two, batch = f([value])
    np.testing.assert_array_equal(scaled, 20. * value.numpy())
    assert (got_size, list(got_shape), list(first_two), batch) == (60., [3, 4, 5], [3, 4], 3)
    # The static sizes cost nothing per call; the batch is one host tensor per call.
    shape_ops = ('aten::lift_fresh', 'aten::stack', 'aten::prod.dim_int')
    for outputs, expected in (([x * ratio], [0, 0, 0]), ([size], [1, 1, 1])):
        f = K.function([x], outputs)
        f([value])
        with DispatchedOps() as dispatched:
            f([value])
        assert [dispatched.names.count(name) for name in shape_ops] == expected


def test_dtype_round_trips_through_cast():
    x = K.placeholder(shape=(2,), dtype='float64')
    y = K.placeholder(shape=(2,), dtype='int32')
    assert K.dtype(K.cast(y, x.dtype)) == 'float64'
    assert K.dtype(K.cast(y, K.variable(1.).dtype)) == 'float32'
    assert K.dtype(K.cast(y, np.float16)) == 'float16'


def test_sparse_placeholder_fed_with_scipy_and_dot():
    x = K.placeholder(shape=(None, 4), sparse=True)
    assert K.is_sparse(x) and not K.is_sparse(K.placeholder(shape=(2,)))
    kernel = np.arange(8, dtype='float32').reshape(4, 2)
    out = K.dot(x, K.variable(kernel))
    dense = K.to_dense(x)
    value = scipy_sparse.random(3, 4, density=0.5, format='csr', dtype='float32',
                                random_state=0)
    got_out, got_dense = K.function([x], [out, dense])([value])
    np.testing.assert_allclose(got_out, value.toarray() @ kernel, rtol=1e-6)
    np.testing.assert_array_equal(got_dense, value.toarray())


def test_backend_name():
    assert K.backend() == 'torchk.core'
