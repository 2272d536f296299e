"""The one gate between a model file (or configuration) and the Python code it may carry.

Of everything a Keras 2 model file holds, only a `Lambda` layer's marshalled bytecode (its
`function` or `output_shape` with `function_type` / `output_shape_type` `'lambda'`, in every
dialect) is code: Keras 2.3.1's `Lambda.from_config` (layers/core.py:750-793) turns it into a
function with `func_load` (utils/generic_utils.py:193), its only caller, and the model runs it
while it is being built. Every path that builds a model from a configuration (`load_model` of
every format, `model_from_json` / `_yaml` / `_config`, `Model.from_config`,
`Sequential.from_config`, and layers nested in models, `TimeDistributed`, `Bidirectional`)
builds its Lambda layers through `Lambda.from_config`: its override,
`gating_lambda_from_config`, puts `check_lambda` there, so no path is missed. The translation
of tf.keras configurations calls it too, before checking that the bytecode loads on this
Python, so that untrusted bytes never reach `marshal`.

The other names a configuration holds resolve without running anything from the file: a
Lambda's function stored by name comes only from `custom_objects` and Keras' custom object
scope (tf.keras' `module` key is dropped, never imported); `TFOpLambda` ops only from
`torchk.layers.tf_ops`' table.

Safe mode is on unless the caller turns it off, for one call (`safe_mode=False` to any loader,
as in Keras 3) or for the process (`torchk.config.enable_unsafe_deserialization()` or
`TORCHK_UNSAFE_DESERIALIZATION=1`, for unmodified scripts). Nothing read from a file or
configuration is consulted.
"""
import contextlib
import contextvars
import functools

from .. import config as torchk_config

_CALL_SAFE_MODE = contextvars.ContextVar('torchk_safe_mode', default=None)

# (key holding the function, key saying how it is stored)
_FUNCTION_KEYS = (('function', 'function_type'), ('output_shape', 'output_shape_type'))


def in_safe_mode():
    """True if a configuration's code must be refused now: the `safe_mode` of the enclosing
    load call, else the process-wide setting (safe unless unsafe deserialization is
    enabled)."""
    value = _CALL_SAFE_MODE.get()
    if value is not None:
        return value
    return not torchk_config.unsafe_deserialization_enabled()


@contextlib.contextmanager
def scope(safe_mode):
    """Applies a loader's `safe_mode` argument for the duration of the call.

    # Arguments
        safe_mode: True or False for this call (and the loads it makes), None to keep the
            enclosing call's or the process-wide setting.

    # Raises
        TypeError: if `safe_mode` is not a bool or None.
    """
    if safe_mode is None:
        yield
        return
    if not isinstance(safe_mode, bool):
        raise TypeError('safe_mode must be True, False or None, not %r.' % (safe_mode,))
    token = _CALL_SAFE_MODE.set(safe_mode)
    try:
        yield
    finally:
        _CALL_SAFE_MODE.reset(token)


def _stores_bytecode(config, key, type_key):
    value = config.get(key)
    keras3_lambda = isinstance(value, dict) and value.get('class_name') == '__lambda__'
    return config.get(type_key) == 'lambda' or keras3_lambda


def check_lambda(config, name=None):
    """Raises in safe mode if the configuration of a Lambda layer stores code.

    # Arguments
        config: the layer's configuration (its `'config'` dict).
        name: the layer's name, if the configuration does not hold it.

    # Raises
        ValueError: naming the layer, saying why and how to opt in.
    """
    if not in_safe_mode():
        return
    for key, type_key in _FUNCTION_KEYS:
        if _stores_bytecode(config, key, type_key):
            layer = config.get('name', name)
            raise ValueError(
                'Lambda layer %r stores its %s as Python bytecode, which loading would run: '
                'refused in safe mode (a file can carry any code). If you trust the file, '
                'load it with safe_mode=False, or allow it process-wide with '
                'torchk.config.enable_unsafe_deserialization() (or the environment variable '
                'TORCHK_UNSAFE_DESERIALIZATION=1). Or supply the function in code: '
                'custom_objects={%r: function}.' % (layer, key, layer))


def _check_names(config, custom_objects):
    """Raises unless each function the Lambda stores by name is one the program supplies
    (`custom_objects`, Keras' custom object scope): Keras 2.3.1 would fail on it with an
    AttributeError, tf.keras would look in the module the file names."""
    from keras.utils.generic_utils import get_custom_objects
    for key, type_key in _FUNCTION_KEYS:
        name = config.get(key)
        if config.get(type_key) != 'function' or not isinstance(name, str):
            continue
        if name not in (custom_objects or {}) and name not in get_custom_objects():
            raise ValueError(
                'Lambda layer %r names its %s %r, which is not in custom_objects: supply it, '
                'custom_objects={%r: function} (torchk never imports the module a file '
                'names).' % (config.get('name'), key, name, name))


def _with_supplied_function(config, custom_objects):
    """The Lambda's configuration with the function supplied under its layer's name in
    `custom_objects` (issue 18's remedy) stored by that name instead of its bytecode."""
    name = config.get('name')
    if not custom_objects or not callable(custom_objects.get(name)):
        return config
    return dict(config, function_type='function', function=name)


def gating_lambda_from_config(keras_from_config):
    """Override of `keras.layers.core.Lambda.from_config`, through which every load builds its
    Lambda layers: the gate, and the `safe_mode` keyword, as in Keras 3."""
    @functools.wraps(keras_from_config)
    def from_config(cls, config, custom_objects=None, safe_mode=None):
        with scope(safe_mode):
            config = _with_supplied_function(config, custom_objects)
            check_lambda(config)
            _check_names(config, custom_objects)
            return keras_from_config(cls, config, custom_objects=custom_objects)
    return from_config


def accepting_safe_mode(load):
    """`load(*args, **kwargs)` that also takes `safe_mode=None` and applies it (`scope`)."""
    @functools.wraps(load)
    def wrapper(*args, safe_mode=None, **kwargs):
        with scope(safe_mode):
            return load(*args, **kwargs)
    return wrapper
