"""Deploying a Keras model without Keras: `torch.export` programs (`.pt2`) and ONNX files.

The exported graph is the model's inference graph: the model is called once more on new
inputs with the learning phase fixed to 0 (`inference_model`), so that dropout is gone and
batch normalization uses its moving statistics, and that graph is traced by `torch.export`
through `to_torch`, whose parameters become the program's (frozen copies: the program does
not change when the Keras model trains on). The batch axis and every axis the Keras model
leaves unknown (sequence lengths, image sizes of fully convolutional models) stay dynamic.

A `.pt2` file needs only torch to run (`torch.export.load(path).module()(*inputs)`); an
`.onnx` file only onnxruntime. Exporting to ONNX needs the `onnx` and `onnxscript` packages.

A model with text inputs (`Input(dtype='string')`) is exported in two parts, since its string
stage runs in Python, not in torch (docs/EXPORT.md): `split_host_stage` cuts it where its text
layers turn text into numbers; the numeric part is exported, and the string stage (the text
layers, with their vocabularies) is saved beside it as a `.keras` file whose outputs are the
exported program's first inputs.

Importing this module imports Keras, which must be configured to use torchk.
"""
import contextlib
import itertools
import keyword
import operator
import os
import re

import numpy as np
import torch

import keras
from keras import backend as K

from . import config
from . import function
from . import graph
from .interop import KerasModule
from .program import ancestors

__all__ = ['inference_model', 'exported_program', 'traced_program', 'export',
           'split_host_stage']

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
    _check_built(model)
    inputs = [keras.layers.Input(batch_shape=K.int_shape(x), dtype=K.dtype(x))
              for x in model.inputs]
    with function.learning_phase_scope(0):
        outputs = model(inputs if len(inputs) > 1 else inputs[0])
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    return keras.models.Model(inputs, outputs, name=model.name + '_inference')


def _check_built(model):
    """Raises the ValueError of a model without symbolic inputs and outputs."""
    if not getattr(model, 'inputs', None) or not getattr(model, 'outputs', None):
        raise ValueError('Exporting needs a Keras model with symbolic inputs and outputs; %s '
                         'has none. Build it first (give its first layer an input_shape); '
                         'subclassed models are not supported.' % model.name)


def _is_text(x):
    return K.dtype(x) == 'string'


def split_host_stage(model):
    """Cuts a model with text inputs where its host stage ends (docs/ARCHITECTURE.md,
    "Text"): the layers turning its text inputs into numbers (TextVectorization, the
    lookups, Hashing), and the numeric rest.

    # Arguments
        model: a built functional Keras model.

    # Returns
        `(string_stage, numeric_model)`: a model from the text inputs to the numbers the
        host stage makes (None if the model has no text input), and a model from the
        model's numeric inputs and those numbers (in that order; the latter named after the
        layers making them) to its outputs. Both share the model's layers.

    # Raises
        ValueError: for a layer taking text and numbers together, or an output of text.
    """
    from keras.engine.input_layer import InputLayer
    text_inputs = [x for x in model.inputs if _is_text(x)]
    if not text_inputs:
        return None, model
    computed = {id(x): x for x in model.inputs if not _is_text(x)}
    boundary, taken = [], set()
    for depth in sorted(model._nodes_by_depth, reverse=True):
        for node in model._nodes_by_depth[depth]:
            layer = node.outbound_layer
            if isinstance(layer, InputLayer):
                continue
            inputs, outputs = node.input_tensors, node.output_tensors
            if any(_is_text(x) for x in inputs):
                if not all(_is_text(x) for x in inputs):
                    raise ValueError("Layer '%s' takes text and numbers together: torchk "
                                     'cannot cut its model where text becomes numbers.'
                                     % layer.name)
                for output in outputs:
                    if not _is_text(output):
                        stand_in = keras.layers.Input(
                            batch_shape=K.int_shape(output), dtype=K.dtype(output),
                            name=_identifier(layer.name, taken))
                        boundary.append((output, stand_in))
                        computed[id(output)] = stand_in
                continue
            arguments = [computed[id(x)] for x in inputs]
            results = layer(arguments if len(arguments) > 1 else arguments[0],
                            **(node.arguments or {}))
            results = results if isinstance(results, list) else [results]
            computed.update((id(o), r) for o, r in zip(outputs, results))
    text_outputs = [o.name for o in model.outputs if _is_text(o)]
    if text_outputs:
        raise ValueError('The model outputs text (%s), which stays on the host: export the '
                         'model up to its numbers.' % ', '.join(text_outputs))
    string_stage = keras.models.Model(text_inputs, [output for output, _ in boundary],
                                      name=model.name + '_string_stage')
    numeric = keras.models.Model(
        [x for x in model.inputs if not _is_text(x)] + [stand_in for _, stand_in in boundary],
        [computed[id(o)] for o in model.outputs], name=model.name + '_numeric')
    return string_stage, numeric


