"""SavedModel directories written by tf.keras 2.x / tf_keras, loaded without TensorFlow.

`model.save('dir')` of TensorFlow 2.0-2.15 (and tf_keras) writes `dir/saved_model.pb` (a
`SavedModel`: TensorFlow graph functions plus the object graph of the saved Python objects),
`dir/keras_metadata.pb` (TF 2.5+: each Keras layer's configuration, keyed by its node in the
object graph; before 2.5 the same JSON was in the object graph's `SavedUserObject.metadata`)
and `dir/variables/` (a TensorFlow checkpoint, read by `tensor_bundle`).

`load` rebuilds the model from the root's `model_config` with Keras 2.3.1 (through
`keras.engine.saving.model_from_config`, so every dialect translation and safety check of
configurations applies), then follows the checkpoint's object graph from the root to each
layer, its `variables` list (tf.keras' weight order) and each variable's checkpoint key, and
sets the weights layer by layer as Keras' HDF5 loader does. The optimizer's state is found the
same way, from the root's `optimizer` node. The graph functions, signatures and assets are
never run.

The text and categorical layers keep their state outside Keras weights (`weights_h5`'s
"saved state"): a lookup layer's vocabulary is the lookup table TensorFlow initializes from
two constants of the graph (its keys and values, found through the object graph: the table's
`_initialize` function and the constants it captures, read as data); its IDF weights and a
`Discretization`'s summary are variables of the checkpoint.
"""
import collections
import json
import os
import re
import warnings

import numpy as np

from . import protos, validation
from .optimizer_state import restore_optimizer_state
from .training_config import compile_arguments
from .errors import ModelFileError
from .object_graph import VALUE_ATTRIBUTE as _VALUE_ATTRIBUTE, ObjectGraph

# The state variables of the text and categorical layers: their object's name in the graph,
# and their name in the layer's `load_own_variables` store.
_STATE_VARIABLES = {'idf_weights': 'idf_weights', 'summary': '0'}
# TensorFlow's DataType numbers of the constants a lookup table is initialized from.
_CONSTANT_DTYPES = {7: None, 9: '<i8', 3: '<i4'}


def load(path, custom_objects=None, compile=True):
    """Loads a Keras model from a SavedModel directory written by tf.keras 2.x / tf_keras.

    # Arguments
        path: the directory (holding `saved_model.pb` and `variables/`).
        custom_objects: dict mapping names to custom classes or functions, as for
            `keras.models.load_model`.
        compile: whether to compile the model with its saved training configuration and
            restore the optimizer's state where it maps onto Keras 2.3.1's optimizer.

    # Returns
        A Keras 2.3.1 model with the saved weights.

    # Raises
        ModelFileError: if the directory is missing a part, a part is damaged, or the saved
            weights disagree with the architecture.
        ValueError: if the configuration cannot be built (as `model_from_config` raises).
    """
    from keras import backend as K
    from keras.engine import saving

    path = os.fspath(path)
    if not os.path.isfile(os.path.join(path, 'saved_model.pb')):
        raise ModelFileError(path, 'not a SavedModel directory: it has no saved_model.pb')
    keras_nodes, source = _keras_nodes(path)
    root = keras_nodes.get(0)
    if root is None or 'model_config' not in root or _is_subclassed_config(root['model_config']):
        raise ModelFileError(source, 'the SavedModel holds no Keras model configuration: a '
                             'subclassed model or a TensorFlow module, whose architecture is '
                             'Python code that the file does not hold')
    if not isinstance(root['model_config'], dict) or 'class_name' not in root['model_config']:
        raise ModelFileError(source, 'the model configuration is not a Keras configuration (a '
                             'JSON object with a class_name)')
    training_config = root.get('training_config')
    if training_config is not None and not isinstance(training_config, dict):
        raise ModelFileError(source, 'the training configuration is not a JSON object')
    graph = ObjectGraph(os.path.join(path, 'variables', 'variables'))
    model = saving.model_from_config(root['model_config'], custom_objects=custom_objects)
    saved_weights = _layer_weights(model, graph, keras_nodes, root.get('keras_version'))
    K.batch_set_value([(weight, value) for weight, value, _ in saved_weights])
    _load_layer_states(model, graph, keras_nodes, path)
    if compile and not training_config:
        warnings.warn('No training configuration found in save file: the model was *not* '
                      'compiled. Compile it manually.')
    elif compile:
        model.compile(**compile_arguments(training_config, model, custom_objects))
        names, values = _optimizer_state(graph, saved_weights)
        if names:
            restore_optimizer_state(model, names, values)
    return model


