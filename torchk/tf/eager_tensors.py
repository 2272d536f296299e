"""torch tensors as TensorFlow's eager tensors where TF code relies on it, served as
TensorFlow (`install_import_hook`): a tensor's `device` is TF's device name, its `shape` a
`tf.TensorShape`, and slices may step backwards.

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

`shape`: TF code reads `x.shape.as_list()`, `x.shape.rank`, `x.shape.num_elements()`; torch's
`torch.Size` has none of them and cannot be subclassed. The same rule gives code outside
torch and torchk a `Shape`: a `tf.TensorShape` that is also a tuple of the sizes, so that
torch and numpy take it where they take a size (`tf.zeros(x.shape)`, `np.ones(x.shape)`).

`dtype`: TF code reads `x.dtype.name`, `x.dtype.is_floating`, `x.dtype.as_numpy_dtype`;
`torch.dtype` has none of them and takes no attributes. The same rule gives code outside torch
and torchk a `tf.DType` (which equals the `torch.dtype`, and which numpy takes as a dtype).

Slices: `x[::-1]`, `x[5:1:-2]` select backwards in TF, where torch refuses a negative step;
such an index is computed as Keras symbols compute it (`graph.getitem`: each backward slice
a slice of the flipped axis).
"""
import sys

import torch

from .. import graph
from ..tf_dtypes import as_dtype
from .runtime import TensorShape

_TORCH_DEVICE = torch._C.TensorBase.__dict__['device']
_TORCH_SHAPE = torch._C.TensorBase.__dict__['shape']
_TORCH_DTYPE = torch._C.TensorBase.__dict__['dtype']
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


class Shape(TensorShape, tuple):
    """A tensor's shape as TF gives it: a `tf.TensorShape` (`as_list()`, `rank`,
    `num_elements()`, `TensorShape([2, 3])` as its repr, `(2, 3)` as its str) that is also
    the tuple of its sizes."""

    def __new__(cls, sizes):
        return tuple.__new__(cls, sizes)

    def __init__(self, sizes):
        TensorShape.__init__(self, sizes)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return Shape(tuple.__getitem__(self, key))
        return tuple.__getitem__(self, key)

    def __str__(self):
        return tuple.__repr__(self)


def _asked_by_torch(code, globals_):
    known = _from_torch.get(code)
    if known is None:
        known = _from_torch[code] = str(globals_.get('__name__') or '').startswith('torch')
    return known


def _served(torch_property, tf_type):
    """The getter of a torch.Tensor property as scripts under the launcher read it: torch's
    value for torch's and torchk's own code (`_asked_by_torch`), `tf_type` of it otherwise."""
    def get(tensor):
        value = torch_property.__get__(tensor)
        caller = sys._getframe(1)
        if _asked_by_torch(caller.f_code, caller.f_globals):
            return value
        return tf_type(value)
    return get


def _getitem(tensor, key):
    try:
        return _TORCH_GETITEM(tensor, key)
    except ValueError as error:
        if 'step must be greater than zero' not in str(error):
            raise
    return graph.getitem(tensor, key)


def _set_shape(tensor, shape):
    """TF's `Tensor.set_shape` on an eager tensor: checks that `shape` (sizes and None)
    is compatible with the tensor's shape, which it leaves as it is.

    # Raises
        ValueError: if a rank or a known size differs.
    """
    shape = TensorShape(shape)
    sizes = tuple(_TORCH_SHAPE.__get__(tensor))
    if shape.dims is not None and (len(shape.dims) != len(sizes) or any(
            dim is not None and dim != size for dim, size in zip(shape.dims, sizes))):
        raise ValueError('Tensor\'s shape %s is not compatible with supplied shape %s.'
                         % (sizes, tuple(shape.dims)))


def install():
    """Makes torch tensors' `device`, `shape`, `dtype` and slices TF's, and gives them TF's
    `set_shape` (idempotent)."""
    if not isinstance(torch.Tensor.__dict__.get('device'), property):
        torch.Tensor.device = property(_served(_TORCH_DEVICE, DeviceName),
                                       doc=_TORCH_DEVICE.__doc__)
        torch.Tensor.shape = property(_served(_TORCH_SHAPE, Shape), doc=_TORCH_SHAPE.__doc__)
        torch.Tensor.dtype = property(_served(_TORCH_DTYPE, as_dtype), doc=_TORCH_DTYPE.__doc__)
        torch.Tensor.__getitem__ = _getitem
        torch.Tensor.set_shape = _set_shape


def uninstall():
    """Gives torch tensors torch's `device`, `shape`, `dtype` and slices back."""
    if isinstance(torch.Tensor.__dict__.get('device'), property):
        del torch.Tensor.device
        del torch.Tensor.shape
        del torch.Tensor.dtype
        del torch.Tensor.__getitem__
        del torch.Tensor.set_shape
