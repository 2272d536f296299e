"""`TFOpLambda` and `SlicingOpLambda`: TensorFlow ops that tf.keras saved as layers.

In functional code, tf.keras (2.4 to 2.15) and tf_keras turn a TensorFlow op applied to a
Keras tensor (`x * 2`, `tf.nn.relu6(x)`, `x[:, 0]`, `tf.concat([a, b], -1)`) into a layer
whose config names the op (`{'function': 'math.multiply'}`), and save the op's other
arguments in the layer's inbound node: the op's first argument is the node's input
(`['_CONSTANT_VALUE', -1, value]` when it is a constant), the others are the node's keyword
arguments, where a Keras tensor is `[layer_name, node_index, tensor_index]`, a slice is
`{'start', 'stop', 'step'}` and `...` is `{'class_name': '__ellipsis__'}`.

Keras 2.3.1's `Network.from_config` reads inbound nodes as lists of input tensors only.
Its override `torchk.saving.op_layer_nodes.rewriting_op_layer_nodes` rewrites the inbound
nodes of these two layers into Keras 2.3.1's own form first: every tensor the op uses
becomes an input of the node, and the node's keyword argument `call_structure` keeps the
op's arguments with `{'class_name': '__tensor__', 'index': i}` in place of the i-th input.
Keras 2.3.1 saves and loads that form as it is, so models loaded from tf.keras files save and
load again.

Each op is computed by `torchk.op_table.OPS` (keyed by tf.keras' op name, the table
`torchk.tf` builds its `tf.*` functions from); any other op raises a ValueError naming the
layer and the op.

`functional_op` makes these layers as tf.keras does: a `torchk.tf` op applied to a Keras
tensor of a functional model under construction is a `TFOpLambda` call.
"""
import inspect
import sys

from keras import backend as K
from keras.engine.base_layer import Layer

from .. import graph
from ..saving.op_layer_nodes import TENSOR
from ..op_table import OPS

__all__ = ['TFOpLambda', 'SlicingOpLambda']

_ELLIPSIS = '__ellipsis__'


