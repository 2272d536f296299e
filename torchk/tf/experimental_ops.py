"""`tf.experimental.numpy` (the part tf.keras scripts use: the op table's ops under their
numpy names, `op_table.ALIASES`, so that it records on Keras symbols too) and `tf.compiler.tf2xla.python.xla.dynamic_update_slice`,
which scripts import from TF's internals."""
import numpy as np
import torch

from .. import config
from .. import tf_dtypes
from ..op_table import NUMPY_SETTINGS as _settings
from .namespaces import Namespace, ops_under
from .tensors import convert_to_tensor


def experimental_enable_numpy_behavior(prefer_float32=False, dtype_conversion_mode='legacy'):
    """TF's switch to numpy-style tensor methods: tensors get `astype(dtype)` (torch's have
    `reshape`, `T`, `ndim` already). `prefer_float32` makes `tf.experimental.numpy`'s
    creation functions give float32 where numpy gives float64.

    Binary operators keep torch's type promotion (`int32 + float32` is float32, where
    numpy's rules, which TF then follows, give float64)."""
    _settings['prefer_float32'] = bool(prefer_float32)
    if 'astype' not in torch.Tensor.__dict__:
        torch.Tensor.astype = _astype


def _astype(tensor, dtype):
    """`tensor` cast to `dtype` (a numpy, TF or torch dtype)."""
    return tensor.to(tf_dtypes.torch_dtype(tf_dtypes.as_dtype(dtype)))


def _numpy_dtype(array):
    """The dtype `tf.experimental.numpy` gives `array` (numpy's, float32 for float64 with
    `prefer_float32`)."""
    if array.dtype == np.float64 and _settings['prefer_float32']:
        return np.dtype('float32')
    return array.dtype


def asarray(a, dtype=None):
    """`a` as a tensor by numpy's dtype rules (`tf.experimental.numpy.asarray`): Python ints
    are int64, floats float64 (float32 with `prefer_float32`); a tensor keeps its dtype."""
    if isinstance(a, torch.Tensor) or dtype is not None:
        return convert_to_tensor(a, dtype=dtype)
    array = np.asarray(a)
    if array.dtype.kind in 'biufc':
        return convert_to_tensor(array.astype(_numpy_dtype(array), copy=False))
    return convert_to_tensor(a)


def _creation(dtype):
    dtype = tf_dtypes.as_dtype(dtype) if dtype is not None else tf_dtypes.as_dtype(
        'float32' if _settings['prefer_float32'] else 'float64')
    return {'dtype': tf_dtypes.torch_dtype(dtype), 'device': config.device()}


def _shape(shape):
    return tuple(int(d) for d in np.atleast_1d(np.asarray(shape, dtype=np.int64)))


def ones(shape, dtype=None):
    """A tensor of ones (`tf.experimental.numpy.ones`; float64 by default, as numpy)."""
    return torch.ones(_shape(shape), **_creation(dtype))


def zeros(shape, dtype=None):
    """A tensor of zeros (`tf.experimental.numpy.zeros`; float64 by default, as numpy)."""
    return torch.zeros(_shape(shape), **_creation(dtype))


def arange(start, stop=None, step=1, dtype=None):
    """Numbers from `start` to `stop` (excluded) by `step`, as `numpy.arange`: int64 for
    ints, float64 if a bound is a float, unless `dtype` is given."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        dtype = _numpy_dtype(np.arange(start, stop, step)[:0])
    return torch.arange(start, stop, step, **_creation(dtype))


def randn(*shape):
    """Standard normal numbers of `shape` (`tf.experimental.numpy.random.randn`), float64
    (float32 with `prefer_float32`), from torch's generator (`tf.random.set_seed`)."""
    return torch.randn(shape, **_creation(None))


def dynamic_update_slice(operand, update, start_indices):
    """`operand` with `update` written at `start_indices` (one per axis; each clamped so that
    the update fits, as XLA does)."""
    operand = convert_to_tensor(operand)
    update = convert_to_tensor(update).to(operand.dtype)
    if len(start_indices) != operand.dim() or update.dim() != operand.dim():
        raise ValueError('dynamic_update_slice: operand of rank %d, update of rank %d and %d '
                         'start indices differ.' % (operand.dim(), update.dim(),
                                                    len(start_indices)))
    result = operand.clone()
    region = []
    for index, size, extent in zip(start_indices, update.shape, operand.shape):
        start = min(max(int(index), 0), int(extent) - int(size))
        region.append(slice(start, start + int(size)))
    result[tuple(region)] = update
    return result


numpy = Namespace('tf.experimental.numpy', dict(
    ops_under('experimental.numpy'), asarray=asarray, array=asarray,
    experimental_enable_numpy_behavior=experimental_enable_numpy_behavior,
    float32=torch.float32, float64=torch.float64, int32=torch.int32, int64=torch.int64,
    ones=ones, zeros=zeros, arange=arange, ndarray=torch.Tensor, newaxis=None,
    random=Namespace('tf.experimental.numpy.random', {'randn': randn})))
experimental = Namespace('tf.experimental', {'numpy': numpy})
compiler = Namespace('tf.compiler', {'tf2xla': Namespace('tf.compiler.tf2xla', {
    'python': Namespace('tf.compiler.tf2xla.python', {
        'xla': Namespace('tf.compiler.tf2xla.python.xla',
                         {'dynamic_update_slice': dynamic_update_slice})})})})
