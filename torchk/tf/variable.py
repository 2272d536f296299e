"""`tf.Variable`: a torchk variable whose Python operators compute eagerly.

A torchk `Variable` is a Keras symbol (a `torch.nn.Parameter`): Keras layers and losses use
it in recorded graphs, where `v * 2` records an op. A `tf.Variable` is one too (Keras and
torch optimizers take it as any other variable), but in TF code `v * 2` is a value: its
operators compute at once on the variable's eager alias, unless the other operand is a
Keras symbol (then they record, as a torchk variable's do). As in TF, an operand that is a
list or an array is converted to the variable's dtype (`[[1., 2.]] @ v`, `array @ v`), and a
slice of a variable can be assigned (`v[0:2].assign(...)`, `v[:, 0].assign(...)`).
"""
import functools

import numpy as np
import torch

from .. import graph
from .. import variables
from . import runtime, tracing
from .tensors import convert_to_tensor, eager

_OPERATORS = ('__add__', '__radd__', '__sub__', '__rsub__', '__mul__', '__rmul__',
              '__truediv__', '__rtruediv__', '__floordiv__', '__rfloordiv__', '__mod__',
              '__rmod__', '__pow__', '__rpow__', '__matmul__', '__rmatmul__', '__and__',
              '__rand__', '__or__', '__ror__', '__xor__', '__rxor__', '__neg__', '__pos__',
              '__abs__', '__invert__', '__lt__', '__le__', '__gt__', '__ge__')


def _operand(value, dtype):
    """An operand of a variable's operator: lists and arrays as tensors of its dtype, as TF
    converts them."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return convert_to_tensor(value, dtype)
    return value


def _eager_operator(name):
    symbolic = getattr(graph.SymbolicOperators, name)
    tensor_operator = getattr(torch.Tensor, name)

    def operator(self, *others):
        if (any(isinstance(other, graph.KerasTensor) for other in others)
                or tracing.current() is not None):
            return symbolic(self, *others)
        return tensor_operator(self.as_subclass(torch.Tensor),
                               *(_operand(other, self.dtype) for other in eager(others)))
    operator.__name__ = name
    return operator


class Variable(variables.Variable):
    """A variable (`tf.Variable`): a torchk variable on torchk's device.

    # Arguments
        initial_value: a tensor, array, number, or a callable returning one.
        trainable: whether gradients are computed for it (default: True for float dtypes).
        name: optional name (made unique, TF-style).
        dtype: optional dtype (default: the initial value's, TF's rules).
        constraint: optional projection applied by Keras optimizers after updates.
        **kwargs: TF's other arguments (`validate_shape`, `caching_device`, `shape`,
            `synchronization`, `aggregation`), accepted and unused.
    """

    def __new__(cls, initial_value=None, trainable=None, name=None, dtype=None,
                constraint=None, **kwargs):
        if initial_value is None:
            raise ValueError('tf.Variable needs an initial_value.')
        if callable(initial_value):
            initial_value = initial_value()
        data = convert_to_tensor(initial_value, dtype).detach().clone()
        differentiable = data.is_floating_point() or data.is_complex()
        return super().__new__(cls, data, differentiable and trainable is not False)

    def __init__(self, initial_value=None, trainable=None, name=None, dtype=None,
                 constraint=None, **kwargs):
        super().__init__(self.data, self.requires_grad, name=name or 'Variable',
                         constraint=constraint)

    def get_shape(self):
        """The variable's shape as a `tf.TensorShape`."""
        return runtime.TensorShape(tuple(self.shape))

    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Writes `value` into the variable; returns the variable. (In a recorded step,
        `tracing`, the write is one of the step's updates.)"""
        recording = tracing.current()
        if recording is not None:
            recording.write([variables.update(self, _symbol_or_tensor(value))])
            return self
        with torch.no_grad():
            self.copy_(convert_to_tensor(value))
        return self

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        """Adds `delta` to the variable; returns the variable."""
        recording = tracing.current()
        if recording is not None:
            recording.write([variables.update(self, self + _symbol_or_tensor(delta))])
            return self
        with torch.no_grad():
            self.add_(convert_to_tensor(delta))
        return self

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        """Subtracts `delta` from the variable; returns the variable."""
        recording = tracing.current()
        if recording is not None:
            recording.write([variables.update(self, self - _symbol_or_tensor(delta))])
            return self
        with torch.no_grad():
            self.sub_(convert_to_tensor(delta))
        return self

    def __getitem__(self, key):
        """`self[key]`: a tensor (a symbol where `key` holds one) which, as TF's slices of
        variables, has `assign(value)` writing `value` into that part of the variable."""
        if any(isinstance(k, graph.KerasTensor)
               for k in (key if isinstance(key, tuple) else (key,))):
            return graph.SymbolicOperators.__getitem__(self, key)
        result = self.as_subclass(torch.Tensor)[eager(key)]
        result.assign = functools.partial(self._assign_part, key)
        return result

    def _assign_part(self, key, value, use_locking=None, name=None, read_value=True):
        with torch.no_grad():
            self.as_subclass(torch.Tensor)[eager(key)] = convert_to_tensor(value, self.dtype)
        return self

    def read_value(self):
        """The variable's value, as a tensor through which gradients reach the variable (in
        a recorded step, the value it holds at that point of the step)."""
        recording = tracing.current()
        if recording is not None:
            return recording.read(self)
        return self.as_subclass(torch.Tensor)

    value = read_value

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.detach().cpu().numpy(), dtype=dtype)

    def __bool__(self):
        return bool(self.detach())

    def __len__(self):
        return len(self.detach())

    def __iter__(self):
        return iter(self.as_subclass(torch.Tensor))

    def __eq__(self, other):
        """Element-wise with a number, an array or a tensor, as TF's variables compare
        (`if x == x_old:` in TF's optimizers guide); identity with anything else (Keras finds
        variables in lists and dicts by identity)."""
        if _is_value(other):
            return self.as_subclass(torch.Tensor) == _operand(eager(other), self.dtype)
        return self is other

    def __ne__(self, other):
        if _is_value(other):
            return self.as_subclass(torch.Tensor) != _operand(eager(other), self.dtype)
        return self is not other

    __hash__ = variables.Variable.__hash__

    def __repr__(self):
        return '<tf.Variable %r shape=%s dtype=%s, numpy=%s>' % (
            self.name, tuple(self.shape), str(self.dtype).replace('torch.', ''),
            np.array2string(self.detach().cpu().numpy(), separator=', '))


def _is_value(value):
    """Whether `value` is a number, an array, a list of numbers or an eager tensor (not a
    variable, not a symbol), outside a recorded step."""
    return tracing.current() is None and graph.is_operand_value(value)


def _symbol_or_tensor(value):
    return value if graph.is_symbol(value) else convert_to_tensor(value)


for _name in _OPERATORS:
    setattr(Variable, _name, _eager_operator(_name))
del _name
