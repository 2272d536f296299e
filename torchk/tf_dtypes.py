"""TF's dtypes (`tf.float32`, `tf.DType`, `tf.as_dtype`) as names torchk's ops read, and the
dtypes TF gives values (`value_to_tensor`): shared by the op table (`torchk.op_table`) and
`torchk.tf`, which serves them as `tf.dtypes` and `tf.convert_to_tensor`.

A `DType` is a `str` subclass (`tf.float32 == 'float32'`), so every torchk and Keras function
that takes a dtype name takes it as it is; it also compares equal to the matching numpy and
torch dtypes (`tf.float32 == torch.float32`), and carries TF's attributes (`name`,
`as_numpy_dtype`, `is_floating`, `min`, `max`, ...). Its repr is the string's (`'float32'`):
torchk's program generator writes op arguments by their repr.

`tf.string` is the dtype of text, which stays on the host (`torchk.strings.StringTensor`);
it has no torch dtype.

TF's rules for values: Python floats become float32 and Python ints int32; numpy arrays keep
their dtype (a float64 array stays float64). Tensors are made on torchk's device
(`torchk.config`).
"""
import numpy as np
import torch

from . import config
from . import dtypes as torchk_dtypes
from . import strings

_NAMES = ('float16', 'bfloat16', 'float32', 'float64', 'int8', 'int16', 'int32', 'int64',
          'uint8', 'bool', 'complex64', 'complex128', 'uint16', 'uint32', 'uint64')


class DType(str):
    """A TF dtype: its name as a string, with TF's `tf.DType` attributes."""

    @property
    def name(self):
        return str(self)

    @property
    def as_numpy_dtype(self):
        if self.is_string:
            return np.object_
        return np.dtype(str(self)).type if self != 'bfloat16' else np.float32

    @property
    def torch_dtype(self):
        """The matching `torch.dtype`.

        # Raises
            TypeError: for `tf.string` (torch has no string tensors).
        """
        if self.is_string:
            raise TypeError('tf.string has no torch dtype: text stays on the host as string '
                            'tensors (torchk.strings.StringTensor).')
        return torchk_dtypes.to_torch(str(self))

    @property
    def is_string(self):
        return str.__eq__(self, 'string')

    @property
    def is_floating(self):
        return not self.is_string and self.torch_dtype.is_floating_point

    @property
    def is_complex(self):
        return not self.is_string and self.torch_dtype.is_complex

    @property
    def is_integer(self):
        return self not in ('bool', 'string') and not (self.is_floating or self.is_complex)

    @property
    def is_bool(self):
        return self == 'bool'

    @property
    def is_unsigned(self):
        return self in ('uint8', 'uint16', 'uint32', 'uint64', 'bool')

    @property
    def size(self):
        return self.torch_dtype.itemsize

    @property
    def min(self):
        if self.is_bool:
            return False
        info = torch.finfo if self.is_floating else torch.iinfo
        return info(self.torch_dtype).min

    @property
    def max(self):
        if self.is_bool:
            return True
        info = torch.finfo if self.is_floating else torch.iinfo
        return info(self.torch_dtype).max

    @property
    def base_dtype(self):
        return self

    @property
    def real_dtype(self):
        return {'complex64': float32, 'complex128': float64}.get(str(self), self)

    def is_compatible_with(self, other):
        return self == as_dtype(other)

    def __eq__(self, other):
        try:
            return str(self) == str(as_dtype(other))
        except TypeError:
            return False

    def __ne__(self, other):
        return not self == other

    __hash__ = str.__hash__

    def __reduce__(self):
        return (as_dtype, (str(self),))


_DTYPES = {name: DType(name) for name in _NAMES + ('string',)}
float16, bfloat16, float32, float64 = (_DTYPES[n] for n in ('float16', 'bfloat16', 'float32',
                                                              'float64'))
int8, int16, int32, int64, uint8 = (_DTYPES[n] for n in ('int8', 'int16', 'int32', 'int64',
                                                          'uint8'))
bool = _DTYPES['bool']  # noqa: A001  (TF's name)
string = _DTYPES['string']
complex64, complex128 = _DTYPES['complex64'], _DTYPES['complex128']
# torch stores the wider unsigned integers but computes little on them (no promotion, few
# kernels): its ops raise on them.
uint16, uint32, uint64 = _DTYPES['uint16'], _DTYPES['uint32'], _DTYPES['uint64']
half, double = float16, float64


