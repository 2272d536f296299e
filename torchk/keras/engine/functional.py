"""tf.keras 2's functional models over Keras 2.3.1's `Network` (its overrides, in
`torchk.overrides`, put `run_internal_graph`, `get_config_in_tf_keras_form`,
`unique_output_names`, the structured inputs and outputs and Python operators as op layers
on it and on its Keras tensors).

A functional model called on new tensors replays its nodes (`run_internal_graph`). Where
tf.keras' replay differs from Keras 2.3.1's, one function here:
- `replay_node`: each node is called as it was recorded, by `base_layer`'s conventions: a
  node with a `CALL_SPEC` gets its inputs, keyword tensors and mask back; a layer whose
  `call` takes `training` and whose node kept none gets the enclosing call's; the
  `training` a node kept for a layer without that parameter (a nested model called with
  `training=False`) is the context of the layers it calls; a call's nested outputs are the
  node's flat outputs.
- `get_config_in_tf_keras_form`: a node recorded with a `CALL_SPEC` is saved as tf.keras
  saves it (the keyword tensors among the call's arguments), which tf.keras loads, and
  torchk too (`torchk.saving.dialects` reads it back; `torchk.call_spec` is the format).
- `conform_inputs`: the inputs are conformed to the model's `Input`s as tf.keras conforms
  them: a `(batch,)` column to an `Input((1,))` and back, then cast to their dtypes (an eager
  call on `uint8` images of a model whose `Input` is float32).
- `unique_output_names`: the outputs of one layer are named `name`, `name_1`, ... as in
  tf.keras (Keras 2.3.1 repeats the layer's name, so their losses share one log entry).
- structured inputs and outputs: a model made of `inputs` and `outputs` nested in dicts,
  lists and tuples (`keras.Model({'text': a, 'kind': b}, {'score': s})`, a list of layers'
  tuples of outputs) keeps them as `_nested_inputs` and `_nested_outputs`
  (`flat_graph_arguments`), Keras 2.3.1's `Network` the flat lists in `tf.nest`'s order
  (dict entries by sorted key). A call takes the inputs in that structure, or a dict by
  input names (`flatten_to_reference_inputs`), and returns the outputs in theirs
  (`call_with_structures`); `input` and `output` are the structures (`structured_endpoint`);
  its configuration keeps them (`get_config_in_tf_keras_form`, `from_config_with_structures`),
  as tf.keras writes `input_layers` and `output_layers`. Data for `fit`, `evaluate` and
  `predict` (arrays, and dataset elements) is keyed as Keras 2.3.1 reads it
  (`data_by_input_names`, `data_by_output_names`), and so are `compile`'s losses and metrics.
- `operator_as_op_layer`: a Python operator on a Keras tensor of a functional model under
  construction (`2 * inputs + 1`, `x[:, :2]`, `-y`) is a `TFOpLambda` (`SlicingOpLambda`)
  layer of the model, as tf.keras' Keras tensors make one; inside a layer's `call`, a
  recorded step, or Keras' graph of losses it is the backend's op, as before.
"""
import functools
import warnings

import numpy as np
import torch

from keras import backend as K
from keras.engine.base_layer import object_list_uid
from keras.utils.generic_utils import has_arg, to_list, unpack_singleton

from ... import call_spec
from ... import strings
from ... import structure
from ...layers import tf_ops
from ...saving import dialects
from ...tf import tracing
from .base_layer import (CALL_SPEC, current_training, flat_call_outputs, flat_output_masks,
                         in_symbolic_block, is_structured, training_context, unflatten_call)


def _is_flat(nest):
    """A tensor, or a list, tuple or dict of tensors (by name: tf.keras maps a dict given to
    such a model by its keys)."""
    items = nest.values() if isinstance(nest, dict) else nest if isinstance(
        nest, (list, tuple)) else ()
    return not any(isinstance(item, (list, tuple, dict)) for item in items)


def flat_graph_arguments(args, kwargs):
    """`Model(inputs, outputs)`'s arguments with nested inputs and outputs flattened for
    Keras 2.3.1 (in `tf.nest`'s order), and the structures as tf.keras keeps them (a list
    holding one tensor is that tensor).

    # Returns
        `(args, kwargs, structures)`: `structures` is `(inputs, outputs)`, or None when the
        arguments are not a functional model's.
    """
    args, kwargs = list(args), dict(kwargs)
    places = []
    for position, name in enumerate(('inputs', 'outputs')):
        if len(args) > position:
            places.append((args, position))
        elif name in kwargs:
            places.append((kwargs, name))
    if len(places) < 2:
        return args, kwargs, None
    structures = []
    for holder, key in places:
        nest = holder[key]
        if isinstance(nest, list) and len(structure.flatten(nest)) == 1:
            nest = nest[0]
        structures.append(nest)
        if is_structured(nest):
            holder[key] = structure.flatten(nest)
    return args, kwargs, tuple(structures)


