"""The complete Keras backend namespace: `{"backend": "torchk.core"}` in keras.json.

Also a library of its own: `from torchk import core as K` works on plain torch tensors.
This module holds the object model (tensors, shapes, creators) and re-exports the ops,
which live in modules by domain.
"""
import builtins
import sys

import numpy as np
import torch

from . import config
from . import dtypes
from . import graph
from . import keras_compat
from .passes import allocator
from .config import (cast_to_floatx, epsilon, floatx, image_data_format,
                     image_dim_ordering, normalize_data_format, set_epsilon, set_floatx,
                     set_image_data_format, set_image_dim_ordering)
from .variables import (Variable, batch_get_value, batch_set_value, count_params, get_uid,
                        get_value, is_variable, moving_average_update, name_scope, reset_uids,
                        set_value, update, update_add, update_sub, variable)
from .function import (Session, int_shape_of, clear_session, control_dependencies, eval, function,
                       get_session, gradients, in_test_phase, in_train_phase, is_placeholder,
                       learning_phase, learning_phase_scope, manual_variable_initialization,
                       placeholder, print_tensor, set_learning_phase, set_session,
                       stop_gradient, switch)
from .random_ops import (dropout, random_binomial, random_normal, random_normal_variable,
                         random_uniform, random_uniform_variable, truncated_normal)
from .math_ops import *  # noqa: F401,F403  (each op module lists its ops in __all__)
from .math_ops import less, less_equal
from .array_ops import *  # noqa: F401,F403
from .array_ops import _dimension
from .nn_ops import *  # noqa: F401,F403
from .conv_ops import *  # noqa: F401,F403
from .rnn import foldl, foldr, map_fn, rnn  # noqa: F401
from .ctc import ctc_batch_cost, ctc_decode, ctc_label_dense_to_sparse  # noqa: F401

KerasTensor = graph.KerasTensor
allocator.configure()


def backend():
    """Returns the name of this backend, `'torchk.core'`."""
    return 'torchk.core'


def is_tensor(x):
    """True for backend tensors: placeholders, op results, variables and torch tensors."""
    return isinstance(x, (graph.KerasTensor, torch.Tensor))


def is_keras_tensor(x):
    """True if `x` is a Keras tensor: a backend tensor produced by a Keras layer or `Input`.

    # Raises
        ValueError: if `x` is not a backend tensor at all.
    """
    if not is_tensor(x):
        raise ValueError('Unexpectedly found an instance of type `%s`. Expected a symbolic '
                         'tensor instance.' % type(x))
    return hasattr(x, '_keras_history')


def is_sparse(tensor):
    """True if `tensor` is sparse (a sparse placeholder or a torch sparse tensor)."""
    if isinstance(tensor, graph.KerasTensor):
        return getattr(tensor, '_is_sparse', False)
    return isinstance(tensor, torch.Tensor) and tensor.is_sparse


@graph.op
def _to_dense(tensor):
    return tensor.to_dense() if tensor.is_sparse else tensor


def to_dense(tensor):
    """Converts a sparse tensor to a dense one; dense tensors are returned as they are."""
    return _to_dense(tensor)


def int_shape(x):
    """Returns the static shape of a tensor or variable as a tuple of ints and Nones.

    # Example
    >>> K.int_shape(K.placeholder(shape=(None, 4)))
    (None, 4)
    """
    return int_shape_of(x)


def ndim(x):
    """Returns the number of axes of a tensor, as an int (None if unknown)."""
    shape = int_shape(x)
    return None if shape is None else len(shape)


def dtype(x):
    """Returns the dtype of a tensor or variable as a string, e.g. `'float32'`."""
    if isinstance(x, (graph.KerasTensor, torch.Tensor)):
        return dtypes.name(x.dtype)
    return dtypes.name(np.asarray(x).dtype)


@graph.op
def _shape(x):
    return torch.tensor(tuple(x.shape), dtype=torch.int64)


class ShapeTensor(graph.KerasTensor):
    """`K.shape` of a symbol whose shape is partly static: its entries at the static axes
    are constants (a program computes nothing for them), the others are read when the
    graph runs, one axis at a time."""

    def __init__(self, symbol, of):
        super().__init__(symbol.node, symbol.path, symbol._static_shape, symbol._torch_dtype,
                         symbol._examples, symbol.name)
        self._dimensions = tuple(of._static_shape)
        self._of = of

    def __getitem__(self, key):
        rank = len(self._dimensions)
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool) \
                and -rank <= key < rank:
            size = self._dimensions[key]
            return _dimension(self._of, key % rank) if size is None else _constant_shape(size)
        if isinstance(key, builtins.slice) and not graph.contains_symbol(key):
            sizes = self._dimensions[key]
            if None not in sizes:
                return _constant_shape(sizes)
        return super().__getitem__(key)