# TensorFlow's `DataType` enum values (types.proto), which `tf.as_dtype` also takes.
_ENUMS = {1: 'float32', 2: 'float64', 3: 'int32', 4: 'uint8', 5: 'int16', 6: 'int8',
          7: 'string', 8: 'complex64', 9: 'int64', 10: 'bool', 14: 'bfloat16',
          17: 'uint16', 18: 'complex128', 19: 'float16', 22: 'uint32', 23: 'uint64'}


def as_dtype(value):
    """The `DType` for a dtype name, a numpy or torch dtype, a Python type, a `DType` or
    TensorFlow's number for it (`DataType` enum).

    `'string'`, `str`, `bytes` and numpy's string and object dtypes are `tf.string`.

    # Raises
        TypeError: for anything naming no dtype torchk supports.
    """
    if isinstance(value, DType):
        return value
    if torchk_dtypes.is_string(value):
        return string
    if value is float:
        return float32
    if value is int:
        return int32
    if type(value) is int and value in _ENUMS:  # TF's DataType numbers: tf.zeros(1, 1)
        return _DTYPES[_ENUMS[value]]
    try:
        return _DTYPES[torchk_dtypes.name(value)]
    except (TypeError, KeyError) as error:
        raise TypeError('Cannot convert %r to a dtype; expected one of %s, string, a numpy or '
                        'torch dtype.' % (value, ', '.join(_NAMES))) from error


def torch_dtype(value):
    """The `torch.dtype` for anything `as_dtype` accepts."""
    if isinstance(value, torch.dtype):
        return value
    return as_dtype(value).torch_dtype


def _python_dtype(array):
    """TF's dtype for an array made from Python numbers: float32, int32, bool."""
    if array.dtype.kind == 'f':
        return float32
    if array.dtype.kind in 'iu':
        return int32
    if array.dtype.kind == 'c':
        return complex64
    return as_dtype(array.dtype)


def refuse_string_dtype(value, dtype):
    """Raises a TypeError if `dtype` is `tf.string`, for `value` that is not text."""
    if dtype is not None and as_dtype(dtype).is_string:
        raise TypeError('Cannot convert %r to a string tensor: it is not text; format '
                        'numbers with tf.strings.as_string.' % (value,))


def is_pandas(value):
    """Whether `value` is a pandas `Series` or `DataFrame` (pandas is not imported)."""
    return type(value).__module__.startswith('pandas') and hasattr(value, 'to_numpy')


def pandas_as_array(value):
    """A pandas `Series` as a column `(n, 1)` and a `DataFrame` as its values, as tf.keras'
    data adapters read them (`fit`, `adapt`); any other value as it is."""
    if is_pandas(value):
        values = np.array(value.to_numpy())  # a copy: pandas' own may be read-only
        return values[:, None] if values.ndim == 1 else values
    return value


def value_to_tensor(value, dtype=None, dtype_hint=None):
    """Converts a value that is not a torch tensor (a numpy array, a Python number, a nested
    list, text, a pandas `Series` or `DataFrame`) to a tensor by TF's dtype rules.

    # Arguments
        value: the value.
        dtype: optional dtype of the result.
        dtype_hint: dtype used when `value` does not fix one (Python numbers and lists).

    # Returns
        A `torch.Tensor` on torchk's device, or a `StringTensor` for text (which stays on the
        host: `torchk/strings.py`).

    # Raises
        TypeError: for values that are neither numbers nor text, or text asked for as
            numbers (use `tf.strings.to_number`).
    """
    if is_pandas(value):
        value = np.array(value.to_numpy())  # a copy: pandas' own may be read-only
    if isinstance(value, strings.StringTensor) or strings.is_text(value):
        if dtype is not None and not as_dtype(dtype).is_string:
            raise TypeError('Cannot convert text to a tensor of dtype %s; parse it with '
                            'tf.strings.to_number.' % (dtype,))
        return value if isinstance(value, strings.StringTensor) else strings.StringTensor(
            value)
    refuse_string_dtype(value, dtype)
    if isinstance(value, (np.ndarray, np.generic)):
        array = value
        default = as_dtype(array.dtype)
    else:
        array = np.asarray(value)
        if array.dtype.kind in 'USO':
            raise TypeError('Cannot convert %r to a tensor: it holds objects that are '
                            'neither numbers nor strings.' % (value,))
        default = as_dtype(dtype_hint) if dtype_hint is not None else _python_dtype(array)
    target = as_dtype(dtype) if dtype is not None else default
    if target == 'uint64' and not isinstance(value, (np.ndarray, np.generic)):
        # Python ints past int64's range make a float64 array, which loses them.
        array = np.asarray(value, dtype=np.uint64)
    return torchk_dtypes.as_tensor(np.asarray(array), dtype=target.torch_dtype,
                                   device=config.device())
