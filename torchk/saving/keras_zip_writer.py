"""Writes a Keras 2.3.1 model as a `.keras` zip that tf.keras 2.13-2.15, tf_keras and torchk load.

The inverse of `torchk.saving.keras_zip.load`: `config.json` holds the model's configuration in
tf.keras' "saving v3" form (`module`, `class_name`, `config`, `registered_name`,
`build_config`, and the top level's `compile_config`), `metadata.json` the Keras version and
date, and `model.weights.h5` the weights in the per-layer `vars` layout of
`torchk.saving.weights_h5` (group names, sublayers and the optimizer's slot order come from its
tables), with the optimizer's variables in the order a tf.keras 2.11+ optimizer creates them;
the text and categorical layers' saved state goes where tf.keras writes it (their named
variables, and `assets/<group>/vocabulary.txt`).

Keras 2.3.1's layer configurations are mostly tf.keras': the writer renames what tf.keras
names otherwise (`Model` -> `Functional`, the truncated 'normal' of `VarianceScaling` ->
'truncated_normal', optimizer arguments) and refuses, naming the layer, what tf.keras has no
class for (`TorchModule`, torchk's own layers).
"""
import datetime
import functools
import io
import json
import os
import zipfile

import h5py
import numpy as np

from . import atomic_files, op_layer_nodes, optimizer_state, weights_h5
from .. import call_spec
from .keras_zip import ASSETS_DIRECTORY, CONFIG_NAME, WEIGHTS_NAME

METADATA_NAME = 'metadata.json'

# The tf.keras module holding each kind of object, for the `module` key of saving v3.
_LAYERS_MODULE = 'keras.layers'
_OBJECT_MODULES = {'_initializer': 'keras.initializers', '_regularizer': 'keras.regularizers',
                   '_constraint': 'keras.constraints'}

# torchk layers that are not tf.keras classes (torchk's own, or tf.keras' v1 names only).
_NOT_IN_TF_KERAS = ('TorchModule', 'CuDNNLSTM', 'CuDNNGRU')

# Configuration keys that tf.keras added after 2.13, by layer class, with the value at which
# leaving them out computes the same: dropped there, so that every tf.keras 2.13+ reads them.
_KEYS_OF_LATER_TF_KERAS = {('MultiHeadAttention', 'softmax_robust_masking'): False}

# Keras 2.3.1 optimizer arguments that tf.keras 2.11+ optimizers lack, with the value at which
# dropping them computes the same.
_DROPPED_OPTIMIZER_ARGUMENTS = {'decay': (0, 0.0)}


def save(model, filepath, include_optimizer=True, overwrite=True):
    """Saves a Keras 2.3.1 model as a `.keras` zip (tf.keras 2.13+'s "saving v3").

    The file is written beside `filepath` and renamed over it once complete.

    # Arguments
        model: a built Sequential or functional model (subclassed models have no
            configuration to save).
        filepath: the `.keras` path.
        include_optimizer: whether to save the compile configuration and the optimizer's
            state (tf.keras and torchk then load the model compiled, its optimizer restored).
        overwrite: False to ask before replacing an existing file.

    # Raises
        ValueError: naming the layer tf.keras has no class for, the optimizer setting tf.keras'
            optimizers do not take, or a model that is not built.
    """
    filepath = os.fspath(filepath)
    if not overwrite and os.path.isfile(filepath):
        from keras.utils.io_utils import ask_to_proceed_with_overwrite
        if not ask_to_proceed_with_overwrite(filepath):
            return
    if not model.built:
        raise ValueError('Model %r is not built: call it on data or build it before saving '
                         'it to %s.' % (model.name, filepath))
    config = model_config(model)
    compiled = include_optimizer and getattr(model, 'optimizer', None) is not None
    if compiled:
        config['compile_config'] = compile_config(model)
    weights = weights_file(model, include_optimizer=compiled)
    metadata = {'keras_version': _keras_version(),
                'date_saved': datetime.datetime.now().strftime('%Y-%m-%d@%H:%M:%S')}
    with atomic_files.replacing(filepath) as temporary:
        with zipfile.ZipFile(temporary, 'w', zipfile.ZIP_STORED) as archive:
            archive.writestr(METADATA_NAME, json.dumps(metadata))
            archive.writestr(CONFIG_NAME, json.dumps(config, default=_json_value))
            archive.writestr(WEIGHTS_NAME, weights)
            for name, data in asset_files(model).items():
                archive.writestr(name, data)