class TFOpLambda(Layer):
    """A TensorFlow op of a tf.keras functional model, computed with the backend.

    # Arguments
        function: the op's name as tf.keras saves it, without the `tf.` prefix
            (`'math.multiply'`, `'nn.relu6'`, `'__operators__.add'`, `'reshape'`).
        **kwargs: the base layer's arguments (`name`, `trainable`, `dtype`).

    The layer is called on the tensors the op uses, with the keyword argument
    `call_structure`: `{'args': first_argument, 'kwargs': other_arguments}`, where
    `{'class_name': '__tensor__', 'index': i}` stands for the i-th input tensor.

    # Raises
        ValueError: if the op is not one of the ops this module maps.
    """

    def __init__(self, function, **kwargs):
        super(TFOpLambda, self).__init__(**kwargs)
        if function not in OPS:
            raise ValueError(
                'Layer %r (%s) applies the TensorFlow op tf.%s, which torchk does not map; '
                'supported ops: %s. Replace it in the model with a Lambda layer or a custom '
                'layer that computes it.' % (self.name, type(self).__name__, function,
                                             ', '.join(sorted(OPS))))
        self.function = function
        self.supports_masking = True
        self._call_structure = None
        self._input_dtypes = None

    def call(self, inputs, call_structure=None):
        if call_structure is None:
            call_structure = {'args': {'class_name': TENSOR, 'index': 0}, 'kwargs': {}}
        tensors = inputs if isinstance(inputs, list) else [inputs]
        self._call_structure = call_structure
        self._input_dtypes = [K.dtype(t) for t in tensors]
        first = _fill(call_structure['args'], tensors)
        arguments = _fill(call_structure.get('kwargs') or {}, tensors)
        arguments.pop('name', None)
        try:
            return OPS[self.function](first, **arguments)
        except (TypeError, ValueError) as error:
            raise type(error)('Layer %r: tf.%s called with arguments %s: %s'
                              % (self.name, self.function, sorted(arguments), error)) from error

    def compute_output_shape(self, input_shape):
        several = isinstance(input_shape, list)
        shapes = input_shape if several else [input_shape]
        dtypes = self._input_dtypes or [K.floatx()] * len(shapes)
        placeholders = [K.placeholder(shape=shape, dtype=dtype)
                        for shape, dtype in zip(shapes, dtypes)]
        outputs = self.call(placeholders if several else placeholders[0],
                            self._call_structure)
        if isinstance(outputs, list):
            return [K.int_shape(output) for output in outputs]
        return K.int_shape(outputs)

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        config = {'function': self.function}
        base_config = super(TFOpLambda, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


class SlicingOpLambda(TFOpLambda):
    """`tensor[slice_spec]` of a tf.keras functional model (`__operators__.getitem`).

    Slices are saved as `{'start', 'stop', 'step'}` dicts, `...` as
    `{'class_name': '__ellipsis__'}` and `tf.newaxis` as `None`.

    # Arguments
        function: `'__operators__.getitem'`.
        **kwargs: the base layer's arguments.
    """

    def call(self, inputs, call_structure=None):
        return super(SlicingOpLambda, self).call(inputs, _slices(call_structure))


def _slices(structure):
    """`structure` with slice dicts and ellipsis markers as `slice` objects and `Ellipsis`."""
    if isinstance(structure, dict):
        if set(structure) == {'start', 'stop', 'step'}:
            return slice(_slices(structure['start']), _slices(structure['stop']),
                         _slices(structure['step']))
        if structure.get('class_name') == _ELLIPSIS:
            return Ellipsis
        return {key: _slices(value) for key, value in structure.items()}
    if isinstance(structure, list):
        return [_slices(item) for item in structure]
    return structure


def functional_op(key, args, kwargs):
    """`tf.<key>(*args, **kwargs)` as a `TFOpLambda` layer call, where tf.keras makes one: an
    argument is a Keras tensor of a functional model (a layer output or an `Input`), and the
    op is not inside a layer's `call` (there, ops are the layer's own computation). Only
    with the tf.keras facade imported.

    # Returns
        The layer's output, or NotImplemented where the op is computed as it is.
    """
    eager = sys.modules.get('torchk.keras.eager')
    if eager is None or eager.in_layer_call() or not graph.contains_symbol((args, kwargs)):
        return NotImplemented
    tensors = []

    def mark(value):
        if isinstance(value, graph.KerasTensor):
            if getattr(value, '_keras_history', None) is None:
                raise _NotFunctional
            tensors.append(value)
            return {'class_name': TENSOR, 'index': len(tensors) - 1}
        if isinstance(value, slice):
            return {'start': mark(value.start), 'stop': mark(value.stop),
                    'step': mark(value.step)}
        if value is Ellipsis:
            return {'class_name': _ELLIPSIS}
        if isinstance(value, (list, tuple)):
            return [mark(item) for item in value]
        if isinstance(value, dict):
            return {name: mark(item) for name, item in value.items()}
        return value
    try:
        bound = inspect.signature(OPS[key]).bind(*args, **kwargs)
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in bound.signature.parameters.values() if p.name in bound.arguments):
            return NotImplemented
        arguments = {name: mark(value) for name, value in bound.arguments.items()}
    except (TypeError, _NotFunctional):
        return NotImplemented
    first = next(iter(bound.signature.parameters))
    structure = {'args': arguments.pop(first, None), 'kwargs': arguments}
    layer = (SlicingOpLambda if key == '__operators__.getitem' else TFOpLambda)(function=key)
    return layer(tensors if len(tensors) > 1 else tensors[0], call_structure=structure)


class _NotFunctional(Exception):
    """An argument is a symbol of no functional model (recorded by a backend op)."""


def _fill(structure, tensors):
    """`structure` with each tensor marker replaced by its tensor."""
    if isinstance(structure, dict):
        if structure.get('class_name') == TENSOR:
            return tensors[structure['index']]
        return {key: _fill(value, tensors) for key, value in structure.items()}
    if isinstance(structure, list):
        return [_fill(item, tensors) for item in structure]
    return structure