def string_stage_path(path):
    """Where `export` saves a model's string stage: beside `path` (`model.pt2` ->
    `model.string_stage.keras`)."""
    return os.path.splitext(str(path))[0] + '.string_stage.keras'


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


def _is_index(value):
    return isinstance(value, (int, torch.SymInt)) and not isinstance(value, bool)


def _elementwise(operation, a, b):
    """`operation` on sizes (ints, SymInts) or lists of them, broadcasting a scalar."""
    if isinstance(a, list) and isinstance(b, list):
        return [operation(x, y) for x, y in zip(a, b)]
    if isinstance(a, list):
        return [operation(x, b) for x in a]
    if isinstance(b, list):
        return [operation(a, y) for y in b]
    return operation(a, b)


_ARITHMETIC = {
    '__add__': operator.add, '__radd__': lambda a, b: b + a, 'add': operator.add,
    '__sub__': operator.sub, '__rsub__': lambda a, b: b - a, 'sub': operator.sub,
    '__mul__': operator.mul, '__rmul__': lambda a, b: b * a, 'mul': operator.mul,
    '__floordiv__': operator.floordiv, '__rfloordiv__': lambda a, b: b // a,
    'floor_divide': operator.floordiv,
}
_SAME_VALUES = ('to', 'long', 'int', 'clone', 'detach', 'reshape', 'view', 'flatten',
                'as_tensor', 'type')
_READ_VALUES = ('__int__', '__index__', 'item', 'tolist')


class _SymbolicSizes(torch.overrides.TorchFunctionMode):
    """Keeps the sizes that shape tensors hold symbolic while a program is exported.

    `K.shape(x)` is a tensor made from `x.shape`; code that reads sizes back from it
    (`K.reshape(x, (K.shape(x)[0], 4))`, the output shape of a transposed convolution)
    would get data-dependent values under `torch.export`, which cannot be traced. This mode
    follows tensors made from sizes through indexing, arithmetic, stacking and casts, and
    reading them (`int`, `operator.index`, `item`, `tolist`) returns the symbolic sizes.
    """

    def __init__(self):
        super(_SymbolicSizes, self).__init__()
        self._values = {}

    def _value(self, item):
        if isinstance(item, torch.Tensor):
            found = self._values.get(id(item))
            return None if found is None else found[1]
        return item if _is_index(item) else None

    def _track(self, tensor, value):
        if (isinstance(tensor, torch.Tensor) and value is not None
                and not tensor.is_floating_point()):
            self._values[id(tensor)] = (tensor, value)
        return tensor

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, '__name__', '')
        if name in _READ_VALUES and args and self._value(args[0]) is not None:
            return self._value(args[0])
        result = func(*args, **kwargs)
        return self._track(result, self._symbolic_result(func, name, args))

    def _symbolic_result(self, func, name, args):
        """The sizes `result` holds, or None when it is not a tracked size tensor."""
        if func in (torch.tensor, torch.as_tensor) and args:
            values = args[0]
            if isinstance(values, (list, tuple, torch.Size)) and all(
                    _is_index(v) for v in values) and values:
                return list(values)
            if _is_index(values) or isinstance(values, torch.Tensor):
                return self._value(values)
            return None
        if not args or not isinstance(args[0], torch.Tensor) and name not in _ARITHMETIC:
            if func in (torch.stack, torch.cat) and args:
                values = [self._value(t) for t in args[0]]
                if values and all(v is not None for v in values):
                    return [x for v in values for x in (v if isinstance(v, list) else [v])]
            return None
        if name == '__getitem__':
            value, key = self._value(args[0]), args[1]
            key = key[0] if isinstance(key, tuple) and len(key) == 1 else key
            if isinstance(value, list) and isinstance(key, (int, slice)):
                return value[key]
            return None
        if name in _ARITHMETIC and len(args) == 2:
            a, b = self._value(args[0]), self._value(args[1])
            return None if a is None or b is None else _elementwise(_ARITHMETIC[name], a, b)
        if name in _SAME_VALUES:
            return self._value(args[0])
        return None


