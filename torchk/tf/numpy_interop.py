"""numpy on torch tensors as on TensorFlow's eager tensors, served as TensorFlow
(`install_import_hook`).

numpy's functions: `np.var(model(x))`, `np.mean(tensor)`, `np.argmax(logits, axis=1)`. TF's
eager tensors have no methods of those names, so numpy computes on their values and returns
arrays. torch tensors have `mean`, `var`, `sum`, ... with torch's arguments, which numpy
calls with its own (`axis`, `dtype`, `out`, `ddof`) and which refuse them. Torch tensors
implement numpy's `__array_function__` protocol: a numpy function given a tensor computes on
its values (detached, on the host) and returns what numpy returns; so do numpy's ufuncs
(`np.add(tensor, 1)`, `np.logical_and(tensor > 0, array)`: arrays, not tensors).

Python operators between a numpy array (or a list) and a tensor, either side:
`numpy_array - tensor`, `tensor < numpy_array`. numpy defers to a torch tensor's reflected
operator, which refuses arrays, and torch promotes a float64 array's dtype. TF converts the
array to the tensor's dtype and returns a tensor: so do the operators here
(`_taking_arrays`).
"""
import functools

import numpy as np
import torch

_ATTRIBUTE = '__array_function__'
_WRAP = '__array_wrap__'
_TORCH_WRAP = [None]
_OPERATORS = ('__add__', '__radd__', '__sub__', '__rsub__', '__mul__', '__rmul__',
              '__truediv__', '__rtruediv__', '__floordiv__', '__rfloordiv__', '__mod__',
              '__rmod__', '__pow__', '__rpow__', '__matmul__', '__rmatmul__', '__and__',
              '__rand__', '__or__', '__ror__', '__xor__', '__rxor__', '__lt__', '__le__',
              '__gt__', '__ge__', '__eq__', '__ne__')
_TORCH_OPERATORS = {}


def _as_arrays(value):
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return (value.float() if value.dtype == torch.bfloat16 else value).numpy()
    if type(value) in (list, tuple):
        return type(value)(_as_arrays(item) for item in value)
    if type(value) is dict:
        return {key: _as_arrays(item) for key, item in value.items()}
    return value


def _array_function(self, function, types, args, kwargs):
    return function(*_as_arrays(args), **_as_arrays(kwargs))


def _array_wrap(self, array, context=None, return_scalar=False):
    """numpy's ufuncs (`np.add`, `np.logical_and`) on tensors return what they return on
    arrays, as on TF's eager tensors (torch's own wrap makes a tensor, bool as uint8)."""
    return array[()] if return_scalar else array


def _taking_arrays(operator):
    """torch's `operator` of a tensor, with a numpy array or a list as the other operand
    converted to the tensor's dtype and device first, as TF converts it."""
    @functools.wraps(operator)
    def tf_operator(self, other):
        if isinstance(other, (np.ndarray, list)):
            other = torch.as_tensor(np.asarray(other), device=self.device).to(self.dtype)
        return operator(self, other)
    return tf_operator


def install():
    """Makes numpy's functions compute on the values of torch tensors given to them, and
    Python operators between arrays and tensors compute as TF's (idempotent)."""
    if torch.Tensor.__dict__.get(_ATTRIBUTE) is not _array_function:
        setattr(torch.Tensor, _ATTRIBUTE, _array_function)
    if torch.Tensor.__dict__.get(_WRAP) is not _array_wrap:
        _TORCH_WRAP[:] = [torch.Tensor.__dict__.get(_WRAP)]
        setattr(torch.Tensor, _WRAP, _array_wrap)
    if not _TORCH_OPERATORS:
        for name in _OPERATORS:
            _TORCH_OPERATORS[name] = torch.Tensor.__dict__.get(name)
            setattr(torch.Tensor, name, _taking_arrays(getattr(torch.Tensor, name)))


def uninstall():
    """Gives torch tensors back torch's own behaviour under numpy's functions and
    operators."""
    if torch.Tensor.__dict__.get(_ATTRIBUTE) is _array_function:
        delattr(torch.Tensor, _ATTRIBUTE)
    if torch.Tensor.__dict__.get(_WRAP) is _array_wrap:
        if _TORCH_WRAP[0] is None:
            delattr(torch.Tensor, _WRAP)
        else:
            setattr(torch.Tensor, _WRAP, _TORCH_WRAP[0])
    for name, operator in _TORCH_OPERATORS.items():
        if operator is None:
            delattr(torch.Tensor, name)
        else:
            setattr(torch.Tensor, name, operator)
    _TORCH_OPERATORS.clear()
