"""Backend settings: floatx, epsilon, image data format and the torch device.

Values come from `keras.json` (in `$KERAS_HOME`, else `~/.keras`), which torchk only reads.
When Keras has loaded torchk, `keras.backend.common` owns floatx, epsilon and the image data
format (Keras applies keras.json through it before importing the backend), so every getter and
setter here goes through that module at call time: one source of truth.
"""
import json
import os
import sys

import torch

_DATA_FORMATS = ('channels_first', 'channels_last')
_DIM_ORDERINGS = {'th': 'channels_first', 'tf': 'channels_last'}
_FLOATS = ('float16', 'bfloat16', 'float32', 'float64')


def _keras_json_path():
    home = os.environ.get('KERAS_HOME') or os.path.join(os.path.expanduser('~'), '.keras')
    return os.path.join(home, 'keras.json')


def _read_keras_json():
    path = _keras_json_path()
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        try:
            return json.load(f)
        except ValueError as e:
            raise ValueError('Cannot parse %s as JSON: %s' % (path, e)) from e


def _data_format_from_json(cfg):
    if 'image_data_format' in cfg:
        return _check_data_format(cfg['image_data_format'])
    if 'image_dim_ordering' in cfg:
        return _data_format_from_dim_ordering(cfg['image_dim_ordering'])
    return 'channels_last'


def _check_floatx(value):
    value = str(value)
    if value not in _FLOATS:
        raise ValueError('Unknown floatx type: %r; expected one of %s.' % (value, ', '.join(_FLOATS)))
    return value


def _check_data_format(value):
    if value not in _DATA_FORMATS:
        raise ValueError('Unknown data_format: %r; expected "channels_first" or "channels_last".'
                         % (value,))
    return value


def _data_format_from_dim_ordering(dim_ordering):
    if dim_ordering not in _DIM_ORDERINGS:
        raise ValueError('Unknown dim_ordering: %r; expected "th" or "tf".' % (dim_ordering,))
    return _DIM_ORDERINGS[dim_ordering]


_CONFIG = _read_keras_json()
_FLOATX = _check_floatx(_CONFIG.get('floatx', 'float32'))
_EPSILON = float(_CONFIG.get('epsilon', 1e-7))
_IMAGE_DATA_FORMAT = _data_format_from_json(_CONFIG)
_DEVICE = None
_TF32 = None


def _keras_common():
    """`keras.backend.common` once Keras has loaded it, else None (never imports Keras)."""
    return sys.modules.get('keras.backend.common')


def floatx():
    """Returns the default float type, as a string (e.g. `'float32'`)."""
    common = _keras_common()
    return common.floatx() if common is not None else _FLOATX


def set_floatx(value):
    """Sets the default float type.

    # Arguments
        value: `'float16'`, `'bfloat16'`, `'float32'` or `'float64'`.
    """
    global _FLOATX
    _FLOATX = _check_floatx(value)
    common = _keras_common()
    if common is not None:
        common.set_floatx(_FLOATX)


def epsilon():
    """Returns the fuzz factor used in numeric expressions (default 1e-7)."""
    common = _keras_common()
    return common.epsilon() if common is not None else _EPSILON


def set_epsilon(value):
    """Sets the fuzz factor used in numeric expressions."""
    global _EPSILON
    _EPSILON = float(value)
    common = _keras_common()
    if common is not None:
        common.set_epsilon(_EPSILON)


def image_data_format():
    """Returns the default image data format: `'channels_last'` or `'channels_first'`."""
    common = _keras_common()
    return common.image_data_format() if common is not None else _IMAGE_DATA_FORMAT


def set_image_data_format(data_format):
    """Sets the default image data format (`'channels_last'` or `'channels_first'`)."""
    global _IMAGE_DATA_FORMAT
    _IMAGE_DATA_FORMAT = _check_data_format(data_format)
    common = _keras_common()
    if common is not None:
        common.set_image_data_format(_IMAGE_DATA_FORMAT)


def image_dim_ordering():
    """Keras 1 name of the image data format: `'th'` (channels_first) or `'tf'` (channels_last)."""
    return 'th' if image_data_format() == 'channels_first' else 'tf'


def set_image_dim_ordering(dim_ordering):
    """Keras 1 setter: `'th'` selects channels_first, `'tf'` channels_last."""
    set_image_data_format(_data_format_from_dim_ordering(dim_ordering))


def normalize_data_format(value):
    """Returns `value` checked, or the default image data format when `value` is None.

    Keras 1 `dim_ordering` values `'th'`/`'tf'` are accepted too.
    """
    if value is None:
        return image_data_format()
    value = str(value).lower()
    if value in _DIM_ORDERINGS:
        return _DIM_ORDERINGS[value]
    return _check_data_format(value)


def cast_to_floatx(x):
    """Casts a numpy array (or anything numpy accepts) to the default float type."""
    import numpy as np
    return np.asarray(x, dtype=floatx())