def set_structures(model, inputs, outputs):
    """Keeps a functional model's `inputs` and `outputs` as given (`flat_graph_arguments`)."""
    model._nested_inputs = inputs
    model._nested_outputs = outputs


def _input_keys(model):
    """The keys by which a dict given to `model` is read, in the order of its inputs; None
    for a model of nested inputs (its dicts are flattened as they are)."""
    nested = getattr(model, '_nested_inputs', None)
    if isinstance(nested, dict) and _is_flat(nested):
        return sorted(nested)
    if nested is None or _is_flat(nested):
        return list(model.input_names)
    return None


def flatten_to_reference_inputs(model, inputs):
    """A call's `inputs` as the flat list of `model`'s inputs, as tf.keras maps them: a dict
    by the keys of the model's dict of inputs (or by its `Input`s' names, for a model given
    a tensor or a list of them, or when those are the dict's keys), anything else flattened
    in `tf.nest`'s order. Keys the model does not have are ignored with a warning.

    # Raises
        ValueError: for a dict without some of the model's inputs.
    """
    keys = _input_keys(model) if isinstance(inputs, dict) else None
    if keys is None:
        return structure.flatten(inputs)
    if any(key not in inputs for key in keys):
        by_name = list(model.input_names)
        if not all(name in inputs for name in by_name):
            raise ValueError('Model %s takes the inputs %s; the dict it was given has the keys '
                             '%s.' % (model.name, keys, sorted(inputs)))
        keys = by_name
    extra = [key for key in inputs if key not in keys]
    if extra:
        warnings.warn('Input dict contained keys %s which did not match any model input. They '
                      'will be ignored by the model.' % extra, stacklevel=3)
    return [inputs[key] for key in keys]


def nested_like_outputs(model, outputs):
    """`outputs` (Keras 2.3.1's: one tensor or a list) in the structure of `model`'s outputs
    where it has one."""
    nested = getattr(model, '_nested_outputs', None)
    if not is_structured(nested):
        return outputs
    return structure.pack_as(nested, to_list(outputs))


def data_by_input_names(model, x):
    """`fit`/`evaluate`/`predict` data `x` as Keras 2.3.1 reads it for a functional model: a
    dict keyed by the model's input names, or a flat list (see
    `flatten_to_reference_inputs`)."""
    if not getattr(model, '_is_graph_network', False) or not model.inputs:
        return x
    if isinstance(x, dict):
        return dict(zip(model.input_names, flatten_to_reference_inputs(model, x)))
    if is_structured(getattr(model, '_nested_inputs', None)) and isinstance(x, (list, tuple)):
        return structure.flatten(x)
    return x


def data_by_output_names(model, y):
    """Targets `y` as Keras 2.3.1 reads them: a dict keyed by the model's output dict keys
    becomes one keyed by its output names (an output without a target is left out, as Keras
    leaves out the outputs without a loss), or the list of them for a subclassed model not
    compiled yet (Keras compiles it on these targets); targets nested as the outputs are
    flattened."""
    nested = getattr(model, '_nested_outputs', None)
    if not is_structured(nested):
        return y
    if isinstance(y, dict) and isinstance(nested, dict):
        if not model._is_compiled:
            return [y[key] for key in sorted(nested)]
        names = dict(zip(sorted(nested), model.output_names))
        return {names.get(key, key): value for key, value in y.items()}
    if isinstance(y, (list, tuple)):
        return structure.flatten(y)
    return y


def by_output_names(model, argument):
    """A `compile` argument given per output (`loss`, `metrics`, `loss_weights`, ...) keyed
    by the keys of a model's dict of outputs, keyed by its output names instead, which Keras
    2.3.1 reads; other values as they are."""
    nested = getattr(model, '_nested_outputs', None)
    if not isinstance(argument, dict) or not isinstance(nested, dict):
        return argument
    names = dict(zip(sorted(nested), model.output_names))
    return {names.get(key, key): value for key, value in argument.items()}


def call_with_structures(keras_call):
    """Override of `Network.call`: the inputs in the model's structure (or a dict by input names:
    `flatten_to_reference_inputs`), the outputs in theirs (`nested_like_outputs`)."""
    @functools.wraps(keras_call)
    def call(self, inputs, mask=None):
        if not self._is_graph_network:
            return keras_call(self, inputs, mask)
        flat = unpack_singleton(flatten_to_reference_inputs(self, inputs))
        if mask is not None and not K.is_tensor(mask):
            mask = unpack_singleton(flatten_to_reference_inputs(self, mask))
        return nested_like_outputs(self, keras_call(self, flat, mask))
    return call