def _is_subclassed_config(config):
    """Whether a model configuration is a subclassed model's (its init arguments, as tf.keras
    generates it: no layers)."""
    return isinstance(config, dict) and isinstance(config.get('config'), dict) and (
        'layers' not in config['config'])


def _keras_nodes(path):
    """({object graph node id: decoded Keras metadata}, the file read) from
    `keras_metadata.pb`, or else from the object graph of `saved_model.pb` (TensorFlow < 2.5)."""
    metadata_path = os.path.join(path, 'keras_metadata.pb')
    if os.path.isfile(metadata_path):
        metadata = _parse(protos.SavedMetadata, metadata_path)
        nodes = {node.node_id: (node.metadata, node.node_path) for node in metadata.nodes}
        source = metadata_path
    else:
        source = os.path.join(path, 'saved_model.pb')
        saved_model = _parse(protos.SavedModel, source)
        if len(saved_model.meta_graphs) != 1:
            raise ModelFileError(source, 'a Keras SavedModel has one meta graph, this one %d'
                                 % len(saved_model.meta_graphs))
        objects = saved_model.meta_graphs[0].object_graph_def.nodes
        nodes = {i: (node.user_object.metadata, 'node %d' % i) for i, node in enumerate(objects)
                 if node.user_object.identifier.startswith('_tf_keras')
                 and node.user_object.metadata}
    decoded = {}
    for node_id, (text, where) in nodes.items():
        try:
            value = json.loads(text, object_hook=_decode_sequences)
        except (ValueError, RecursionError) as e:
            raise ModelFileError(source, 'the Keras metadata of %s is not valid JSON (%s)' % (
                where, e)) from e
        if not isinstance(value, dict):
            raise ModelFileError(source, 'the Keras metadata of %s is not a JSON object' % where)
        decoded[node_id] = value
    return decoded, source


def _decode_sequences(value):
    """Plain lists (as in tf.keras' `.h5` files) for the tuples and shapes that its SavedModel
    metadata writes as {"class_name": "__tuple__" or "TensorShape", "items": [...]}."""
    if value.get('class_name') in ('__tuple__', 'TensorShape') and set(value) == {
            'class_name', 'items'} and isinstance(value['items'], list):
        return value['items']
    return value


def _parse(message_class, path):
    with open(path, 'rb') as f:
        data = f.read()
    message = message_class()
    try:
        message.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError, whose module varies by runtime
        raise ModelFileError(path, 'not a valid %s protocol buffer (%s)' % (
            message_class.DESCRIPTOR.name, e)) from e
    return message


def _saved_layers(graph, keras_nodes):
    """{layer name: its node id} of the root's layers (children `layer-0`, `layer-1`, ...)."""
    layers = {}
    for local_name, node_id in graph.children(0).items():
        if re.fullmatch(r'layer-\d+', local_name):
            metadata = keras_nodes.get(node_id)
            if metadata is None or not isinstance(metadata.get('name'), str):
                raise ModelFileError(graph.path, 'the model\'s %s (node %d) has no Keras '
                                     'metadata naming it' % (local_name, node_id))
            layers[metadata['name']] = node_id
    return layers


def _named_variables(graph, layer, node_id, children):
    """The variable nodes of a layer saved without a `variables` list (tf.keras' adapted
    preprocessing layers: `Normalization` keeps `mean`, `variance` and `count` as the layer
    object's own children): one child per Keras weight, by the weight's short name."""
    names = [weight.name.split('/')[-1].split(':')[0] for weight in layer.weights]
    missing = [name for name in names if name not in children]
    if missing:
        raise ModelFileError(graph.path, 'layer %r (node %d) has no variables list, nor '
                             'children %s for its weights (its children: %s)' % (
                                 layer.name, node_id, missing, sorted(children)))
    return [children[name] for name in names]