def _device_from_settings():
    name = os.environ.get('TORCHK_DEVICE') or _CONFIG.get('torchk_device')
    if name:
        try:
            return torch.device(name)
        except RuntimeError as e:
            raise ValueError('Invalid torchk device %r (from TORCHK_DEVICE or keras.json '
                             '"torchk_device"): %s' % (name, e)) from e
    return torch.device('cuda' if torch.cuda.is_available() else 'cpu')


def device():
    """Returns the `torch.device` where variables, constants and feeds live.

    Chosen by `TORCHK_DEVICE`, else keras.json's `"torchk_device"`, else CUDA when available,
    else the CPU. On CUDA, the TensorFloat-32 setting (`tf32_enabled`) is applied when the
    device is chosen.
    """
    global _DEVICE
    if _DEVICE is None:
        _DEVICE = _device_from_settings()
        _apply_tf32(_DEVICE)
    return _DEVICE


def set_device(value):
    """Sets the device for variables and computations created from now on."""
    global _DEVICE
    _DEVICE = torch.device(value)
    _apply_tf32(_DEVICE)


def tf32_enabled():
    """Whether float32 matrix products and convolutions on CUDA may use TensorFloat-32.

    As TensorFlow does by default (on Ampere and later GPUs), torchk lets cuBLAS and cuDNN
    compute float32 matmuls, convolutions and fused RNNs with TF32 tensor cores: inputs
    rounded to a 10-bit mantissa, float32 accumulation (relative errors near 1e-3 instead of
    1e-6). `TORCHK_TF32=0`, or keras.json's `"torchk_tf32": false`, keeps full float32.
    CPU computations are never affected.
    """
    if _TF32 is not None:
        return _TF32
    value = os.environ.get('TORCHK_TF32')
    if value is None:
        value = _CONFIG.get('torchk_tf32', True)
    if isinstance(value, bool):
        return value
    if str(value) not in ('0', '1'):
        raise ValueError('TORCHK_TF32 (or keras.json "torchk_tf32") must be 0 or 1 '
                         '(false or true), got %r.' % (value,))
    return str(value) == '1'


def set_tf32_enabled(enabled):
    """Allows (True) or forbids (False) TensorFloat-32 for float32 CUDA matmuls and
    convolutions from now on, over the environment and keras.json (`tf32_enabled`)."""
    global _TF32
    _TF32 = bool(enabled)
    _apply_tf32(device())


def _apply_tf32(device):
    """Sets torch's CUDA TF32 switches from `tf32_enabled()` when `device` is a CUDA device."""
    if device.type == 'cuda':
        enabled = tf32_enabled()
        torch.backends.cuda.matmul.allow_tf32 = enabled
        torch.backends.cudnn.allow_tf32 = enabled


def mixed_precision_setting():
    """The mixed precision policy chosen outside the script, and where it comes from.

    `TORCHK_MIXED_PRECISION`, else keras.json's `"torchk_mixed_precision"`, else none
    (`torchk.mixed_precision` validates the name).

    # Returns
        `(name, source)`: the policy name and `'TORCHK_MIXED_PRECISION'` or the keras.json
        path, or `(None, None)`.
    """
    name = os.environ.get('TORCHK_MIXED_PRECISION')
    if name:
        return name, 'TORCHK_MIXED_PRECISION'
    name = _CONFIG.get('torchk_mixed_precision')
    if name:
        return name, _keras_json_path()
    return None, None


class PassSwitch:
    """Turns one of the program passes (fusion, phase, folding) on or off: an environment
    variable set to `0` turns it off, `set_enabled` overrides that.

    # Arguments
        variable: the environment variable's name, e.g. `'TORCHK_FUSION'`.
    """

    def __init__(self, variable):
        self.variable = variable
        self._enabled = None

    def enabled(self):
        """True if the pass runs."""
        if self._enabled is not None:
            return self._enabled
        return os.environ.get(self.variable, '1') != '0'

    def set_enabled(self, value):
        """Turns the pass on or off for programs built from now on (None: follow the
        environment variable)."""
        self._enabled = None if value is None else bool(value)


_UNSAFE_DESERIALIZATION = False
UNSAFE_DESERIALIZATION_VARIABLE = 'TORCHK_UNSAFE_DESERIALIZATION'


def enable_unsafe_deserialization():
    """Lets every model load of this process run the Python code a model file or
    configuration carries (a Lambda layer's marshalled function or output_shape), as Keras 2
    did. Only for files you trust: that code can do whatever this process can. The
    environment variable `TORCHK_UNSAFE_DESERIALIZATION=1` does the same for unmodified
    scripts; a load's own `safe_mode=True` still refuses (`torchk.saving.safe_mode`)."""
    global _UNSAFE_DESERIALIZATION
    _UNSAFE_DESERIALIZATION = True


def unsafe_deserialization_enabled():
    """True if `enable_unsafe_deserialization()` was called or the environment variable
    `TORCHK_UNSAFE_DESERIALIZATION` is `1`."""
    return (_UNSAFE_DESERIALIZATION
            or os.environ.get(UNSAFE_DESERIALIZATION_VARIABLE) == '1')
