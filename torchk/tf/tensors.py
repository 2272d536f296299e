"""Values to torch tensors with TF's dtype rules (`torchk.tf_dtypes`), and torchk variables as
eager tensors.

A torchk `Variable` is a Keras symbol: Keras ops on it record a graph. TF code computes with
variables eagerly, so `eager` replaces each variable by `variable.as_subclass(torch.Tensor)`,
an alias through which gradients reach the variable.
"""
import warnings

import torch

from .. import graph
from .. import tf_dtypes
from .. import variables
from . import tracing


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """Converts a tensor, variable, numpy array, Python number or nested list to a tensor.

    # Arguments
        value: the value.
        dtype: optional dtype of the result (a value of another dtype is cast).
        dtype_hint: dtype used when `value` does not fix one (Python numbers and lists).
        name: ignored (TF's op name).

    # Returns
        A `torch.Tensor` (a variable gives its eager alias), or a `StringTensor` for text
        (which stays on the host: `torchk/strings.py`).

    # Raises
        TypeError: for values that are neither numbers nor text, or text asked for as
            numbers (use `tf.strings.to_number`).
    """
    if not isinstance(value, torch.Tensor):
        return tf_dtypes.value_to_tensor(value, dtype, dtype_hint)
    tf_dtypes.refuse_string_dtype(value, dtype)
    tensor = eager(value)
    if dtype is not None and tensor.dtype != tf_dtypes.torch_dtype(dtype):
        tensor = tensor.to(tf_dtypes.torch_dtype(dtype))
    return tensor


def eager(value):
    """`value` with every torchk variable in it (nested lists, tuples, dicts) replaced by its
    eager alias, unless `value` also holds Keras symbols that are not variables, or a step is
    being recorded (`tracing`): then ops on it must record a graph, variables included."""
    if not _holds(value, variables.Variable):
        return value
    if _holds(value, graph.KerasTensor) or tracing.current() is not None:
        return value
    return _replace_variables(value)


def _holds(value, kind):
    if isinstance(value, kind):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds(item, kind) for item in value)
    if isinstance(value, dict):
        return any(_holds(item, kind) for item in value.values())
    return False


def _replace_variables(value):
    if isinstance(value, variables.Variable):
        return value.as_subclass(torch.Tensor)
    if isinstance(value, list):
        return [_replace_variables(item) for item in value]
    if isinstance(value, tuple):
        return type(value)(*map(_replace_variables, value)) if hasattr(value, '_fields') \
            else tuple(_replace_variables(item) for item in value)
    if isinstance(value, dict):
        return {key: _replace_variables(item) for key, item in value.items()}
    return value



_TORCH_NUMPY = torch.Tensor.numpy


def _numpy(self, *, force=False):
    """`Tensor.numpy()` that also works, as TF's does, for tensors that require gradients,
    live on a GPU, or hold bfloat16 (returned as float32); a variable's is a copy, as TF's
    is (an assignment or an optimizer step later does not change it)."""
    if self.dtype == torch.bfloat16:
        return _TORCH_NUMPY(self.detach().float(), force=True)
    if isinstance(self, variables.Variable):
        return _TORCH_NUMPY(self, force=True).copy()
    if force or self.requires_grad or self.device.type != 'cpu':
        return _TORCH_NUMPY(self, force=True)
    return _TORCH_NUMPY(self)


def _symbol_numpy(self):
    """`.numpy()` of a Keras symbol: its value now (`K.eval`), as TF gives the value of an
    expression of variables (`layer.kernel[:, 0].numpy()`); a symbol that depends on a
    placeholder raises `K.eval`'s error naming it."""
    from .. import core as K
    return K.eval(self)


def install_numpy():
    """Makes `torch.Tensor.numpy` TF's (`_numpy`): `.numpy()` of any tensor gives its value,
    and `float(loss)` of a tensor that requires gradients gives it without torch's warning;
    Keras symbols get `.numpy()` too (`_symbol_numpy`).

    Process-wide, since torchk.tf's results are plain torch tensors; it changes only the
    calls torch would refuse (a CPU tensor without gradients still shares its memory).
    """
    torch.Tensor.numpy = _numpy
    graph.KerasTensor.numpy = _symbol_numpy
    warnings.filterwarnings('ignore', message='Converting a tensor with requires_grad=True '
                            'to a scalar', category=UserWarning)