def _constant_shape(sizes):
    """Sizes known when the graph is built, as `_shape` gives them."""
    return torch.tensor(sizes, dtype=torch.int64)


def shape(x):
    """Returns the shape of a tensor as a 1-D int64 tensor (symbolic for symbols).

    The static part of a symbol's shape is known when the graph is built: `K.shape(x)` of a
    symbol of static shape, and `K.shape(x)[i]` (or a slice) at its static axes, are
    constant tensors; an unknown axis `K.shape(x)[i]` is the one size read when the graph
    runs.

    # Example
    >>> K.reshape(x, (K.shape(x)[0], -1))
    """
    if isinstance(x, graph.SymbolicOperators):
        static = int_shape(x)
        if static is not None and None not in static:
            return _constant_shape(tuple(static))
        symbol = _shape(x)
        return symbol if static is None else ShapeTensor(symbol, x)
    return _shape(x)


@graph.op
def _size(x):
    return torch.tensor(x.numel(), dtype=torch.int64)


def size(x, name=None):
    """Returns the number of elements of `x` as a scalar int64 tensor."""
    return _size(x)


def constant(value, dtype=None, shape=None, name=None):
    """Creates a constant tensor.

    # Arguments
        value: number, list or numpy array.
        dtype: dtype (default `K.floatx()`).
        shape: optional shape; a scalar `value` fills it, an array is reshaped to it.

    # Raises
        ValueError: if `value` cannot take `shape`.
    """
    torch_dtype = dtypes.to_torch(dtype if dtype is not None else config.floatx())
    if isinstance(value, torch.Tensor):
        tensor = value.detach().to(dtype=torch_dtype, device=config.device())
    else:
        tensor = dtypes.as_tensor(np.asarray(value), dtype=torch_dtype, device=config.device())
    if shape is None:
        return tensor
    shape = tuple(int(d) for d in shape)
    if tensor.ndim == 0 or tensor.numel() == 1:
        return tensor.reshape(()).expand(shape).clone()
    if tensor.numel() != int(np.prod(shape)):
        raise ValueError('constant: a value with %d elements cannot take shape %s.'
                         % (tensor.numel(), shape))
    return tensor.reshape(shape)


def _shape_tuple(shape):
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)


def zeros(shape, dtype=None, name=None):
    """Instantiates an all-zeros variable of `shape` (an int or a tuple)."""
    dtype = dtype if dtype is not None else config.floatx()
    return variable(np.zeros(_shape_tuple(shape), dtype=dtypes.to_numpy(dtype)), dtype, name)


def ones(shape, dtype=None, name=None):
    """Instantiates an all-ones variable of `shape` (an int or a tuple)."""
    dtype = dtype if dtype is not None else config.floatx()
    return variable(np.ones(_shape_tuple(shape), dtype=dtypes.to_numpy(dtype)), dtype, name)


def eye(size, dtype=None, name=None):
    """Instantiates an identity-matrix variable; `size` is n or a pair (n, m)."""
    dtype = dtype if dtype is not None else config.floatx()
    rows, cols = (size, size) if isinstance(size, (int, np.integer)) else size
    return variable(np.eye(int(rows), int(cols), dtype=dtypes.to_numpy(dtype)), dtype, name)


def symbolic(func):
    """Decorator accepted for compatibility with Keras 2.3 (marks graph-building code)."""
    return func


def eager(func):
    """Decorator accepted for compatibility with Keras 2.3 (marks eager code)."""
    return func


# Keras 1 names, from the Keras 1 backend documentation.

def get_variable_shape(x):
    """Keras 1: returns the shape of a variable as a tuple of ints."""
    return int_shape(x)


def lesser(x, y):
    """Keras 1 name of `less`: element-wise truth value of (x < y)."""
    return less(x, y)


def lesser_equal(x, y):
    """Keras 1 name of `less_equal`: element-wise truth value of (x <= y)."""
    return less_equal(x, y)


keras_compat.install()
if 'keras' in sys.modules:
    # Keras is loading this backend: say once where it computes, next to Keras' own
    # "Using torchk.core backend." line.
    sys.stderr.write('torchk: computing on %s, floatx %s.\n' % (config.device(), floatx()))