class _InferenceModule(torch.nn.Module):
    """Runs a `KerasModule` in eval mode; `forward` takes the inputs by their Keras names,
    and sizes read from shape tensors stay symbolic (`_SymbolicSizes`)."""

    def __init__(self, keras_module):
        super(_InferenceModule, self).__init__()
        self.model = keras_module.eval()

    @classmethod
    def with_inputs(cls, keras_module, names):
        """An instance whose `forward` signature lists `names` (they name the exported
        program's inputs)."""
        source = ('def forward(self, %s):\n    with _SymbolicSizes():\n'
                  '        return self.model(%s)\n') % (
            ', '.join(names), ''.join(name + ', ' for name in names))
        namespace = {'_SymbolicSizes': _SymbolicSizes}
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


def _dynamic_shapes(model, names, static_batch, free_sizes):
    """`torch.export` dynamic shapes: one batch dimension shared by all inputs (unless
    `static_batch`), and each other axis the model leaves unknown: any size from 1 when
    `free_sizes`, else with the range and relations `torch.export` finds (`Dim.AUTO`)."""
    batch = None if static_batch else torch.export.Dim('batch', min=1)
    shapes = {}
    for name, x in zip(names, model.inputs):
        axes = {} if batch is None else {0: batch}
        for axis, size in enumerate(K.int_shape(x)[1:], start=1):
            if size is None:
                axes[axis] = (torch.export.Dim('%s_axis%d' % (name, axis), min=1)
                              if free_sizes else torch.export.Dim.AUTO)
        shapes[name] = axes
    return shapes


def _check_exportable(model):
    """Raises for a layer whose graph computes sizes from values (`K.ctc_decode`).

    # Raises
        ValueError: naming the first such layer.
    """
    for layer in model.layers:
        if hasattr(layer, 'layers'):
            _check_exportable(layer)
        for node in layer._inbound_nodes:
            outputs = [o for o in node.output_tensors if graph.is_symbol(o)]
            recorded, _ = ancestors(outputs, stop={id(x) for x in node.input_tensors})
            if any(getattr(n.fn, '__name__', None) == 'ctc_decode' for n in recorded):
                raise ValueError(
                    "The layer '%s' decodes CTC (K.ctc_decode), whose output sizes depend on "
                    'the values decoded: it cannot be exported. Export the model up to the '
                    'probabilities and decode them at run time.' % layer.name)