def compute_mask_with_structures(keras_compute_mask):
    """Override of `Network.compute_mask`: the inputs read as `call_with_structures` reads them;
    the output masks stay Keras 2.3.1's flat list, which its `compile` reads."""
    @functools.wraps(keras_compute_mask)
    def compute_mask(self, inputs, mask):
        if not self._is_graph_network:
            return keras_compute_mask(self, inputs, mask)
        flat = unpack_singleton(flatten_to_reference_inputs(self, inputs))
        if mask is not None and not K.is_tensor(mask):
            mask = unpack_singleton(flatten_to_reference_inputs(self, mask))
        return keras_compute_mask(self, flat, mask)
    return compute_mask


def structured_endpoint(keras_endpoint):
    """Override of the getter of `Network.input` or `Network.output` (`keras_endpoint`, chosen
    by its name): the structure the model was given (`_nested_inputs`, `_nested_outputs`)
    where it is one."""
    attribute = {'input': '_nested_inputs', 'output': '_nested_outputs'}[keras_endpoint.__name__]

    @functools.wraps(keras_endpoint)
    def endpoint(self):
        nested = getattr(self, attribute, None)
        return nested if is_structured(nested) else keras_endpoint(self)
    return endpoint


def _pack_references(nest, flat):
    """`flat` (a list, one item per reference) in the structure of the references `nest`."""
    flat = iter(flat)

    def pack(value):
        if dialects.is_tensor_reference(value):
            return next(flat)
        if isinstance(value, dict):
            packed = {key: pack(value[key]) for key in sorted(value)}
            return {key: packed[key] for key in value}
        return [pack(item) for item in value]
    return pack(nest)


def from_config_with_structures(keras_from_config):
    """Override of `Network.from_config` (the function of the classmethod): `input_layers`
    and `output_layers` nested as tf.keras writes them (a dict of inputs, lists in lists;
    `torchk.saving.dialects` keeps a translated file's as `NESTED_ENDPOINTS`) are read flat,
    and the model keeps their structure."""
    @functools.wraps(keras_from_config)
    def from_config(cls, config, custom_objects=None, **kwargs):  # and safe_mode
        config = dict(config)
        nests = config.pop(dialects.NESTED_ENDPOINTS, {})
        for key in ('input_layers', 'output_layers'):
            nest = nests.get(key, config.get(key))
            if nest is not None and (isinstance(nest, dict) or not all(
                    dialects.is_tensor_reference(item) for item in nest)):
                nests[key] = nest
                config[key] = dialects.flat_tensor_references(nest)
        model = keras_from_config(cls, config, custom_objects, **kwargs)
        if nests:
            inputs = nests.get('input_layers')
            outputs = nests.get('output_layers')
            set_structures(
                model, model.inputs if inputs is None else _pack_references(inputs, model.inputs),
                model.outputs if outputs is None else _pack_references(outputs, model.outputs))
        return model
    return from_config


def conform_inputs(model, inputs):
    """`inputs` (a list, one per model input) conformed to the model's `Input`s as tf.keras
    conforms them: a last axis of size 1 dropped where the `Input` has one axis fewer, or
    added where it has one more and its last is of size 1 (a `(batch,)` column fed to an
    `Input((1,))`); then cast to the `Input`'s dtype."""
    conformed = []
    for x, reference in zip(inputs, model.inputs):
        if x is not None and K.dtype(x) != 'string':
            change = _rank_change(K.int_shape(x), K.int_shape(reference))
            if change:
                x = K.expand_dims(x, -1) if change > 0 else K.squeeze(x, -1)
            if K.dtype(x) != K.dtype(reference):
                x = K.cast(x, K.dtype(reference))
        conformed.append(x)
    return conformed


def _rank_change(shape, reference):
    """+1 (add a last axis of size 1), -1 (drop it) or 0: tf.keras' conforming of a tensor
    of `shape` to an `Input` of shape `reference`."""
    if len(shape) == len(reference) + 1 and shape[-1] == 1:
        return -1
    if len(shape) == len(reference) - 1 and reference[-1] == 1:
        return 1
    return 0


