"""torch tensors as TensorFlow's eager tensors where TF code relies on it, served as
TensorFlow (`install_import_hook`): a tensor's `device` is TF's device name, and slices may
step backwards.

`device`: TF code reads `x.device` as a string, `'/job:localhost/replica:0/task:0/device:CPU:0'`
(`x.device.endswith('GPU:0')`). torch's `Tensor.device` is a `torch.device`, which torch's own
Python code (and torchk's) reads everywhere (`x.device.type`, `torch.zeros(...,
device=x.device)`), and which cannot be subclassed. So `Tensor.device` answers by who asks:
code in torch's modules and torchk's (any module named `torch...`) gets the `torch.device`;
any other code (the script, the libraries it calls) gets a `DeviceName`, a `str` holding TF's
name that also has the `type` and `index` of the `torch.device`. Which modules are torch's is
looked up once per calling function's code object. A `DeviceName` cannot be given to torch as
a device (`torch.zeros(3, device=x.device)` in a script raises torch's error on the string):
take `x.device.torch_device` there.

Slices: `x[::-1]`, `x[5:1:-2]` select backwards in TF, where torch refuses a negative step;
such an index is computed as the slices of positive step, then each backward slice selected
along its axis (`_backward_slices`: a copy, as TF's slices are).
"""
import sys

import torch

_TORCH_DEVICE = torch._C.TensorBase.__dict__['device']
_TORCH_GETITEM = torch.Tensor.__getitem__
_TF_TYPES = {'cpu': 'CPU', 'cuda': 'GPU'}
_from_torch = {}


class DeviceName(str):
    """TF's name of the device a tensor is on, e.g.
    `'/job:localhost/replica:0/task:0/device:GPU:0'`.

    # Attributes
        type, index: those of the `torch.device` (`'cuda'`, 0).
        torch_device: the `torch.device`.
    """

    def __new__(cls, device):
        name = '/job:localhost/replica:0/task:0/device:%s:%d' % (
            _TF_TYPES.get(device.type, device.type.upper()), device.index or 0)
        self = str.__new__(cls, name)
        self.type, self.index, self.torch_device = device.type, device.index, device
        return self


def _asked_by_torch(code, globals_):
    known = _from_torch.get(code)
    if known is None:
        known = _from_torch[code] = str(globals_.get('__name__') or '').startswith('torch')
    return known


def _device(tensor):
    device = _TORCH_DEVICE.__get__(tensor)
    caller = sys._getframe(1)
    if _asked_by_torch(caller.f_code, caller.f_globals):
        return device
    return DeviceName(device)


def _backward_slices(tensor, key):
    """`tensor[key]` for a key of ints, slices (some of negative step), `None` and `...`;
    None for any other key."""
    items = key if isinstance(key, tuple) else (key,)
    if not all(item is None or item is Ellipsis or isinstance(item, (int, slice))
               for item in items):
        return None
    consumed = sum(1 for item in items if item is not None and item is not Ellipsis)
    forward, backward = [], []
    axis = result_axis = 0
    for item in items:
        if item is None:
            forward.append(item)
            result_axis += 1
        elif item is Ellipsis:
            forward.append(item)
            axis += tensor.ndim - consumed
            result_axis += tensor.ndim - consumed
        elif isinstance(item, slice):
            if item.step is not None and item.step < 0:
                if axis >= tensor.ndim:
                    return None
                backward.append((result_axis, torch.tensor(
                    range(*item.indices(tensor.shape[axis])), dtype=torch.long,
                    device=tensor.device)))
                item = slice(None)
            forward.append(item)
            axis += 1
            result_axis += 1
        else:
            forward.append(item)
            axis += 1
    result = _TORCH_GETITEM(tensor, tuple(forward))
    for result_axis, index in backward:
        result = result.index_select(result_axis, index)
    return result


def _getitem(tensor, key):
    try:
        return _TORCH_GETITEM(tensor, key)
    except ValueError as error:
        if 'step must be greater than zero' not in str(error):
            raise
        result = _backward_slices(tensor, key)
        if result is None:
            raise
        return result


def install():
    """Makes torch tensors' `device` and slices TF's (idempotent)."""
    if not isinstance(torch.Tensor.__dict__.get('device'), property):
        torch.Tensor.device = property(_device, doc=_TORCH_DEVICE.__doc__)
        torch.Tensor.__getitem__ = _getitem


def uninstall():
    """Gives torch tensors torch's `device` and slices back."""
    if isinstance(torch.Tensor.__dict__.get('device'), property):
        del torch.Tensor.device
        del torch.Tensor.__getitem__