def _layer_weights(model, graph, keras_nodes, keras_version):
    """[(Keras weight, saved value, saved variable node id)] for every weight of the model,
    from the saved layer of the same name, its values in tf.keras' order converted as
    Keras' HDF5 loader converts them."""
    from keras.engine.saving import preprocess_weights_for_loading

    saved_layers = _saved_layers(graph, keras_nodes)
    result = []
    loaded = set()
    for layer in model.layers:
        if not layer.weights or hasattr(layer, 'load_own_variables'):
            continue  # no weights, or saved state (_load_layer_states)
        if layer.name not in saved_layers:
            raise ModelFileError(graph.path, 'the model\'s layer %r has weights but the '
                                 'checkpoint has no layer of that name' % layer.name)
        node_id = saved_layers[layer.name]
        loaded.add(layer.name)
        children = graph.children(node_id)
        if 'variables' in children:
            variable_nodes = graph.items(children['variables'])
        else:
            variable_nodes = _named_variables(graph, layer, node_id, children)
        variables = [graph.variable(v) for v in variable_nodes]
        values = [graph.bundle.read(key) for key, _ in variables]
        values = preprocess_weights_for_loading(layer, values, keras_version, 'tensorflow')
        if len(values) != len(layer.weights):
            raise ModelFileError(graph.path, 'layer %r has %d weights but the checkpoint has '
                                 '%d for it' % (layer.name, len(layer.weights), len(values)))
        same_count = len(variable_nodes) == len(values)
        for i, (weight, value) in enumerate(zip(layer.weights, values)):
            expected = tuple(int(d) for d in weight.shape)
            if tuple(value.shape) != expected:
                raise ModelFileError(graph.path, 'layer %r: its weight %d has the shape %s but '
                                     'the checkpoint\'s%s is %s' % (
                                         layer.name, i, expected,
                                         ' (%s)' % variables[i][1] if same_count else '',
                                         value.shape))
            source = variable_nodes[i] if same_count else None
            result.append((weight, value, source))
    stateful = {layer.name for layer in model.layers if hasattr(layer, 'load_own_variables')}
    for name, node_id in saved_layers.items():
        variables = graph.children(node_id).get('variables')
        if name not in loaded | stateful and variables is not None and graph.items(variables):
            raise ModelFileError(graph.path, 'the checkpoint has weights for a layer %r, which '
                                 'the model does not have' % name)
    return result


def _optimizer_state(graph, saved_weights):
    """The optimizer's saved variables, named as tf.keras names them in `.h5` files, with
    each slot's weight given by its Keras 2.3.1 name, found through the object graph.

    Legacy optimizers (OptimizerV2) list their slots as (original variable node, slot name,
    slot variable node) references; the optimizers of TF 2.11+ keep every variable in their
    `_variables` list (the iteration count first), each slot named
    `<optimizer>/<slot>/<variable name>`. A LossScaleOptimizer's node (mixed_float16) holds
    its inner optimizer's variables and slots as its own, their names scoped by the `tf.cond`
    that created them (`cond_1/SGD/iter`), and a `loss_scale` child with the scale and its
    count of finite steps (`loss_scale/current_loss_scale`, `loss_scale/good_steps`).

    # Returns
        (names, values), both empty if the file has no optimizer.
    """
    optimizer_id = graph.children(0).get('optimizer')
    if optimizer_id is None:
        return [], []
    weight_names = {node: weight.name.split(':')[0]
                    for weight, _, node in saved_weights if node is not None}
    full_names = [(graph.variable(node)[1], name) for node, name in weight_names.items()]
    counts = collections.Counter(full_name for full_name, _ in full_names)
    # A name two variables share (layers of one name in nested models) maps to neither: the
    # slots are then matched by order, as tf.keras created them.
    by_full_name = {full_name: name for full_name, name in full_names if counts[full_name] == 1}
    optimizer = graph.node(optimizer_id)
    children = graph.children(optimizer_id)
    if '_variables' in children:
        variable_nodes = graph.items(children['_variables'])
    else:
        variable_nodes = [node for node in children.values()
                          if any(a.name == _VALUE_ATTRIBUTE for a in graph.node(node).attributes)]
    names, values = [], []
    for node in variable_nodes:
        key, full_name = graph.variable(node)
        full_name = _without_cond_scope(full_name)
        parts = full_name.split('/')
        weight = '/'.join(parts[2:])
        if len(parts) > 2 and weight in by_full_name:
            full_name = '/'.join(parts[:2] + [by_full_name[weight]])
        names.append(full_name + ':0')
        values.append(graph.bundle.read(key))
    for slot in optimizer.slot_variables:
        if slot.original_variable_node_id not in weight_names:
            raise ModelFileError(graph.path, 'the optimizer has a %r slot for node %d, which '
                                 'is no weight of the model' % (
                                     slot.slot_name, slot.original_variable_node_id))
        key, full_name = graph.variable(slot.slot_variable_node_id)
        names.append('%s/%s/%s:0' % (_without_cond_scope(full_name).split('/')[0],
                                     weight_names[slot.original_variable_node_id],
                                     slot.slot_name))
        values.append(graph.bundle.read(key))
    loss_scale = children.get('loss_scale')
    if loss_scale is not None:
        for name, node in sorted(graph.children(loss_scale).items()):
            names.append('loss_scale/%s:0' % name)
            values.append(graph.bundle.read(graph.variable(node)[0]))
    return names, values


def _without_cond_scope(full_name):
    """A variable's name without the `cond/` or `cond_<n>/` scope of the `tf.cond` in which
    a LossScaleOptimizer had its inner optimizer create it."""
    return re.sub(r'^cond(_\d+)?/', '', full_name)


