"""tf.keras 2's functional models over Keras 2.3.1's `Network` (its overrides, in
`torchk.overrides`, put `run_internal_graph` and `get_config_in_tf_keras_form` on it).

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
- `conform_inputs`: the inputs are cast to the dtypes of the model's `Input`s, as tf.keras
  casts them (an eager call on `uint8` images of a model whose `Input` is float32).
- `unique_output_names`: the outputs of one layer are named `name`, `name_1`, ... as in
  tf.keras (Keras 2.3.1 repeats the layer's name, so their losses share one log entry).
"""
import functools

from keras import backend as K
from keras.engine.base_layer import object_list_uid
from keras.utils.generic_utils import has_arg, to_list, unpack_singleton

from ... import call_spec
from ... import structure
from .base_layer import CALL_SPEC, current_training, training_context, unflatten_call


def conform_inputs(model, inputs):
    """`inputs` (a list, one per model input) cast to the dtypes of the model's inputs."""
    return [x if x is None or K.dtype(x) == K.dtype(reference) else K.cast(x, K.dtype(reference))
            for x, reference in zip(inputs, model.inputs)]


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
        outputs = structure.flatten(layer.call(inputs, **kwargs))
        output_masks = layer.compute_mask(inputs, mask)
        output_masks = ([None] * len(outputs) if output_masks is None
                        else to_list(output_masks))
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
    them (`call_spec.tf_keras_node`)."""
    @functools.wraps(keras_get_config)
    def get_config(self):
        config = keras_get_config(self)
        if self._is_graph_network:
            for layer in config['layers']:
                layer['inbound_nodes'] = [call_spec.tf_keras_node(node)
                                          for node in layer['inbound_nodes']]
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
