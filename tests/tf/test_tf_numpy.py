"""`tf.experimental.numpy` against numpy (its dtype rules are numpy's) and TF's numpy
behaviour switch (TF 2.21: `prefer_float32=True` makes `asarray(1.)` and `add(1., 2.)`
float32; tensors get `astype`)."""
import numpy as np
import pytest
import torch

import torchk.tf as tf
from torchk import op_table

tnp = tf.experimental.numpy


@pytest.fixture
def numpy_behaviour(monkeypatch):
    monkeypatch.setitem(op_table.NUMPY_SETTINGS, 'prefer_float32', False)
    had = 'astype' in torch.Tensor.__dict__
    yield
    if not had and 'astype' in torch.Tensor.__dict__:
        del torch.Tensor.astype


def _same(tensor, array):
    assert tensor.numpy().dtype == array.dtype
    np.testing.assert_allclose(tensor.numpy(), array, rtol=1e-6)


def test_values_take_numpys_dtypes(numpy_behaviour):
    ints = np.array([[1, 4], [9, 16]], dtype='int32')
    _same(tnp.sqrt(tf.constant(ints)), np.sqrt(ints.astype('float64')))
    _same(tnp.sqrt(32), np.sqrt(32))
    _same(tnp.asarray(1), np.asarray(1))
    _same(tnp.asarray([1.5, 2.]), np.asarray([1.5, 2.]))
    _same(tnp.ones([2, 3]), np.ones([2, 3]))
    _same(tnp.zeros(4, dtype=tnp.int32), np.zeros(4, dtype='int32'))
    _same(tnp.arange(1, 7, 2), np.arange(1, 7, 2))
    _same(tnp.arange(0., 2., .5), np.arange(0., 2., .5))
    _same(tnp.add(1., 2.), np.add(1., 2.))
    assert tnp.random.randn(3, 2).numpy().dtype == np.float64
    assert tnp.random.randn(3, 2).shape == (3, 2)


def test_prefer_float32_and_astype(numpy_behaviour):
    tnp.experimental_enable_numpy_behavior(prefer_float32=True)
    assert tnp.asarray(1.).dtype == tf.float32 and tnp.add(1., 2.).dtype == tf.float32
    assert tnp.ones([2]).dtype == tf.float32
    tnp.experimental_enable_numpy_behavior(prefer_float32=False)
    assert tnp.asarray(1.).dtype == tf.float64 and tnp.add(1., 2.).dtype == tf.float64
    cast = tnp.sqrt(8).astype(tnp.float32)
    assert cast.dtype == tf.float32 and abs(float(cast) - 8 ** .5) < 1e-6
    assert tnp.asarray([1.7, -2.2]).astype(np.int32).tolist() == [1, -2]
    assert isinstance(tnp.ones([1]), tnp.ndarray)