@contextlib.contextmanager
def _not_requiring_grad(parameters):
    """Traces see the weights (parameters, and buffers, which are Keras variables too) as
    constants of inference: ONNX's decompositions retrace the program with grad enabled,
    where batch norm's moving statistics must not require gradients. The flags are
    restored afterwards."""
    parameters = [p for p in parameters if p.requires_grad]
    for parameter in parameters:
        parameter.requires_grad_(False)
    try:
        yield
    finally:
        for parameter in parameters:
            parameter.requires_grad_(True)


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
        ValueError: if the model has no symbolic inputs, `static_batch` is not a positive
            integer, a layer decodes CTC (`K.ctc_decode`: sizes that depend on values), or
            an input is text (export its numeric part: `split_host_stage`).
    """
    program, _ = traced_program(model, static_batch)
    return _frozen(program)


def traced_program(model, static_batch=None):
    """`exported_program`'s trace with the model's own weights in its state dict (the
    SavedModel writer saves them as variables, `torchk.tf.function_capture`).

    # Returns
        (the `ExportedProgram`, `{state dict key: Keras variable}`): on a GPU, the program's
        state dict holds CPU copies of the variables the second item names.

    # Raises
        ValueError: as `exported_program`.
    """
    if static_batch is not None and (not isinstance(static_batch, (int, np.integer))
                                     or isinstance(static_batch, bool) or static_batch < 1):
        raise ValueError('static_batch must be a positive integer or None, got %r.'
                         % (static_batch,))
    _check_built(model)
    if any(_is_text(x) for x in model.inputs):
        raise ValueError('The model %s takes text, which torch programs cannot: export its '
                         'numeric part (torchk.export.split_host_stage; export() does it).'
                         % model.name)
    _check_exportable(model)
    names = input_names(model)
    examples = _example_inputs(model, static_batch)
    with _traced_on_the_cpu() as on_the_cpu:
        inference = inference_model(model)
        module = _InferenceModule.with_inputs(KerasModule(inference), names)
        weights = dict(itertools.chain(module.named_parameters(), module.named_buffers()))
        module = on_the_cpu(module)
        with torch.no_grad(), _not_requiring_grad(
                itertools.chain(module.parameters(), module.buffers())):
            try:
                program = _export(module, examples,
                                  _dynamic_shapes(model, names, static_batch, True))
            except torch._dynamo.exc.UserError:
                # the model constrains an unknown axis (a window must fit, two inputs must
                # have equal lengths): let torch.export find the ranges
                program = _export(module, examples,
                                  _dynamic_shapes(model, names, static_batch, False))
    return program, weights


@contextlib.contextmanager
def _traced_on_the_cpu():
    """Runs the trace on the CPU whatever torchk's device: with CPU kernels, whose shapes are
    as general as the model's (cuDNN's bound the batch and fix a GRU's length), into a program
    with CPU weights (`torch.export.passes.move_to_device_pass` moves a loaded one to a GPU).
    Yields `on_the_cpu(module)`, which gives a `KerasModule` (or a module holding one) CPU
    copies of the weights it holds, read by its program at each call; the model's own
    variables stay where they are."""
    device = config.device()
    if device.type == 'cpu':
        yield lambda module: module
        return
    config.set_device('cpu')
    try:
        yield _with_cpu_weights
    finally:
        config.set_device(device)


def _with_cpu_weights(module):
    for submodule in module.modules():
        for name, weight in submodule._parameters.items():
            if weight is not None:
                submodule._parameters[name] = torch.nn.Parameter(
                    weight.detach().cpu(), requires_grad=weight.requires_grad)
        for name, weight in submodule._buffers.items():
            if weight is not None:
                submodule._buffers[name] = weight.detach().cpu()
    return module


def _export(module, examples, dynamic_shapes):
    # scan bodies are traced by dynamo, whose cache would carry the sizes of an earlier
    # export of the same code into this one
    torch._dynamo.reset()
    return torch.export.export(module, tuple(examples), dynamic_shapes=dynamic_shapes)


def export(model, path, opset=None, static_batch=None):
    """Exports a Keras model's inference graph to a file, by its suffix.

    `.pt2`: a `torch.export` program (`torch.export.save`), loaded with
    `torch.export.load(path).module()`, which needs only torch. `.onnx`: an ONNX model
    (`torch.onnx.export(..., dynamo=True)`), run with onnxruntime; its inputs and outputs
    are named after the Keras model's.

    A model with text inputs is exported without its string stage, which is saved beside
    `path` as a `.keras` file (`string_stage_path`): run it with Keras (torchk or
    TensorFlow's), then the exported program on its outputs (and the numeric inputs).

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
    string_stage, model = split_host_stage(model)
    if string_stage is not None:
        from .saving import keras_zip_writer
        keras_zip_writer.save(string_stage, string_stage_path(path), include_optimizer=False)
    program = exported_program(model, static_batch=static_batch)
    if suffix == '.pt2':
        torch.export.save(program, str(path))
        return program
    onnx_program = torch.onnx.export(program, (), dynamo=True, opset_version=opset,
                                     input_names=input_names(model), verbose=False)
    _name_outputs(onnx_program.model.graph, output_names(model))
    onnx_program.save(str(path))
    return program


def _name_outputs(graph, names):
    """Names an ONNX graph's outputs `names`. A value inside the graph may already have
    one of them (torch names values after their ops: a Keras layer `conv2d_2` and the third
    convolution's result): that value is renamed first."""
    values = [value for node in graph for value in node.outputs]
    taken = {value.name for value in values + list(graph.inputs)} | set(graph.initializers)
    outputs = set(map(id, graph.outputs))
    for value in values:
        if value.name in names and id(value) not in outputs:
            index = 1
            while '%s__%d' % (value.name, index) in taken:
                index += 1
            value.name = '%s__%d' % (value.name, index)
            taken.add(value.name)
    for value, name in zip(graph.outputs, names):
        value.name = name