def saving_keras_zips(save_model):
    """`save_model(model, filepath, overwrite=True, include_optimizer=True)` (Keras 2.3.1's)
    that writes a `.keras` zip for a path ending in `.keras`, as tf.keras 2.13+ does, and
    calls `save_model` for any other target."""
    @functools.wraps(save_model)
    def save_keras_zip_or_other(model, filepath, overwrite=True, include_optimizer=True,
                                *args, **kwargs):
        if isinstance(filepath, (str, os.PathLike)) and os.fspath(
                filepath).lower().endswith('.keras'):
            return save(model, filepath, include_optimizer=include_optimizer,
                        overwrite=overwrite)
        return save_model(model, filepath, overwrite, include_optimizer, *args, **kwargs)
    return save_keras_zip_or_other


def _json_value(value):
    """numpy values of a configuration (a constant of an op layer) as JSON values."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    raise TypeError('Cannot write %r (%s) into a .keras configuration.'
                    % (value, type(value).__name__))


def _keras_version():
    import keras
    return keras.__version__


# ---- Configuration ---------------------------------------------------------------------

def model_config(model):
    """The model's configuration in tf.keras' saving v3 form, without `compile_config`.

    # Raises
        ValueError: naming the layer that tf.keras has no class for.
    """
    _check_every_layer(model)
    return _layer_config(model)


def _check_every_layer(layer):
    """Refuses a model holding a layer tf.keras lacks before any `get_config` runs (a
    layer's own may fail first, saying less)."""
    _check_tf_keras_has(layer)
    for sub in getattr(layer, 'layers', None) or ():
        _check_every_layer(sub)
    for attribute in ('layer', 'forward_layer', 'backward_layer', 'cell'):
        sub = getattr(layer, attribute, None)
        if sub is not None and hasattr(sub, 'get_config'):
            _check_every_layer(sub)
    for cell in getattr(layer, 'cells', None) or ():
        _check_every_layer(cell)


def _module_and_class_name(layer):
    """tf.keras' `module` and `class_name` of a layer: models are `keras.Model`, which
    builds tf.keras' `Functional` from a functional configuration (tf.keras writes its
    private module, which differs between TF versions)."""
    name = type(layer).__name__
    if name in ('Model', 'Functional'):
        return 'keras', 'Model'
    if name == 'Sequential':
        return 'keras', 'Sequential'
    return _LAYERS_MODULE, name


def _check_tf_keras_has(layer):
    import keras.layers
    class_name = type(layer).__name__
    known = getattr(keras.layers, class_name, None) is type(layer) or class_name in (
        'Model', 'Sequential')
    from_torchk = type(layer).__module__.startswith('torchk.')
    if class_name in _NOT_IN_TF_KERAS or (from_torchk and not known):
        raise ValueError('Layer %r is a %s, which tf.keras has no class for: a .keras file '
                         'holding it would not load in TensorFlow\'s Keras. Save the model as '
                         '.h5 (torchk loads it back) or replace the layer.'
                         % (layer.name, class_name))


def _layer_config(layer):
    try:
        inner = layer.get_config()
    except NotImplementedError as e:
        raise ValueError('Layer %r (%s) has no get_config: a subclassed model or layer needs '
                         'one to be saved as .keras.' % (layer.name, type(layer).__name__)
                         ) from e
    module, class_name = _module_and_class_name(layer)
    config = {'module': module, 'class_name': class_name,
              'config': _translate_layer_config(inner, layer), 'registered_name': None}
    if not type(layer).__module__.startswith(('keras.', 'torchk.')):
        config['module'] = type(layer).__module__
        config['registered_name'] = type(layer).__name__
    build_config = _build_config(layer)
    if build_config is not None:
        config['build_config'] = build_config
    return config


def _translate_layer_config(config, layer):
    from keras.engine.network import Network
    config = dict(config)
    if isinstance(layer, Network) and layer._is_graph_network:
        layers = {sub.name: sub for sub in layer._layers}  # a Sequential's InputLayer too
        translated = []
        for entry in config['layers']:
            entry = dict(entry)
            nested = _layer_config(layers[entry['config']['name']])
            nested.update({k: v for k, v in entry.items() if k not in ('class_name', 'config')})
            if entry['class_name'] in _OP_LAYERS:
                nested['inbound_nodes'] = [_op_layer_node(node, entry['name'])
                                           for node in entry['inbound_nodes']]
            elif entry['class_name'] in call_spec.CALL_TENSOR_KEYWORDS:
                nested['inbound_nodes'] = [_keyword_node(node, entry['class_name'])
                                           for node in entry['inbound_nodes']]
            translated.append(nested)
        config['layers'] = translated
        return config
    for key in ('layer', 'backward_layer', 'cell'):
        sub = getattr(layer, key, None)
        if isinstance(config.get(key), dict) and sub is not None:
            config[key] = _nested_config(sub, config[key])
    if isinstance(config.get('cells'), list) and hasattr(layer, 'cells'):
        config['cells'] = [_nested_config(cell, entry)
                           for cell, entry in zip(layer.cells, config['cells'])]
    for (class_name, key), default in _KEYS_OF_LATER_TF_KERAS.items():
        if type(layer).__name__ == class_name and config.get(key, default) == default:
            config.pop(key, None)
    for key, value in list(config.items()):
        for suffix, module in _OBJECT_MODULES.items():
            if key.endswith(suffix) and isinstance(value, dict):
                config[key] = _object_config(value, module)
    return config


def _keyword_node(node, class_name):
    """A Keras 2.3.1 node calling `class_name` on a list of tensors as tf.keras calls it: the
    first tensor as the input, the others by the keywords of
    `call_spec.CALL_TENSOR_KEYWORDS` (`MultiHeadAttention`'s `value`, `key`,
    `attention_mask`)."""
    first, others = node[0], node[1:]
    keywords = call_spec.CALL_TENSOR_KEYWORDS[class_name]
    if len(others) > len(keywords):
        raise ValueError('A %s node has %d input tensors, more than tf.keras\' %d call '
                         'arguments: %r' % (class_name, len(node), len(keywords) + 1, node))
    kwargs = dict(node[-1][3]) if len(node[-1]) > 3 else {}
    kwargs.update((keyword, list(entry[:3])) for (keyword, _), entry in zip(keywords, others))
    return [list(first[:3]) + [kwargs]]


_OP_LAYERS = ('TFOpLambda', 'SlicingOpLambda')


def _op_layer_node(node, name):
    """An op layer's Keras 2.3.1 node (each input tensor, the op's arguments in the
    `call_structure` keyword) as tf.keras saves it: the op's first argument with its tensors
    in place, the other arguments on each of them (the inverse of
    `op_layer_nodes.keras2_node`)."""
    structure = node[0][3][op_layer_nodes.CALL_STRUCTURE]
    references = [list(entry[:3]) for entry in node]

    def fill(data):
        if isinstance(data, dict) and data.get('class_name') == op_layer_nodes.TENSOR:
            return list(references[data['index']])
        if isinstance(data, list):
            return [fill(item) for item in data]
        if isinstance(data, dict):
            return {key: fill(value) for key, value in data.items()}
        return data

    first = fill(structure['args'])
    kwargs = fill(structure.get('kwargs') or {})
    if isinstance(structure['args'], dict) and structure['args'].get(
            'class_name') == op_layer_nodes.TENSOR:
        return first + [kwargs]
    if not isinstance(first, list):
        return [op_layer_nodes.CONSTANT_VALUE, -1, first, kwargs]
    references = _references(first, structure['args'])
    if not references:
        raise ValueError('Op layer %r has no input tensor in its first argument (%r), which '
                         'tf.keras\' node form needs.' % (name, structure['args']))
    for reference in references:
        reference.append(kwargs)
    return first


def _references(filled, structure):
    """The tensor references of a filled first argument (the lists, to extend): tf.keras
    gives each the op's other arguments."""
    if isinstance(structure, dict) and structure.get('class_name') == op_layer_nodes.TENSOR:
        return [filled]
    if isinstance(structure, list):
        return [found for item, part in zip(filled, structure)
                for found in _references(item, part)]
    return []


def _nested_config(layer, saved):
    """A layer held in another's configuration (`Bidirectional`'s `layer`, an RNN's
    `cell`): Keras 2.3.1 saved it as `{'class_name', 'config'}`."""
    config = _layer_config(layer)
    config['config'] = _translate_layer_config(saved['config'], layer)
    config.pop('build_config', None)
    return config


def _object_config(obj, module):
    config = dict(obj.get('config') or {})
    if obj['class_name'] == 'VarianceScaling' and config.get('distribution') == 'normal':
        config['distribution'] = 'truncated_normal'  # Keras 2.3.1's 'normal' is truncated
    return {'module': module, 'class_name': obj['class_name'], 'config': config,
            'registered_name': None}


def _build_config(layer):
    """`{'input_shape': ...}` from the layer's first call, as tf.keras records it."""
    from keras.engine.input_layer import InputLayer
    if isinstance(layer, InputLayer) or not layer.built or not layer._inbound_nodes:
        return None
    shapes = layer._inbound_nodes[0].input_shapes
    shapes = [list(shape) for shape in shapes]
    return {'input_shape': shapes[0] if len(shapes) == 1 else shapes}


def compile_config(model):
    """The model's `compile_config` (tf.keras 2.13+): the optimizer as a tf.keras 2.11+
    optimizer, the loss and metrics as `compile` took them.

    # Raises
        ValueError: for an optimizer setting tf.keras' optimizers do not take, or a loss or
            metric that is neither a name nor a Keras object.
    """
    return {'optimizer': optimizer_config(model.optimizer),
            'loss': _serialize_training_object(model.loss, 'keras.losses'),
            'metrics': _serialize_training_object(getattr(model, '_compile_metrics', None),
                                                  'keras.metrics'),
            'loss_weights': getattr(model, 'loss_weights', None),
            'weighted_metrics': _serialize_training_object(
                getattr(model, '_compile_weighted_metrics', None), 'keras.metrics'),
            'run_eagerly': None, 'steps_per_execution': None, 'jit_compile': None}


def optimizer_config(optimizer):
    """A Keras 2.3.1 optimizer as tf.keras 2.11+ serializes its optimizer of the same class.

    # Raises
        ValueError: for an optimizer tf.keras' optimizers do not compute as Keras 2.3.1's
            (`decay`, Nadam's `schedule_decay`, a learning rate schedule).
    """
    class_name = type(optimizer).__name__
    if class_name not in weights_h5.OPTIMIZER_SLOT_LOOPS:
        raise ValueError('The optimizer %s has no tf.keras 2.11+ equivalent whose state maps '
                         'onto it (there are %s); save with include_optimizer=False.'
                         % (class_name, ', '.join(weights_h5.OPTIMIZER_SLOT_LOOPS)))
    config = dict(optimizer.get_config())
    for key, computes_the_same in _DROPPED_OPTIMIZER_ARGUMENTS.items():
        if key in config:
            value = config.pop(key)
            if value not in computes_the_same:
                raise ValueError('The optimizer %s has %s=%r, which tf.keras 2.11+ optimizers '
                                 'do not take; save with include_optimizer=False.'
                                 % (class_name, key, value))
    if isinstance(config.get('learning_rate'), dict):
        raise ValueError('The optimizer %s has the learning rate schedule %s, which torchk '
                         'does not write to .keras files; save with include_optimizer=False.'
                         % (class_name, config['learning_rate'].get('class_name')))
    config['learning_rate'] = float(config.pop('lr', config.get('learning_rate')))
    config.update(name=class_name, is_legacy_optimizer=False)
    return {'module': 'keras.optimizers', 'class_name': class_name, 'config': config,
            'registered_name': None}


def _serialize_training_object(value, module):
    """A loss or metric as `compile` took it: names stay names, functions become their name,
    Keras objects their saving v3 form; lists and dicts of them alike."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return [_serialize_training_object(v, module) for v in value]
    if isinstance(value, dict):
        return {k: _serialize_training_object(v, module) for k, v in value.items()}
    if hasattr(value, 'get_config'):
        return {'module': module, 'class_name': type(value).__name__,
                'config': value.get_config(), 'registered_name': None}
    if callable(value) and hasattr(value, '__name__'):
        return value.__name__
    raise ValueError('Cannot save the loss or metric %r to a .keras file: it is neither a '
                     'name, a function nor a Keras object.' % (value,))


# ---- Weights ---------------------------------------------------------------------------

def weights_file(model, include_optimizer=True):
    """The bytes of `model.weights.h5`: the model's weights in the `vars` layout, and, where
    `include_optimizer`, the optimizer's variables as tf.keras 2.11+ orders them.

    # Returns
        bytes (an HDF5 file image).
    """
    from keras import backend as K
    groups = []
    _network_groups(model, '', groups)
    weights = [w for _, group in groups for w in group]
    values = dict(zip((id(w) for w in weights), K.batch_get_value(weights)))
    buffer = io.BytesIO()
    with h5py.File(buffer, 'w') as root:
        root.create_group('vars')
        for path, group in groups:
            _write_vars(root, path, [values[id(w)] for w in group])
        for layer, path in _state_layers(model, ''):
            variables = layer.save_own_variables()
            for state_path in weights_h5.saved_state_paths(layer, path):
                group = root.require_group(state_path + '/vars')
                for name, value in variables.items():
                    group.create_dataset(name, data=np.asarray(value))
        if include_optimizer:
            trainable = {id(w) for w in model.trainable_weights}
            ordered = [w for w in weights if id(w) in trainable]
            _write_vars(root, 'optimizer', _optimizer_variables(model, ordered))
    return buffer.getvalue()


def _write_vars(root, path, values):
    group = root.require_group(path + '/vars')
    for i, value in enumerate(values):
        group.create_dataset(str(i), data=np.asarray(value))


def asset_files(model):
    """The `.keras` zip's asset files of the model's layers with saved state (their
    vocabularies, `weights_h5`'s "saved state"): `{member name: bytes}`."""
    files = {}
    for layer, path in _state_layers(model, ''):
        assets = layer.save_assets() if hasattr(layer, 'save_assets') else {}
        for state_path in weights_h5.saved_state_paths(layer, path):
            files.update(('%s/%s/%s' % (ASSETS_DIRECTORY, state_path, name), data)
                         for name, data in assets.items())
    return files


def _state_layers(network, path):
    """`(layer, group path)` of the layers with saved state, nested models' included."""
    from keras.engine.network import Network
    layers_path = (path + '/layers') if path else 'layers'
    for layer, child in zip(network.layers,
                            weights_h5._child_paths(layers_path, network.layers, {})):
        if isinstance(layer, Network):
            yield from _state_layers(layer, child)
        elif hasattr(layer, 'save_own_variables'):
            yield layer, child


def _network_groups(network, path, groups):
    from keras.engine.network import Network
    layers_path = (path + '/layers') if path else 'layers'
    for layer, child in zip(network.layers,
                            weights_h5._child_paths(layers_path, network.layers, {})):
        if isinstance(layer, Network):
            _network_groups(layer, child, groups)
        elif layer.weights and not hasattr(layer, 'save_own_variables'):
            groups.extend(_layer_groups(layer, child))


def _layer_groups(layer, path):
    """`(group path, weights)` of a layer, in the order `weights_h5` reads them back."""
    from keras.layers import RNN, Bidirectional, StackedRNNCells
    from keras.layers.wrappers import Wrapper
    if isinstance(layer, Bidirectional):
        return [group for attribute in ('forward_layer', 'backward_layer')
                for group in _layer_groups(getattr(layer, attribute),
                                           '%s/%s' % (path, attribute))]
    if isinstance(layer, Wrapper):
        return _layer_groups(layer.layer, path + '/layer')
    if isinstance(layer, RNN):
        return _layer_groups(layer.cell, path + '/cell')
    if isinstance(layer, StackedRNNCells):
        return [group for cell, child in zip(
            layer.cells, weights_h5._child_paths(path + '/cells', layer.cells, {}))
            for group in _layer_groups(cell, child)]
    sublayers = weights_h5.SUBLAYERS.get(type(layer).__name__)
    weights = layer.weights
    if sublayers:
        size, rest = divmod(len(weights), len(sublayers))
        if rest:
            raise ValueError('Layer %r (%s) has %d weights, not a number its %d sublayers '
                             'share equally.' % (layer.name, type(layer).__name__,
                                                 len(weights), len(sublayers)))
        return [('%s/%s' % (path, attribute), weights[i * size:(i + 1) * size])
                for i, attribute in enumerate(sublayers)]
    return [(path, weights)]


def _optimizer_variables(model, trainable):
    """The optimizer's variables as tf.keras 2.11+ creates them: the iteration count, then
    each loop of `weights_h5.OPTIMIZER_SLOT_LOOPS` over the trainable weights (in tf.keras'
    order, `trainable`). A Keras optimizer that never ran gets zeros, as a fresh one has."""
    from keras import backend as K
    optimizer = model.optimizer
    class_name = type(optimizer).__name__
    config = optimizer.get_config()
    loops = weights_h5.OPTIMIZER_SLOT_LOOPS[class_name](config)
    state = K.batch_get_value(optimizer.weights)
    collected = getattr(model, '_collected_trainable_weights', None) or model.trainable_weights
    slots = {}
    if state:
        groups = optimizer_state.OPTIMIZER_SLOTS[class_name](config)
        expected = 1 + len(groups) * len(collected)
        if len(state) != expected:
            raise ValueError('The optimizer %s has %d variables where %d are expected (an '
                             'iteration count and %d slot kinds for %d trainable weights).'
                             % (class_name, len(state), expected, len(groups), len(collected)))
        for k, group in enumerate(groups):
            start = 1 + k * len(collected)
            for name in group:
                slots[name] = {id(w): v for w, v in
                               zip(collected, state[start:start + len(collected)])}
    iterations = np.asarray(state[0] if state else 0, dtype='int64')
    values = [iterations]
    for loop in loops:
        for weight in trainable:
            for slot in loop:
                saved = slots.get(slot, {}).get(id(weight))
                values.append(saved if saved is not None else
                              np.zeros(K.int_shape(weight), dtype=K.dtype(weight)))
    return values