def _load_layer_states(model, graph, keras_nodes, path):
    """Sets the saved state (vocabulary, IDF weights, summary) of the model's text and
    categorical layers (see the module docstring)."""
    layers = [layer for layer in model.layers if hasattr(layer, 'load_own_variables')]
    if not layers:
        return
    saved_layers = _saved_layers(graph, keras_nodes)
    objects = None
    for layer in layers:
        if layer.name not in saved_layers:
            raise ModelFileError(graph.path, 'the checkpoint has no layer %r, whose state (%s) '
                                 'the model needs' % (layer.name, type(layer).__name__))
        node = saved_layers[layer.name]
        children = graph.children(node)
        nodes = [node] + [children[name] for name in getattr(layer, 'saved_sublayers', ())
                          if name in children]
        store = {}
        for state_node in nodes:
            state_children = graph.children(state_node)
            if 'lookup_table' in state_children and hasattr(layer, 'load_table'):
                objects = objects or _SavedObjects(path)
                layer.load_table(*objects.table(state_children['lookup_table'], layer.name))
            for child, key in _STATE_VARIABLES.items():
                if child in state_children and key not in store:
                    store[key] = graph.bundle.read(graph.variable(state_children[child])[0])
        layer.load_own_variables(store)


class _SavedObjects(object):
    """The object graph and graph constants of `saved_model.pb`, for the lookup tables."""

    def __init__(self, path):
        self.path = os.path.join(path, 'saved_model.pb')
        saved_model = _parse(protos.SavedModel, self.path)
        if len(saved_model.meta_graphs) != 1:
            raise ModelFileError(self.path, 'a Keras SavedModel has one meta graph, this one %d'
                                 % len(saved_model.meta_graphs))
        meta_graph = saved_model.meta_graphs[0]
        self.nodes = meta_graph.object_graph_def.nodes
        self.constants = {node.name: node for node in meta_graph.graph_def.node
                          if node.op == 'Const'}

    def _children(self, node_id, what):
        if not 0 <= node_id < len(self.nodes):
            raise ModelFileError(self.path, '%s refers to object %d, which the object graph '
                                 'lacks' % (what, node_id))
        return {child.local_name: child.node_id for child in self.nodes[node_id].children}

    def table(self, node_id, layer_name):
        """(keys, values) of the lookup table `node_id`: the two constants its initializer
        captures (`capture_1`, `capture_2`), as numpy arrays.

        # Raises
            ModelFileError: if the table is initialized otherwise (from a vocabulary file).
        """
        what = 'the lookup table of layer %r' % layer_name
        initialize = self._children(node_id, what).get('_initialize')
        trace = None if initialize is None else self._children(initialize, what).get('trace_0')
        if trace is None:
            raise ModelFileError(self.path, '%s has no initializer function' % what)
        captures = self._children(trace, what)
        operations = [self.nodes[captures[name]].constant.operation
                      for name in ('capture_1', 'capture_2') if name in captures
                      and 0 <= captures[name] < len(self.nodes)]
        if len(captures) != 2 or len(operations) != 2 or not all(
                op in self.constants for op in operations):
            raise ModelFileError(self.path, '%s is not initialized from two constants (its '
                                 'keys and values) but from %s; torchk does not read '
                                 'vocabulary files of SavedModels' % (what, sorted(captures)))
        return tuple(self._constant(op, what) for op in operations)

    def _constant(self, name, what):
        attributes = {entry.key: entry.value for entry in self.constants[name].attr}
        tensor = attributes['value'].tensor if 'value' in attributes else None
        if tensor is None or tensor.dtype not in _CONSTANT_DTYPES:
            raise ModelFileError(self.path, '%s: the constant %r is not text or integers'
                                 % (what, name))
        count = 1
        for dim in tensor.tensor_shape.dim:
            count *= max(int(dim.size), 0)
        dtype = _CONSTANT_DTYPES[tensor.dtype]
        if dtype is None:
            values = list(tensor.string_val)
            validation.charge(sum(map(len, values)) + 64 * len(values),
                              '%s (%d strings)' % (what, len(values)))
            value = np.empty(len(values), dtype=object)
            value[:] = values
        elif tensor.tensor_content:
            value = np.frombuffer(tensor.tensor_content, dtype=dtype).astype(np.int64)
        else:
            value = np.asarray(tensor.int64_val if tensor.dtype == 9 else tensor.int_val,
                               dtype=np.int64)
        if len(value) == 1 and count > 1:  # TensorFlow stores a constant of one value once
            value = np.repeat(value, count)
        if len(value) != count:
            raise ModelFileError(self.path, '%s: the constant %r holds %d values for a shape of '
                                 '%d' % (what, name, len(value), count))
        return value
