"""Deploying a Keras model without Keras: `torch.export` programs (`.pt2`) and ONNX files.

The exported graph is the model's inference graph: the model is called once more on new
inputs with the learning phase fixed to 0 (`inference_model`), so that dropout is gone and
batch normalization uses its moving statistics, and that graph is traced by `torch.export`
through `to_torch`, whose parameters become the program's (frozen copies: the program does
not change when the Keras model trains on). The batch axis and every axis the Keras model
leaves unknown (sequence lengths, image sizes of fully convolutional models) stay dynamic.

A `.pt2` file needs only torch to run (`torch.export.load(path).module()(*inputs)`); an
`.onnx` file only onnxruntime. Exporting to ONNX needs the `onnx` and `onnxscript` packages.

Importing this module imports Keras, which must be configured to use torchk.
"""
import keyword
import os
import re

import numpy as np
import torch

import keras
from keras import backend as K

from . import function
from .interop import KerasModule

__all__ = ['inference_model', 'exported_program', 'export']

_FORMATS = ('.pt2', '.onnx')
# Example sizes for the trace: a batch other than 1 (so that nothing specialises on it) and
# unknown axes large enough for the strides and windows of common networks.
_EXAMPLE_BATCH = 2
_EXAMPLE_SIZE = 32


def inference_model(model):
    """The model's inference graph: the model called on new inputs at learning phase 0.

    The new graph shares the model's layers and variables; dropout and other training-only
    branches are resolved statically, batch normalization reads its moving statistics.

    # Arguments
        model: a built Keras `Sequential` or functional `Model`.

    # Returns
        A Keras `Model` with the same inputs (shapes, dtypes) and outputs, in order.

    # Raises
        ValueError: if the model has no symbolic inputs (never built, or subclassed).
    """
    if not getattr(model, 'inputs', None) or not getattr(model, 'outputs', None):
        raise ValueError('Exporting needs a Keras model with symbolic inputs and outputs; %s '
                         'has none. Build it first (give its first layer an input_shape); '
                         'subclassed models are not supported.' % model.name)
    inputs = [keras.layers.Input(batch_shape=K.int_shape(x), dtype=K.dtype(x))
              for x in model.inputs]
    with function.learning_phase_scope(0):
        outputs = model(inputs if len(inputs) > 1 else inputs[0])
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    return keras.models.Model(inputs, outputs, name=model.name + '_inference')


def _identifier(name, taken):
    """A Python identifier for an input name (`'input_1:0'` gives `'input_1'`), unique."""
    name = re.sub(r'\W', '_', re.sub(r':\d+$', '', name or 'input'))
    if not name or name[0].isdigit() or keyword.iskeyword(name):
        name = 'input_' + name
    unique, count = name, 1
    while unique in taken:
        unique, count = '%s_%d' % (name, count), count + 1
    taken.add(unique)
    return unique


def input_names(model):
    """The names of the exported program's inputs: the Keras model's input names."""
    taken = set()
    return [_identifier(name, taken) for name in model.input_names]


def output_names(model):
    """The names of the ONNX outputs: the Keras model's output names (its output layers')."""
    taken = set()
    return [_identifier(name, taken) for name in model.output_names]


class _InferenceModule(torch.nn.Module):
    """Runs a `KerasModule` in eval mode; `forward` takes the inputs by their Keras names."""

    def __init__(self, keras_module):
        super(_InferenceModule, self).__init__()
        self.model = keras_module.eval()

    @classmethod
    def with_inputs(cls, keras_module, names):
        """An instance whose `forward` signature lists `names` (they name the exported
        program's inputs)."""
        source = 'def forward(self, %s):\n    return self.model(%s)\n' % (
            ', '.join(names), ''.join(name + ', ' for name in names))
        namespace = {}
        exec(compile(source, '<torchk export>', 'exec'), namespace)
        subclass = type('KerasInference', (cls,), {'forward': namespace['forward']})
        return subclass(keras_module)


def _example_inputs(model, static_batch):
    """Example tensors for the trace: `static_batch` (or 2) samples, 32 along unknown axes;
    floats are random, integers zeros (valid indices for embeddings)."""
    generator = torch.Generator().manual_seed(0)
    examples = []
    for x in model.inputs:
        shape = K.int_shape(x)
        size = [static_batch or _EXAMPLE_BATCH] + [
            _EXAMPLE_SIZE if d is None else d for d in shape[1:]]
        dtype = x._torch_dtype
        if dtype.is_floating_point:
            examples.append(torch.rand(size, generator=generator).to(dtype))
        else:
            examples.append(torch.zeros(size, dtype=dtype))
    return examples


