"""Dtype names: Keras speaks strings ('float32'), torch speaks `torch.dtype`."""
import numpy as np
import torch

_BY_NAME = {
    'float16': torch.float16, 'half': torch.float16,
    'bfloat16': torch.bfloat16,
    'float32': torch.float32, 'float': torch.float32,
    'float64': torch.float64, 'double': torch.float64,
    'int8': torch.int8, 'int16': torch.int16, 'int32': torch.int32, 'int64': torch.int64,
    'uint8': torch.uint8, 'uint16': torch.uint16, 'uint32': torch.uint32,
    'uint64': torch.uint64,
    'bool': torch.bool,
    'complex64': torch.complex64, 'complex128': torch.complex128,
}
_NAMES = {dtype: name for name, dtype in _BY_NAME.items()
          if name not in ('half', 'float', 'double')}


class _StringDtype(str):
    """The dtype of text (`'string'`): strings have no torch dtype, they stay numpy arrays of
    bytes on the host (`torchk/strings.py`). It answers the questions asked of a symbol's
    torch dtype (`is_floating_point`) so that code over numeric symbols passes it by."""
    is_floating_point = False
    is_complex = False

    def __reduce__(self):
        return 'STRING'


STRING = _StringDtype('string')

HALF_PRECISION = (torch.float16, torch.bfloat16)
"""The floating dtypes below float32: a mixed precision policy's compute dtypes."""


def is_string(dtype):
    """True if `dtype` names text: `'string'`, `tf.string`, `str`, `bytes`, or a numpy
    string or object dtype."""
    if isinstance(dtype, str):
        return dtype == 'string'
    if dtype in (str, bytes, np.str_, np.bytes_, np.object_):
        return True
    return isinstance(dtype, np.dtype) and dtype.kind in 'USO'


def to_torch(dtype):
    """Returns the `torch.dtype` for a dtype string, numpy dtype or type, or torch dtype.

    # Raises
        TypeError: if `dtype` names no dtype torchk supports.
    """
    if isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str):
        name = dtype
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise TypeError('Unknown dtype %r; expected one of %s, a numpy dtype or a torch.dtype.'
                    % (dtype, ', '.join(sorted(_NAMES.values()))))


def name(dtype):
    """Returns the Keras string name (e.g. `'float32'`) of any dtype form `to_torch` accepts,
    or `'string'` for text (`is_string`)."""
    if is_string(dtype):
        return STRING
    return _NAMES[to_torch(dtype)]


def to_numpy(dtype):
    """Returns the numpy dtype matching a dtype (bfloat16 maps to float32)."""
    torch_dtype = to_torch(dtype)
    if torch_dtype == torch.bfloat16:
        return np.dtype('float32')
    return np.dtype(_NAMES[torch_dtype])


def as_tensor(value, dtype=None, device=None):
    """`torch.as_tensor`, also for numpy arrays with negative strides (`img[..., ::-1]`,
    `np.flip`), which torch refuses: only those are copied, to a contiguous array (checked
    only when torch refuses, so other values cost nothing more)."""
    try:
        return torch.as_tensor(value, dtype=dtype, device=device)
    except ValueError:
        if not (isinstance(value, np.ndarray) and min(value.strides, default=0) < 0):
            raise
    return torch.as_tensor(np.ascontiguousarray(value), dtype=dtype, device=device)
