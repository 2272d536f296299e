"""Keras variables: `torch.nn.Parameter`s with Keras' name, constraint and lazy operators."""
import contextlib
import numbers
import re

import numpy as np
import torch

from . import config
from . import dtypes
from . import graph

_NAME_SCOPES = []
_UIDS = {}
_VARIABLE_NAMES = {}
# Functions called with every new variable (tf.distribute gives it the first replica's value).
creation_observers = []


def get_uid(prefix=''):
    """Returns a counter for `prefix`, starting at 1 (`dense_1`, `dense_2`, ...).

    # Arguments
        prefix: string.

    # Returns
        int, the next uid for that prefix.
    """
    _UIDS[prefix] = _UIDS.get(prefix, 0) + 1
    return _UIDS[prefix]


def reset_uids():
    """Resets the counters behind `get_uid` and variable names."""
    _UIDS.clear()
    _VARIABLE_NAMES.clear()


@contextlib.contextmanager
def name_scope(name):
    """Context manager that prefixes the names of variables created inside it.

    # Arguments
        name: the scope's name (None adds no prefix); a name ending in `/` is a whole scope
            (`'outer/inner/'`, as TF's `name_scope(...).name` gives it): it replaces the
            enclosing scopes instead of nesting in them.

    # Yields
        The full scope name, e.g. `'training/Adam/'`, which may be passed as `name=`.
    """
    _NAME_SCOPES.append(None if name is None else str(name))
    try:
        yield _scope_prefix()
    finally:
        _NAME_SCOPES.pop()


def _scope_prefix():
    prefix = ''
    for scope in _NAME_SCOPES:
        if scope:
            prefix = scope if scope.endswith('/') else prefix + scope + '/'
    return prefix


def current_scope():
    """The innermost `name_scope` (Keras opens one per layer call), or None outside any."""
    named = [s for s in _NAME_SCOPES if s]
    return named[-1].rstrip('/').rpartition('/')[2] if named else None


def _unique_variable_name(name):
    """TF-style unique name: `scope/name:0`, with `_1`, `_2`... on repeats."""
    base = _scope_prefix() + re.sub(r':\d+$', '', name or 'Variable')
    count = _VARIABLE_NAMES.get(base, 0)
    _VARIABLE_NAMES[base] = count + 1
    return (base if count == 0 else '%s_%d' % (base, count)) + ':0'


class Variable(graph.SymbolicOperators, torch.nn.Parameter):
    """A Keras variable: a `torch.nn.Parameter` that Keras and torch can both use.

    Python operators (`1. - v`, `v * m`, `v[:, :3]`, `v *= 2`) are Keras ops: lazy, never in
    place. torch functions and methods (`torch.matmul(x, v)`, `v.add_`, torch optimizers)
    are torch's: eager, on the real parameter. Integer variables do not require gradients.

    # Attributes
        name: unique TF-style name, e.g. `'dense_1/kernel:0'`.
        constraint: callable applied by Keras optimizers after each update, or None.
        trainable: whether Keras' automatic attribute tracking treats it as trainable.
    """
    _uses_learning_phase = False

    def __new__(cls, data, requires_grad=True, name=None, constraint=None):
        return super().__new__(cls, data, requires_grad)

    def __init__(self, data, requires_grad=True, name=None, constraint=None):
        self._keras_name = _unique_variable_name(name)
        self.constraint = constraint
        self.trainable = requires_grad
        self._keras_shape = tuple(data.shape)
        for observe in creation_observers:
            observe(self)

    @property
    def name(self):
        return self._keras_name

    @property
    def is_placeholder(self):
        return False

    def __repr__(self):
        return "<Variable '%s' shape=%s dtype=%s device=%s>" % (
            self.name, tuple(self.shape), dtypes.name(self.dtype), self.device)

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = _rebuild_variable(self.detach().clone(), self.requires_grad,
                                               self.name, self.constraint)
        return memo[id(self)]

    def __reduce_ex__(self, protocol):
        return (_rebuild_variable,
                (self.detach().cpu(), self.requires_grad, self.name, self.constraint))


def _rebuild_variable(data, requires_grad, name, constraint):
    """Recreates a variable keeping its name (for deepcopy and pickle)."""
    variable = Variable(data.to(config.device()), requires_grad, constraint=constraint)
    variable._keras_name = name
    return variable


