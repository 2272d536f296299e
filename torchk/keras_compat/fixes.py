"""Fixes of Keras 2.3.1 (and 2.2.4/2.2.5) bugs, and the pieces Keras takes from TensorFlow
alone, on torchk: overrides of Keras (`torchk.overrides`), each named by the Keras lines it
addresses (2.3.1 numbering unless stated).

- `print_without_tracking`: the leftover debug `print('tracking', value, name)` of
  `Layer.__setattr__` is dropped.
- `define_uses_learning_phase`: `keras.layers.wrappers` gets the module global
  `uses_learning_phase` its `TimeDistributed` step declares but never defines.
- `inferring_lambda_output_shapes`: a `Lambda` without `output_shape` infers its output shape
  as it does under TF, instead of assuming its input shape.
- `plain_int_output_shapes`: `Flatten` and `Reshape` report plain `int` output dimensions
  instead of numpy integers (`model.summary()` printed `np.int64(12)`).
- `export_session_functions`: `keras.backend` gets `clear_session`, `get_session`,
  `set_session` and `manual_variable_initialization`, which Keras imports from the backend
  only for TF.
- `multi_gpu_model`: `keras.utils.multi_gpu_model` (TensorFlow only) raises a ValueError that
  points to `torchk.distributed` (`keras.callbacks.TensorBoard` is
  `torchk.callbacks.TensorBoard`: Keras' own needs TensorFlow).
- `metric_configs_deserialized`: `keras.metrics.get` deserializes a metric's config (a saved
  model's compiled metric objects), where 2.3.1 failed.
- `building_before_setting_inputs`: a subclassed model whose class defines `build` is built
  before its first `fit`, `evaluate` or `predict` calls it on placeholders
  (`Model._set_inputs`), as `Layer.__call__` builds a layer; Keras 2.3.1 called it unbuilt,
  without its weights (`input_shapes`, which the tf.keras facade's `Model` uses too).
"""
import builtins
import functools
import sys

import numpy as np
import torch

def print_without_tracking(*args, **kwargs):
    """Override of `print` in `keras.engine.base_layer` (a module global named `print` takes
    the builtin's place there): drops `print('tracking', value, name)` at
    engine/base_layer.py:1237 (2.3.x), the module's only `print`, and passes on every other
    call."""
    if not (args and isinstance(args[0], str) and args[0] == 'tracking'):
        builtins.print(*args, **kwargs)


def define_uses_learning_phase(wrappers):
    """Defines the module global `uses_learning_phase` that `TimeDistributed`'s step function
    declares `global` but never defines (layers/wrappers.py:220-225, 2.2.4 wrappers.py:
    205-210). Every backend tensor that has `_uses_learning_phase` reaches the undefined
    name: with torchk that is every tensor, so a fixed-batch `TimeDistributed` could not
    be built."""
    if not hasattr(wrappers, 'uses_learning_phase'):
        wrappers.uses_learning_phase = False


def inferring_lambda_output_shapes(keras_compute_output_shape):
    """Override of `Lambda.compute_output_shape`: a `Lambda` without `output_shape` infers
    its shape by calling itself on placeholders only for 'tensorflow' and 'cntk', and falls
    back to its input shape otherwise (layers/core.py:667-690; 2.2.4 core.py:640-662):
    `layer.output_shape` and `model.summary()` would be wrong. Under torchk the same
    inference works, so it is done for torchk too."""
    @functools.wraps(keras_compute_output_shape)
    def compute_output_shape(self, input_shape):
        backend = sys.modules['keras.backend']
        if self._output_shape is not None or backend.backend() != 'torchk.core':
            return keras_compute_output_shape(self, input_shape)
        several = isinstance(input_shape, list)
        shapes = input_shape if several else [input_shape]
        input_dtypes = getattr(self, '_input_dtypes', None)
        if not isinstance(input_dtypes, list):
            input_dtypes = [input_dtypes] * len(shapes)
        inputs = [backend.placeholder(shape=shape, dtype=dtype)
                  for shape, dtype in zip(shapes, input_dtypes)]
        outputs = self.call(inputs if several else inputs[0])
        if isinstance(outputs, list):
            return [backend.int_shape(output) for output in outputs]
        return backend.int_shape(outputs)
    return compute_output_shape


# TF-only in Keras' import list (backend/__init__.py:156-164; 2.2.5 the same), but called
# by users of every backend.
_SESSION_FUNCTIONS = ('clear_session', 'get_session', 'set_session',
                      'manual_variable_initialization')


