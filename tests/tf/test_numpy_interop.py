"""numpy's functions on torch tensors, served as TensorFlow (torchk/tf/numpy_interop.py):
the results numpy gives on the tensors' values."""
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


def test_bfloat16_tensors_compute_in_float32(interop):
    tensor = torch.tensor(VALUES).to(torch.bfloat16)
    np.testing.assert_array_equal(np.mean(tensor), np.mean(tensor.float().numpy()))


def test_uninstall_gives_torch_its_own_behaviour():
    numpy_interop.install()
    numpy_interop.install()
    numpy_interop.uninstall()
    assert '__array_function__' not in torch.Tensor.__dict__
    with pytest.raises(TypeError):
        np.var(torch.tensor(VALUES))
