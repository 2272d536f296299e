"""numpy's functions on torch tensors as on TensorFlow's eager tensors.

`np.var(model(x))`, `np.mean(tensor)`, `np.argmax(logits, axis=1)`: TF's eager tensors have
no methods of those names, so numpy computes on their values and returns arrays. torch
tensors have `mean`, `var`, `sum`, ... with torch's arguments, which numpy calls with its own
(`axis`, `dtype`, `out`, `ddof`) and which refuse them. Served as TensorFlow
(`install_import_hook`), torch tensors implement numpy's `__array_function__` protocol:
a numpy function given a tensor computes on its values (detached, on the host) and returns
what numpy returns.
"""
import torch

_ATTRIBUTE = '__array_function__'


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


def install():
    """Makes numpy's functions compute on the values of torch tensors given to them
    (idempotent)."""
    if torch.Tensor.__dict__.get(_ATTRIBUTE) is not _array_function:
        setattr(torch.Tensor, _ATTRIBUTE, _array_function)


def uninstall():
    """Gives torch tensors back torch's own behaviour under numpy's functions."""
    if torch.Tensor.__dict__.get(_ATTRIBUTE) is _array_function:
        delattr(torch.Tensor, _ATTRIBUTE)