def to_tensor(value, dtype=None):
    """Converts a variable's initial value (numpy, scalar, tensor, symbol) to a torch tensor."""
    if graph.is_symbol(value) and not isinstance(value, Variable):
        with graph.drawing_initial_values():
            value = graph.evaluate(value)
    if hasattr(value, 'tocoo'):
        value = value.toarray()
    if isinstance(value, torch.Tensor):
        value = value.detach()
    elif isinstance(value, (list, tuple)):
        value = np.asarray(value)
    torch_dtype = dtypes.to_torch(dtype) if dtype is not None else None
    if torch_dtype is None and not isinstance(value, torch.Tensor):
        if isinstance(value, np.ndarray):
            torch_dtype = (dtypes.to_torch(config.floatx()) if value.dtype.kind == 'f'
                           else dtypes.to_torch(value.dtype))
        else:
            torch_dtype = dtypes.to_torch(config.floatx())
    return dtypes.as_tensor(value, dtype=torch_dtype, device=config.device())


def variable(value, dtype=None, name=None, constraint=None):
    """Instantiates a variable and returns it.

    # Arguments
        value: numpy array, Python number, tensor or symbolic initial value.
        dtype: dtype (default: `K.floatx()`).
        name: optional name; made unique TF-style (`scope/name:0`).
        constraint: optional projection function applied after optimizer updates.

    # Returns
        A `Variable` (a `torch.nn.Parameter`) on `config.device()`.

    # Example
    >>> v = K.variable(np.array([[1, 2], [3, 4]]), name='example_var')
    >>> K.eval(v)
    array([[1., 2.], [3., 4.]], dtype=float32)
    """
    if hasattr(value, 'tocoo'):
        return sparse_tensor(value, dtype)
    data = to_tensor(value, dtype if dtype is not None else config.floatx())
    requires_grad = data.is_floating_point() or data.is_complex()
    return Variable(data.clone(), requires_grad, name=name, constraint=constraint)


def lay_out(variable, order):
    """Keeps a variable's values in memory in `order` (its axes, the outermost first),
    unchanged in shape and value: the memory of the torch tensor an op reads it as, so that
    the op, its gradient and the optimizer's update of the variable need no copy (a Keras
    convolution kernel `(*spatial, in, out)` as the torch weight `(out, in, *spatial)`).

    Only a variable's first layout moves its memory: ops lay out their variables when the
    graph is built (`graph.op`'s `on_record`), before a program or a frozen copy holds it.
    Values read back (`get_value`, `get_weights`, saving) are in the variable's own order.

    # Arguments
        variable: a `Variable`.
        order: a permutation of its axes.
    """
    if getattr(variable, '_laid_out', False):
        return
    variable._laid_out = True
    strides, step = [0] * variable.ndim, 1
    for axis in reversed(order):
        strides[axis] = step
        step *= variable.shape[axis]
    if any(size > 1 and stride != actual for size, stride, actual
           in zip(variable.shape, strides, variable.stride())):
        with torch.no_grad():
            variable.data = torch.empty_strided(variable.shape, strides, dtype=variable.dtype,
                                                device=variable.device).copy_(variable)


def memory_order(tensor):
    """The axes of a tensor whose memory is dense, from the outermost to the innermost."""
    return sorted(range(tensor.ndim), key=lambda axis: (-tensor.stride(axis), axis))


def sparse_tensor(value, dtype=None, device=None):
    """A `scipy.sparse` matrix as a torch sparse COO tensor of `dtype` (default floatx) on
    `device` (default `config.device()`).

    As in Keras' TF backend, `K.variable` of a sparse matrix is a sparse constant (a
    `tf.SparseTensor` there): `K.is_sparse` is True, sparse ops keep it sparse.
    """
    coo = value.tocoo()
    indices = torch.as_tensor(np.vstack([coo.row, coo.col]), dtype=torch.int64)
    # scipy keeps indices in range, which is what torch's invariant checks would verify.
    return torch.sparse_coo_tensor(
        indices, dtypes.as_tensor(coo.data), coo.shape,
        dtype=dtypes.to_torch(dtype if dtype is not None else config.floatx()),
        device=device if device is not None else config.device(), check_invariants=False)


def is_variable(x):
    """True if `x` is a Keras variable (cheap; never raises)."""
    return isinstance(x, Variable)


def get_value(x):
    """Returns the value of a variable (or any tensor) as a numpy array."""
    if isinstance(x, torch.Tensor):
        return to_numpy(x)
    return to_numpy(graph.evaluate(x))


def batch_get_value(ops):
    """Returns the values of several tensors as a list of numpy arrays."""
    return [get_value(x) for x in ops]