def conform_values(model, inputs):
    """The values (arrays, tensors, text) of an eager call of a functional model as the flat
    list of its inputs (`flatten_to_reference_inputs`), each conformed to its `Input`'s rank
    as `conform_inputs` conforms tensors: text too (`dict(data_frame)`'s columns of strings
    for `Input((1,), dtype='string')`), which placeholders of the values' shapes could not
    conform later."""
    flat = flatten_to_reference_inputs(model, inputs)
    if len(flat) != len(model.inputs):
        return inputs
    conformed = []
    for value, reference in zip(flat, model.inputs):
        if isinstance(value, strings.StringTensor):
            value = strings.as_bytes(value)
        change = (_rank_change(tuple(value.shape), K.int_shape(reference))
                  if isinstance(value, (np.ndarray, torch.Tensor)) else 0)
        if change > 0:
            value = value[..., None]
        elif change < 0:
            value = value[..., 0]
        conformed.append(value)
    return conformed


def replay_node(node, tensors, masks):
    """Calls a node's layer on new tensors as the node recorded the call.

    # Arguments
        node: a Keras `Node`.
        tensors: the new tensors of its input tensors, in their order.
        masks: their masks.

    # Returns
        `(outputs, output masks)`, lists.
    """
    layer = node.outbound_layer
    kwargs = dict(node.arguments or {})
    spec = kwargs.pop(CALL_SPEC, None)
    if spec is None:
        inputs, keywords, mask = unpack_singleton(tensors), {}, unpack_singleton(masks)
    else:
        inputs, keywords, mask = unflatten_call(spec, tensors, masks)
    kwargs.update(keywords)
    if 'mask' not in kwargs and has_arg(layer.call, 'mask'):
        kwargs['mask'] = mask
    training = spec.get('training') if spec else None
    if has_arg(layer.call, 'training'):
        if kwargs.get('training') is None and current_training() is not None:
            kwargs['training'] = current_training()
        training = kwargs.get('training')
    with K.name_scope(layer.name), training_context(training):
        _, outputs = flat_call_outputs(layer.call(inputs, **kwargs))
        output_masks = flat_output_masks(layer.compute_mask(inputs, mask), len(outputs))
        if getattr(layer, 'activity_regularizer', None) is not None:
            with K.name_scope('activity_regularizer'):
                layer.add_loss([layer.activity_regularizer(x) for x in outputs],
                               inputs=tensors)
    if len(output_masks) != len(outputs):
        raise ValueError('Layer %s gives %d output tensors but %d output masks.'
                         % (layer.name, len(outputs), len(output_masks)))
    if all(hasattr(x, '_keras_shape') for x in to_list(inputs)):
        shapes = to_list(layer.compute_output_shape(
            unpack_singleton([x._keras_shape for x in to_list(inputs)])))
        learning_phase = any(getattr(x, '_uses_learning_phase', False) for x in tensors)
        for x, shape in zip(outputs, shapes):
            x._keras_shape = shape
            x._uses_learning_phase = getattr(x, '_uses_learning_phase', False) or learning_phase
    return outputs, output_masks


def run_internal_graph(self, inputs, masks=None):
    """The model's outputs, output masks and output shapes on new `inputs` (a list, one
    tensor per model input) and their `masks`: each node replayed by `replay_node`, in the
    order of their depth; the layers' updates and losses added to the model's, and the
    results cached, as Keras 2.3.1's `Network.run_internal_graph` does."""
    given = inputs
    if masks is None:
        masks = [None] * len(inputs)
    computed = {id(x): (y, mask) for x, y, mask in zip(self.inputs,
                                                        conform_inputs(self, inputs), masks)}
    for depth in sorted(self._nodes_by_depth, reverse=True):
        for node in self._nodes_by_depth[depth]:
            if any(id(x) not in computed for x in node.input_tensors):
                continue
            tensors = [computed[id(x)][0] for x in node.input_tensors]
            outputs, output_masks = replay_node(
                node, tensors, [computed[id(x)][1] for x in node.input_tensors])
            layer = node.outbound_layer
            self.add_update(layer.get_updates_for(tensors), given)
            self.add_update(layer.get_updates_for(None), None)
            self.add_loss(layer.get_losses_for(tensors), given)
            self.add_loss(layer.get_losses_for(None), None)
            for x, y, mask in zip(node.output_tensors, outputs, output_masks):
                computed[id(x)] = (y, mask)
    missing = [x for x in self.outputs if id(x) not in computed]
    if missing:
        raise ValueError('Model %s cannot compute its outputs %s from its inputs.'
                         % (self.name, missing))
    outputs = [computed[id(x)][0] for x in self.outputs]
    output_masks = [computed[id(x)][1] for x in self.outputs]
    output_shapes = ([x._keras_shape for x in outputs]
                     if all(hasattr(x, '_keras_shape') for x in outputs) else None)
    key = object_list_uid(given) + '_' + object_list_uid(masks)
    self._output_tensor_cache[key] = unpack_singleton(outputs)
    self._output_mask_cache[key] = unpack_singleton(output_masks)
    if output_shapes is not None:
        self._output_shape_cache[', '.join(str(x._keras_shape) for x in given)] = (
            unpack_singleton(output_shapes))
        output_shapes = unpack_singleton(output_shapes)
    return unpack_singleton(outputs), unpack_singleton(output_masks), output_shapes


