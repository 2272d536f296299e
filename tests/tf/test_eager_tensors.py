"""A tensor's `device` as TF names it, served as TensorFlow (torchk/tf/eager_tensors.py): TF's
string for a script, the `torch.device` for torch's and torchk's own code."""
import copy

import numpy as np
import pytest
import torch

import torchk.tf as tf
from torchk.tf import eager_tensors


@pytest.fixture
def eager():
    eager_tensors.install()
    yield
    eager_tensors.uninstall()


def test_a_script_reads_tf_s_device_name(eager):
    tensor = torch.ones(3)
    # TF: tf.constant(1.).device == '/job:localhost/replica:0/task:0/device:CPU:0'
    assert tensor.device == '/job:localhost/replica:0/task:0/device:CPU:0'
    assert tensor.device.endswith('CPU:0') and isinstance(tensor.device, str)
    assert (tensor.device.type, tensor.device.index) == ('cpu', None)
    assert tensor.device.torch_device == torch.device('cpu')
    assert torch.nn.Parameter(tensor).device.endswith('CPU:0')


def test_a_script_reads_a_tf_tensor_shape(eager):
    # TF (tensor guide): `x.shape.as_list()`, `.rank`, `.num_elements()`; prints `(3, 2)`.
    shape = torch.ones(3, 2).shape
    assert isinstance(shape, tf.TensorShape) and isinstance(shape, tuple)
    assert (shape.as_list(), shape.rank, shape.num_elements()) == ([3, 2], 2, 6)
    assert shape == (3, 2) and shape == [3, 2] and shape[0] == 3 and len(shape) == 2
    assert (str(shape), repr(shape), str(shape[1:])) == ('(3, 2)', 'TensorShape([3, 2])',
                                                         '(2,)')
    assert np.zeros(shape).shape == (3, 2) and torch.zeros(shape).size() == (3, 2)


def test_torch_and_torchk_code_read_torch_devices_and_sizes(eager):
    namespace = {'__name__': 'torch.somewhere'}
    exec('def device_of(t):\n    return t.device, t.shape\n', namespace)
    device, shape = namespace['device_of'](torch.ones(2))
    assert device == torch.device('cpu') and type(shape) is torch.Size
    tensor = torch.arange(6.).reshape(2, 3).requires_grad_()
    # torch's Python code that reads `.device`: copies, factories, autograd, nn.
    assert torch.equal(copy.deepcopy(tensor), tensor)
    assert torch.zeros_like(tensor).sum() == 0
    layer = torch.nn.Linear(3, 2)
    layer(tensor).sum().backward()
    optimizer = torch.optim.Adam(layer.parameters(), foreach=True)
    optimizer.step()
    from torchk import core as K
    np.testing.assert_allclose(K.eval(K.sum(K.variable(np.ones((2, 2))) * 2.)), 8.)


VALUES = np.arange(60.).reshape(3, 4, 5)
# TF (tensor guide): `rank_1_tensor[::-1]` reverses; each key as numpy reads it.
KEYS = [np.s_[::-1], np.s_[::-2], np.s_[3:0:-1], np.s_[:, ::-1], np.s_[1, ::-1, 2],
        np.s_[..., ::-2], np.s_[None, ::-1, ..., 4:1:-2], np.s_[-1:, 2:-5:-1], np.s_[:, 1:3:-1],
        np.s_[np.array([0, 2]), ::-1]]


@pytest.mark.parametrize('key', KEYS, ids=[str(k) for k in KEYS])
def test_slices_of_negative_step_select_backwards(eager, key):
    tensor = torch.tensor(VALUES, requires_grad=True)
    result = tensor[key]
    np.testing.assert_array_equal(result.detach().numpy(), VALUES[key])
    result.sum().backward()
    expected = np.zeros_like(VALUES)
    np.add.at(expected, key, 1.)
    np.testing.assert_array_equal(tensor.grad.numpy(), expected)


def test_other_indexing_errors_are_torch_s(eager):
    with pytest.raises(IndexError):
        torch.ones(3)[5]


def test_uninstall_gives_torch_devices_and_slices_back():
    eager_tensors.install()
    eager_tensors.install()
    eager_tensors.uninstall()
    assert torch.ones(1).device == torch.device('cpu')
    assert not {'device', 'shape', '__getitem__'} & set(torch.Tensor.__dict__)
    with pytest.raises(ValueError, match='step must be greater than zero'):
        torch.ones(3)[::-1]


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')
def test_gpu_tensors_are_named_as_tf_names_them(eager):
    tensor = torch.ones(1, device='cuda')
    assert tensor.device == '/job:localhost/replica:0/task:0/device:GPU:0'
    assert tensor.device.endswith('GPU:0') and tensor.device.type == 'cuda'


def test_set_shape_checks_the_shape_as_tf(eager):
    # TF (time series tutorial): `inputs.set_shape([None, 6, None])` on a (3, 6, 19) tensor
    # keeps it; an incompatible size or rank raises ValueError.
    tensor = torch.ones(3, 6, 19)
    tensor.set_shape([None, 6, None])
    tensor.set_shape(tf.TensorShape(None))
    assert tensor.shape == (3, 6, 19)
    with pytest.raises(ValueError, match=r'\(3, 6, 19\) is not compatible with .* \(None, 5'):
        tensor.set_shape([None, 5, None])
    with pytest.raises(ValueError, match='not compatible'):
        tensor.set_shape([3, 6])