def set_value(x, value):
    """Sets a variable's value in place, so every holder of the parameter sees it.

    # Arguments
        x: variable.
        value: numpy array or Python number, cast to the variable's dtype; a scalar
            fills the variable.

    # Raises
        ValueError: if `value`'s shape is neither the variable's nor a scalar.
    """
    if not isinstance(x, Variable):
        raise TypeError('set_value expects a Keras variable, got %r.' % (x,))
    new = dtypes.as_tensor(np.asarray(value) if not isinstance(value, torch.Tensor) else value,
                          dtype=x.dtype, device=x.device)
    if new.ndim != 0 and tuple(new.shape) != tuple(x.shape):
        raise ValueError('Cannot set the value of %s (shape %s) to an array of shape %s.'
                         % (x.name, tuple(x.shape), tuple(new.shape)))
    with torch.no_grad():
        x.copy_(new)


def batch_set_value(tuples):
    """Sets the values of many variables: a list of `(variable, value)` pairs."""
    for x, value in tuples:
        set_value(x, value)


def to_numpy(x):
    """A tensor's value as a new numpy array (0-d for scalars), never sharing memory with `x`.

    On the CPU `Tensor.numpy()` shares memory, so a variable's value read before a training
    step would change with it.
    """
    x = x.detach()
    if x.is_sparse:
        x = x.to_dense()
    if x.dtype == torch.bfloat16:
        x = x.float()
    if x.device.type == 'cpu':
        return x.numpy().copy()
    return np.ascontiguousarray(x.cpu().numpy())  # a variable laid out in its op's order


def host_scalar(x):
    """The value of a one-element tensor as a Python number, read from the device only when
    it may have changed.

    A variable's value is remembered with its memory address and version counter (which
    every in-place write moves): reading Adam's `beta_1` each step costs no device read.

    # Arguments
        x: a Python number, or a tensor or variable of one element.

    # Returns
        A float, int or bool.
    """
    if not isinstance(x, torch.Tensor):
        return x
    for reads in _HOST_READ_RECORDS:
        reads.append(x)
    key = (x.data_ptr(), x._version)
    cached = getattr(x, '_torchk_host_scalar', None)
    if cached is not None and cached[0] == key:
        return cached[1]
    value = x.detach().item()
    if isinstance(x, Variable):
        x._torchk_host_scalar = (key, value)
    return value


_HOST_READ_RECORDS = []


@contextlib.contextmanager
def recording_host_reads():
    """Collects, into the list it yields, the tensors `host_scalar` reads in the block."""
    reads = []
    _HOST_READ_RECORDS.append(reads)
    try:
        yield reads
    finally:
        _HOST_READ_RECORDS.remove(reads)


def remember_host_scalar(variable, value):
    """Makes `host_scalar(variable)` return `value` (a Python number `variable` now holds,
    just written by the caller) until the variable changes again."""
    variable._torchk_host_scalar = ((variable.data_ptr(), variable._version), value)


def count_params(x):
    """Returns the number of scalars in a variable or tensor, as an int."""
    shape = x.shape
    if any(d is None for d in shape):
        raise ValueError('count_params needs a static shape; %r has shape %s.' % (x, shape))
    return int(np.prod(shape, dtype=np.int64))


def update(x, new_x):
    """Returns the update `x <- new_x`, applied when a `K.function` holding it runs."""
    _check_update_target(x, 'update')
    if not isinstance(new_x, torch.Tensor) and not graph.is_symbol(new_x):
        new_x = to_tensor(new_x, x.dtype)  # numpy arrays, lists, numbers, as tf.assign takes
    return (x, new_x)


def update_add(x, increment):
    """Returns the update `x <- x + increment`."""
    _check_update_target(x, 'update_add')
    with graph.reading_variables_as(None):  # an update computes at the variable's precision
        return (x, x + increment)


def update_sub(x, decrement):
    """Returns the update `x <- x - decrement`."""
    _check_update_target(x, 'update_sub')
    with graph.reading_variables_as(None):
        return (x, x - decrement)


def moving_average_update(x, value, momentum):
    """Returns the update `x <- x * momentum + value * (1 - momentum)` (a plain EMA).

    A number `momentum` gives `1 - momentum` rounded to float32, as Keras 2.3.1's TF
    backend makes it a float32 constant (a float64 `x` sees the rounding).
    """
    _check_update_target(x, 'moving_average_update')
    decay = float(np.float32(1. - momentum)) if isinstance(momentum, numbers.Number) \
        else 1. - momentum
    with graph.reading_variables_as(None):
        return (x, x - (x - value) * decay)


def _check_update_target(x, function_name):
    if not isinstance(x, Variable):
        raise TypeError('%s needs a Keras variable to update, got %r.' % (function_name, x))