def _dynamic_shapes(model, names, static_batch):
    """`torch.export` dynamic shapes: one batch dimension shared by all inputs (unless
    `static_batch`), and each other axis the model leaves unknown."""
    batch = None if static_batch else torch.export.Dim('batch', min=1)
    shapes = {}
    for name, x in zip(names, model.inputs):
        axes = {} if batch is None else {0: batch}
        for axis, size in enumerate(K.int_shape(x)[1:], start=1):
            if size is None:
                axes[axis] = torch.export.Dim.AUTO
        shapes[name] = axes
    return shapes


def _frozen(program):
    """`program` with its parameters replaced by detached copies that do not require
    gradients (the Keras variables are not saved: unpickling them needs torchk)."""
    for name, value in list(program.state_dict.items()):
        copy = value.detach().clone().as_subclass(torch.Tensor)
        program.state_dict[name] = (torch.nn.Parameter(copy, requires_grad=False)
                                    if isinstance(value, torch.nn.Parameter) else copy)
    for name, value in list(program.constants.items()):
        if isinstance(value, torch.Tensor):
            program.constants[name] = value.detach().as_subclass(torch.Tensor)
    return program


def exported_program(model, static_batch=None):
    """Traces a Keras model's inference graph with `torch.export`.

    # Arguments
        model: a built Keras `Sequential` or functional `Model`.
        static_batch: None for a dynamic batch axis, or the fixed batch size.

    # Returns
        A `torch.export.ExportedProgram` whose inputs are the model's inputs, in order and
        named after them, and whose output is the model's output tensor (a tuple of them,
        in order, for a model with several outputs).
        Its parameters are copies of the model's weights that do not require gradients.

    # Raises
        ValueError: if the model has no symbolic inputs, or `static_batch` is not a
            positive integer.
    """
    if static_batch is not None and (not isinstance(static_batch, (int, np.integer))
                                     or isinstance(static_batch, bool) or static_batch < 1):
        raise ValueError('static_batch must be a positive integer or None, got %r.'
                         % (static_batch,))
    inference = inference_model(model)
    names = input_names(model)
    module = _InferenceModule.with_inputs(KerasModule(inference), names)
    examples = _example_inputs(model, static_batch)
    with torch.no_grad():
        program = torch.export.export(
            module, tuple(examples),
            dynamic_shapes=_dynamic_shapes(model, names, static_batch))
    return _frozen(program)


def export(model, path, opset=None, static_batch=None):
    """Exports a Keras model's inference graph to a file, by its suffix.

    `.pt2`: a `torch.export` program (`torch.export.save`), loaded with
    `torch.export.load(path).module()`, which needs only torch. `.onnx`: an ONNX model
    (`torch.onnx.export(..., dynamo=True)`), run with onnxruntime; its inputs and outputs
    are named after the Keras model's.

    # Arguments
        model: a built Keras `Sequential` or functional `Model`.
        path: the file to write, ending in `.pt2` or `.onnx`.
        opset: the ONNX opset version (torch's default when None); ONNX only.
        static_batch: None for a dynamic batch axis, or the fixed batch size.

    # Returns
        The `ExportedProgram` that was saved.

    # Raises
        ValueError: for another suffix, or `opset` with a `.pt2` path.
    """
    suffix = os.path.splitext(str(path))[1].lower()
    if suffix not in _FORMATS:
        raise ValueError('Cannot tell the format of %r: expected a path ending in %s.'
                         % (str(path), ' or '.join(_FORMATS)))
    if opset is not None and suffix != '.onnx':
        raise ValueError('opset=%r applies to ONNX files only; %r is a %s file.'
                         % (opset, str(path), suffix))
    program = exported_program(model, static_batch=static_batch)
    if suffix == '.pt2':
        torch.export.save(program, str(path))
        return program
    onnx_program = torch.onnx.export(
        program, (), dynamo=True, opset_version=opset, input_names=input_names(model),
        output_names=output_names(model), verbose=False)
    onnx_program.save(str(path))
    return program