def export_session_functions(backend):
    """`keras.backend` imports `clear_session`, `get_session`, `set_session` and
    `manual_variable_initialization` from the backend only for TensorFlow (backend/
    __init__.py:156-164): `K.clear_session()` would raise AttributeError. torchk's versions
    are added to `keras.backend` when torchk is its backend (also while `keras.backend` is
    still importing it: the attributes set then stay)."""
    core = sys.modules.get('torchk.core')
    loading = sys.modules.get('keras.backend.load_backend')
    if core is None or getattr(loading, '_BACKEND', None) != 'torchk.core':
        return
    for name in _SESSION_FUNCTIONS:
        if not hasattr(backend, name):
            setattr(backend, name, getattr(core, name))


def multi_gpu_model(model, gpus=None, cpu_merge=True, cpu_relocation=False):
    """Override of `keras.utils.multi_gpu_model` (utils/multi_gpu_utils.py:24-258), which
    replicates a model on TensorFlow devices only; off TensorFlow it fails with an
    AttributeError on `K.tensorflow_backend` (:16). Under torchk it raises a ValueError (the
    type of Keras' own multi_gpu_model errors) that says what to use instead."""
    raise ValueError('keras.utils.multi_gpu_model replicates a model with TensorFlow '
                     'only; with the torchk backend, train on several GPUs (or '
                     'machines) with torchk.distributed, data parallel on '
                     'torch.distributed, launched with torchrun.')


def plain_int_output_shapes(keras_compute_output_shape):
    """Override of `Flatten.compute_output_shape` (layers/core.py:505) and `Reshape`'s
    (whose unknown dimension, :381-385, is computed): their numpy integers, which numpy 2
    prints as `np.int64(12)` (in `model.summary()`, `plot_model` and saved shapes), become
    plain `int`s."""
    @functools.wraps(keras_compute_output_shape)
    def compute_output_shape(self, input_shape):
        shape = keras_compute_output_shape(self, input_shape)
        return tuple(int(d) if isinstance(d, np.integer) else d for d in shape)
    return compute_output_shape


def metric_configs_deserialized(keras_get):
    """Override of `keras.metrics.get`: a metric's config (`{'class_name': ..., 'config':
    ...}`, how a saved model's compile arguments hold a metric object) is deserialized;
    Keras 2.3.1 looked up the config's string form as a name (metrics.py:1974) and failed
    every such load."""
    @functools.wraps(keras_get)
    def get(identifier):
        if isinstance(identifier, dict):
            return sys.modules['keras.metrics'].deserialize(identifier)
        return keras_get(identifier)
    return get


def building_before_setting_inputs(keras_set_inputs):
    """Override of `Model._set_inputs` (a subclassed model's first `fit`, `evaluate` or
    `predict`), which calls
    the model's `call` without building it: a model whose class defines `build` (its weights
    made there, as keras-io's models do) failed. It now builds first, as `Layer.__call__`
    does, with the shapes of the inputs, batch size unknown."""
    def _set_inputs(self, inputs, outputs=None, training=None):
        defines_build = (type(self).build.__module__.split('.')[0] not in ('keras', 'torchk')
                         and not self._is_graph_network)
        # Keras symbols as inputs come from `Model.build`, which a `build` under way calls.
        if defines_build and outputs is None and not self.weights and not self.inputs \
                and not getattr(self, '_torchk_building', False) \
                and not _holds_symbol(inputs):
            self._torchk_building = True
            try:
                self.build(input_shapes(inputs))
            finally:
                self._torchk_building = False
            if self.inputs:  # that build called Model.build, which set them
                return None
        return keras_set_inputs(self, inputs, outputs, training)
    return _set_inputs


def _holds_symbol(inputs):
    if isinstance(inputs, (list, tuple)):
        return any(_holds_symbol(value) for value in inputs)
    if isinstance(inputs, dict):
        return any(_holds_symbol(value) for value in inputs.values())
    return sys.modules['keras.backend'].is_tensor(inputs) and not isinstance(inputs,
                                                                           torch.Tensor)


def input_shapes(inputs):
    """The shapes of model inputs (arrays, tensors or Keras symbols; a list or dict of
    them): a symbol's own, the others' with the batch size unknown."""
    if isinstance(inputs, (list, tuple)):
        return [input_shapes(value) for value in inputs]
    if isinstance(inputs, dict):
        return {name: input_shapes(value) for name, value in inputs.items()}
    backend = sys.modules['keras.backend']
    if backend.is_tensor(inputs) and not isinstance(inputs, torch.Tensor):
        return backend.int_shape(inputs)
    return (None,) + tuple(np.shape(inputs))[1:]
