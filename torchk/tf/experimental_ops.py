"""`tf.experimental.numpy` (the part tf.keras scripts use: the op table's ops under their
numpy names, `op_table.ALIASES`, so that it records on Keras symbols too) and `tf.compiler.tf2xla.python.xla.dynamic_update_slice`,
which scripts import from TF's internals."""
import torch

from .namespaces import Namespace, ops_under
from .tensors import convert_to_tensor

def experimental_enable_numpy_behavior(prefer_float32=False, dtype_conversion_mode='legacy'):
    """TF's switch to numpy's type promotion and numpy-style tensor methods (`x.reshape`,
    `x.T`). torch tensors have both already: nothing changes."""


def asarray(a, dtype=None):
    """`a` as a tensor (`tf.experimental.numpy.asarray`)."""
    return convert_to_tensor(a, dtype=dtype)


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
    float32=torch.float32, float64=torch.float64, int32=torch.int32, int64=torch.int64))
experimental = Namespace('tf.experimental', {'numpy': numpy})
compiler = Namespace('tf.compiler', {'tf2xla': Namespace('tf.compiler.tf2xla', {
    'python': Namespace('tf.compiler.tf2xla.python', {
        'xla': Namespace('tf.compiler.tf2xla.python.xla',
                         {'dynamic_update_slice': dynamic_update_slice})})})})