def get_config_in_tf_keras_form(keras_get_config):
    """Wraps `Network.get_config`: its nodes recorded with a `CALL_SPEC` as tf.keras writes
    them (`call_spec.tf_keras_node`), and its `input_layers` and `output_layers` in the
    structure of the model's inputs and outputs."""
    @functools.wraps(keras_get_config)
    def get_config(self):
        config = keras_get_config(self)
        if self._is_graph_network:
            for layer in config['layers']:
                layer['inbound_nodes'] = [call_spec.tf_keras_node(node)
                                          for node in layer['inbound_nodes']]
            for key, nest in (('input_layers', getattr(self, '_nested_inputs', None)),
                              ('output_layers', getattr(self, '_nested_outputs', None))):
                if is_structured(nest):
                    config[key] = structure.pack_as(nest, config[key])
        return config
    return get_config


def unique_output_names(keras_init_graph_network):
    """Wraps `Network._init_graph_network`: a name given to several outputs (a layer's
    outputs, `RNN(return_state=True)`'s) is made unique as tf.keras makes it, the second
    `name_1`, the third `name_2` (skipping names already taken)."""
    @functools.wraps(keras_init_graph_network)
    def _init_graph_network(self, *args, **kwargs):
        keras_init_graph_network(self, *args, **kwargs)
        taken, counts, names = set(), {}, []
        for name in self.output_names:
            proposal = name
            while proposal in taken:
                counts[name] = counts.get(name, 1)
                proposal = '%s_%d' % (name, counts[name])
                counts[name] += 1
            taken.add(proposal)
            names.append(proposal)
        self.output_names = names
    return _init_graph_network


# Python operators of Keras tensors -> (the op's name in tf.keras' op layers, whether the
# tensor is the op's second operand).
_OPERATOR_OPS = {
    '__add__': ('__operators__.add', False), '__radd__': ('__operators__.add', True),
    '__sub__': ('math.subtract', False), '__rsub__': ('math.subtract', True),
    '__mul__': ('math.multiply', False), '__rmul__': ('math.multiply', True),
    '__truediv__': ('math.truediv', False), '__rtruediv__': ('math.truediv', True),
    '__floordiv__': ('compat.v1.floor_div', False),
    '__rfloordiv__': ('compat.v1.floor_div', True),
    '__mod__': ('math.floormod', False), '__rmod__': ('math.floormod', True),
    '__pow__': ('math.pow', False), '__rpow__': ('math.pow', True),
    '__matmul__': ('linalg.matmul', False), '__rmatmul__': ('linalg.matmul', True),
    '__and__': ('math.logical_and', False), '__rand__': ('math.logical_and', True),
    '__or__': ('math.logical_or', False), '__ror__': ('math.logical_or', True),
    '__xor__': ('math.logical_xor', False), '__rxor__': ('math.logical_xor', True),
    '__lt__': ('math.less', False), '__le__': ('math.less_equal', False),
    '__gt__': ('math.greater', False), '__ge__': ('math.greater_equal', False),
    '__neg__': ('math.negative', False), '__abs__': ('math.abs', False),
    '__invert__': ('math.logical_not', False), '__getitem__': ('__operators__.getitem', False),
}


def operator_as_op_layer(symbolic_operator):
    """Override of a Python operator of Keras tensors (`graph.KerasTensor.__add__`, ...,
    `_OPERATOR_OPS`, chosen by the operator's name): on a Keras tensor of a functional model
    under construction it calls a `TFOpLambda` layer (see the module docstring); elsewhere it
    is the backend's op."""
    key, reflected = _OPERATOR_OPS[symbolic_operator.__name__]

    @functools.wraps(symbolic_operator)
    def operator(self, *other):
        if (getattr(self, '_keras_history', None) is not None and tracing.current() is None
                and not in_symbolic_block()):
            arguments = other + (self,) if reflected else (self,) + other
            output = tf_ops.functional_op(key, arguments, {})
            if output is not NotImplemented:
                return output
        return symbolic_operator(self, *other)
    return operator
