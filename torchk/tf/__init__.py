"""torchk.tf: the part of TensorFlow's `tf` namespace that tf.keras 2 scripts use, on torch.

`import torchk.tf as tf` (or `import tensorflow as tf` under `python -m torchk run`, which
installs `install_import_hook`) gives eager ops on torch tensors, on torchk's device: the
ops of `op_table` (the one table of TF ops, also read by `torchk.layers.TFOpLambda`),
tensors and variables, `GradientTape` over torch autograd, `function`, `data.Dataset`,
`strings` (text stays on the host: `torchk.strings.StringTensor`), dtypes, devices and
`tf.keras` (the `torchk.keras` facade, imported when first used).
Results are plain `torch.Tensor`s; importing this package makes `Tensor.numpy()` work for
tensors that require gradients or live on a GPU (`tensors.install_numpy`).

Every other `tf.X` raises an AttributeError naming it; docs/TF_SUBSET.md lists what is
provided.
"""
import os

import torch

from . import (data, image, linalg, math, nn, profiler, random, saved_model, strings,
               summary)
from . import audio, io, signal
from .checkpoint import train
from .control_flow import map_fn, py_function, vectorized_map
from .creation import constant, eye, fill, linspace, ones, zeros
from .custom_gradient import custom_gradient
from .data import TensorSpec
from .dtypes import (DType, as_dtype, bfloat16, bool, complex64, complex128, double,
                     float16, float32, float64, half, int8, int16, int32, int64, string, uint8,
                     uint16, uint32, uint64)
from .experimental_ops import compiler, experimental
from .hook import import_served, install_import_hook
from .initializers import (constant_initializer, ones_initializer, random_normal_initializer,
                           random_uniform_initializer, zeros_initializer)
from .module import Module, name_scope
from .namespaces import Namespace, ops_under
from .namespaces import missing as _missing, missing_name as _missing_name
from .runtime import (TensorShape, config, debugging, device, errors, executing_eagerly,
                      is_tensor, test, tf_print as print)
from ..structure import flatten as _flatten, map_structure as _map_structure, pack_as as _pack
from .tape import GradientTape, UnconnectedGradients
from .tensors import convert_to_tensor, install_numpy
from .tracing import TraceType as _TraceType, function
from .variable import Variable

__version__ = '2.15.0+torchk'

# `tf.initializers` is tf.keras' initializers, as in TF 2 (served by `__getattr__`), not the
# module of the `tf.*_initializer` classes imported above.
del globals()['initializers']

os.environ.setdefault('KERAS_BACKEND', 'torchk.core')
install_numpy()

_TOP_LEVEL_OPS = ops_under('')
globals().update(_TOP_LEVEL_OPS)

_KERAS_ALIASES = ('metrics', 'losses', 'optimizers', 'initializers')
newaxis = None
Tensor = torch.Tensor
nest = Namespace('tf.nest', {'flatten': _flatten, 'map_structure': _map_structure,
                             'pack_sequence_as': _pack})
types = Namespace('tf.types', {'experimental': Namespace('tf.types.experimental',
                                                        {'TraceType': _TraceType})})
version = Namespace('tf.version', {'VERSION': __version__, 'GIT_VERSION': 'torchk'})

__all__ = sorted(set(_TOP_LEVEL_OPS) | {
    'data', 'image', 'linalg', 'math', 'nn', 'profiler', 'random', 'saved_model', 'strings',
    'summary', 'signal', 'io', 'audio',
    'constant', 'eye',
    'fill', 'linspace', 'ones', 'zeros', 'TensorSpec', 'DType', 'as_dtype', 'bfloat16', 'bool',
    'complex64', 'complex128', 'double', 'float16', 'float32', 'float64', 'half', 'int8',
    'int16', 'int32', 'int64', 'string', 'uint8', 'install_import_hook', 'TensorShape',
    'config', 'debugging', 'device', 'errors', 'executing_eagerly', 'is_tensor', 'test',
    'print', 'GradientTape', 'UnconnectedGradients', 'convert_to_tensor', 'function',
    'Module', 'name_scope', 'train', 'Variable', 'newaxis', 'Tensor', 'nest', 'version', 'distribute',
    'types', 'vectorized_map', 'uint16', 'uint32', 'uint64',
    'constant_initializer', 'ones_initializer', 'random_normal_initializer',
    'random_uniform_initializer', 'zeros_initializer', 'map_fn', 'experimental', 'compiler',
    'custom_gradient', 'py_function'})


def __getattr__(name):
    if name == 'keras':
        keras = import_served('tensorflow.keras', 'torchk.keras')
        globals()['keras'] = keras
        return keras
    if name in _KERAS_ALIASES:
        # TF 2's `tf.metrics`, `tf.losses`, ...: tf.keras' namespaces under `tf` itself.
        import importlib
        return importlib.import_module('torchk.keras.' + name)
    if name == 'distribute':
        # Imported when first used: it imports Keras (through torchk.distributed).
        import importlib
        return importlib.import_module(__name__ + '.distribute')
    if name.startswith('__'):
        raise AttributeError(name)
    raise _missing_name(_missing('tf.' + name))
