"""Model files of every Keras 2 dialect, translated into what Keras 2.3.1 deserializes.

Most Keras 2 models were saved by TensorFlow's Keras 2: `tf.keras` in TF 2.0-2.15 and the
`tf_keras` package since TF 2.16. Their configurations use class names, keys and serialized
forms that multi-backend Keras 2.3.1 does not know. This module rewrites a saved model
configuration (and training configuration) into Keras 2.3.1's own before Keras reads it; the
layers themselves are then built by Keras 2.3.1's deserializer, unchanged.

The rewriting is data: `LAYER_KEY_RULES` (by layer class name and configuration key),
`CLASS_NAMES`, `OBJECT_CLASS_NAMES` and `OPTIMIZER_KEY_RULES`, each entry with the tf.keras
version that introduced what it translates. A key is mapped to its Keras 2.3.1 meaning; a
value that would change what the model computes, and that Keras 2.3.1 cannot express, raises
a ValueError naming the layer.

`torchk.saving.h5` installs it on Keras' loaders.

Lambda layers store their function as marshalled bytecode, which only the Python version that
wrote it can load. Any Lambda's function can be supplied instead through `custom_objects`,
under the Lambda layer's name: `load_model(path, custom_objects={'lambda_1': fn})`.
"""
import base64
import codecs
import contextvars
import copy
import inspect
import marshal
import re
import warnings

import numpy as np

from . import safe_mode

DROP = object()
"""What a rule's action returns to remove the key from the configuration."""

ALL_LAYERS = '*'

_RNN_LAYERS = ('RNN', 'SimpleRNN', 'GRU', 'LSTM', 'ConvLSTM2D', 'CuDNNLSTM', 'CuDNNGRU')
_CONV_LAYERS = ('Conv1D', 'Conv2D', 'Conv3D', 'Conv2DTranspose', 'Conv3DTranspose',
                'SeparableConv1D', 'SeparableConv2D', 'DepthwiseConv2D')
_MODELS = ('Model', 'Functional', 'Sequential')

# Configurations nested in a layer's configuration, translated as layers.
_NESTED_LAYER_KEYS = ('layer', 'backward_layer', 'cell')


def _name(layer):
    config = layer.get('config')
    return layer.get('name') or (config.get('name') if isinstance(config, dict) else None)


def _invalid(layer, key, value, why):
    return ValueError('Layer %r (%s) was saved with %s=%r, %s.'
                      % (_name(layer), layer['class_name'], key, value, why))


def _drop_if(*defaults):
    """Drops the key when its value is one that Keras 2.3.1 behaves as; raises otherwise."""
    def action(value, layer, key):
        if value in defaults:
            return DROP
        raise _invalid(layer, key, value, 'which Keras 2.3.1 cannot compute (it computes %s)'
                       % ' or '.join('%s=%r' % (key, d) for d in defaults))
    return action


def _rename(new_key):
    def action(value, layer, key):
        layer['config'][new_key] = value
        return DROP
    return action


def _single_axis(value, layer, key):
    if not isinstance(value, list):
        return value
    if len(value) == 1:
        return value[0]
    raise _invalid(layer, key, value, 'several axes, where Keras 2.3.1 normalizes over one')


def _plain_dtype(value, layer, key):
    """A dtype policy (`{'class_name': 'Policy', 'config': {'name': 'float32'}}`) as its dtype.

    A mixed policy (`mixed_float16`, `mixed_bfloat16`: float32 variables, computations in the
    half type) is dropped: the layer follows the global policy, float32 unless mixed precision
    is turned on. `translate_model_config` warns once per model about such layers."""
    if not isinstance(value, dict):
        return value
    name = value['config']['name']
    if name in MIXED_POLICIES:
        _MIXED_POLICY_LAYERS.get().append((_name(layer), name))
        return DROP
    return name


def _mirrored_backward_layer(value, layer, key):
    """`Bidirectional`'s `backward_layer`: dropped when it is the copy of `layer` running
    backwards that Keras 2.3.1 makes itself."""
    forward = dict(_object_config(layer['config']['layer']))
    backward = dict(_object_config(value))
    for config in (forward, backward):
        config.pop('name', None)
        config.pop('go_backwards', None)
    if forward == backward:
        return DROP
    raise _invalid(layer, key, _object_class_name(value),
                   'a backward layer configured unlike the forward one')


def _lambda_function(value, layer, key):
    """Checks that a Lambda's marshalled function loads on this Python, once the safe-mode
    gate has let it through (so that refused bytes never reach `marshal`)."""
    if layer['config'].get('function_type') == 'lambda':
        safe_mode.check_lambda(layer['config'], _name(layer))
        _check_bytecode(value, layer)
    return value


# (class names, key, tf.keras version that introduced the key or form, action)
LAYER_KEY_RULES = [
    (ALL_LAYERS, 'dtype', '2.1', _plain_dtype),
    (('InputLayer',), 'ragged', '2.0', _drop_if(False)),
    (('InputLayer',), 'optional', '2.15', _drop_if(False)),
    (('InputLayer',), 'type_spec', '2.3', _drop_if(None)),
    (('InputLayer',), 'batch_shape', 'Keras 3', _rename('batch_input_shape')),
    (_CONV_LAYERS, 'groups', '2.3', _drop_if(1)),
    (_RNN_LAYERS, 'time_major', '2.0', _drop_if(False)),
    (_RNN_LAYERS, 'zero_output_for_mask', '2.0', _drop_if(False)),
    (('BatchNormalization',), 'axis', '2.0', _single_axis),
    (('BatchNormalization',), 'renorm', '2.0', _drop_if(False)),
    (('BatchNormalization',), 'renorm_clipping', '2.0', _drop_if(None)),
    (('BatchNormalization',), 'renorm_momentum', '2.0', lambda value, layer, key: DROP),
    (('BatchNormalization',), 'virtual_batch_size', '2.0', _drop_if(None)),
    (('BatchNormalization',), 'adjustment', '2.0', _drop_if(None)),
    # Fused or not, and synchronized over one replica, the maths are Keras 2.3.1's.
    (('BatchNormalization',), 'fused', '2.0', lambda value, layer, key: DROP),
    (('BatchNormalization',), 'synchronized', '2.12', lambda value, layer, key: DROP),
    (('Embedding',), 'sparse', '2.14', _drop_if(False)),
    (('Bidirectional',), 'backward_layer', '2.0', _mirrored_backward_layer),
    (('Lambda',), 'module', '2.2', lambda value, layer, key: DROP),
    (('Lambda',), 'output_shape_module', '2.2', lambda value, layer, key: DROP),
    (('Lambda',), 'function', '2.0', _lambda_function),
]

# Layer class names that are another Keras 2.3.1 class, with the version that renamed them.
CLASS_NAMES = {
    'Functional': ('Model', '2.4'),
}

# tf.keras' class names of initializers, regularizers and constraints, as Keras 2.3.1's
# (class name, configuration function), with the version that introduced them.
_SAME = None
OBJECT_CLASS_NAMES = {
    'GlorotUniform': ('glorot_uniform', _SAME, '2.0'),
    'GlorotNormal': ('glorot_normal', _SAME, '2.0'),
    'HeUniform': ('he_uniform', _SAME, '2.0'),
    'HeNormal': ('he_normal', _SAME, '2.0'),
    'LecunUniform': ('lecun_uniform', _SAME, '2.0'),
    'LecunNormal': ('lecun_normal', _SAME, '2.0'),
    'L1': ('L1L2', lambda config: {'l1': config.get('l1', 0.01), 'l2': 0.0}, '2.3'),
    'L2': ('L1L2', lambda config: {'l1': 0.0, 'l2': config.get('l2', 0.01)}, '2.3'),
}


def _variance_scaling(config, owner):
    """tf.keras 2 names Keras 2.3.1's truncated 'normal' distribution 'truncated_normal'."""
    config = dict(config)
    distribution = config.get('distribution')
    if distribution == 'truncated_normal':
        config['distribution'] = 'normal'
    elif distribution not in ('normal', 'uniform', None):
        raise ValueError('Layer %r has a VarianceScaling initializer with distribution=%r, '
                         'which Keras 2.3.1 does not draw (it has "normal", truncated, and '
                         '"uniform").' % (owner, distribution))
    return config


_OBJECT_KEY_SUFFIXES = ('_initializer', '_regularizer', '_constraint')
_ACTIVATION_KEYS = ('activation', 'recurrent_activation')


def _object_class_name(obj):
    return obj['class_name']


def _object_config(obj):
    return obj.get('config', {})


def _translate_object(obj, owner):
    """An initializer, regularizer, constraint or activation, serialized by any Keras 2, as
    Keras 2.3.1 serializes it: `{'class_name', 'config'}` with Keras 2.3.1's class name, or
    the name of a function. tf.keras 2.13+ adds `module` and `registered_name`."""
    if not isinstance(obj, dict) or 'class_name' not in obj:
        return obj
    class_name = obj['class_name']
    config = obj.get('config')
    if class_name == 'function' or isinstance(config, str):
        return config  # an activation saved as {'class_name': 'function', 'config': 'relu'}
    config = dict(config or {})
    if class_name in OBJECT_CLASS_NAMES:
        class_name, translate, _ = OBJECT_CLASS_NAMES[class_name]
        if translate is not _SAME:
            config = translate(config)
    if class_name == 'VarianceScaling':
        config = _variance_scaling(config, owner)
    return {'class_name': class_name, 'config': config}


def translate_model_config(config, custom_objects=None):
    """Translates a saved model configuration into Keras 2.3.1's.

    # Arguments
        config: the configuration (`{'class_name': ..., 'config': ...}`) of a model or layer,
            as any Keras 2 saved it; not modified.
        custom_objects: the `custom_objects` of the load; a Lambda whose layer name is one of
            its keys gets that function.

    # Returns
        A new configuration that Keras 2.3.1 deserializes.

    # Raises
        ValueError: naming the layer, for a setting that Keras 2.3.1 cannot compute, and for a
            Lambda whose function cannot be loaded on this Python.
    """
    mixed = []
    token = _MIXED_POLICY_LAYERS.set(mixed)
    try:
        translated = _translate_layer(copy.deepcopy(config), custom_objects or {})
    finally:
        _MIXED_POLICY_LAYERS.reset(token)
    if mixed:
        _warn_mixed_policy(mixed)
    return translated


def _translate_layer(layer, custom_objects):
    if not isinstance(layer, dict) or 'class_name' not in layer:
        return layer
    for key in ('module', 'registered_name', 'build_config', 'compile_config',
                'shared_object_id'):
        layer.pop(key, None)
    if layer['class_name'] in CLASS_NAMES:
        layer['class_name'] = CLASS_NAMES[layer['class_name']][0]
    config = layer.get('config')
    if isinstance(config, list):  # a Sequential saved by Keras 2.0-2.2
        layer['config'] = [_translate_layer(item, custom_objects) for item in config]
        return layer
    if not isinstance(config, dict):
        return layer
    name = _name(layer)
    if layer['class_name'] in _MODELS or 'layers' in config:
        _translate_model(layer, custom_objects)
    for key in _NESTED_LAYER_KEYS:
        if isinstance(config.get(key), dict):
            config[key] = _translate_layer(config[key], custom_objects)
    if isinstance(config.get('cells'), list):
        config['cells'] = [_translate_layer(cell, custom_objects) for cell in config['cells']]
    for key in list(config):
        if key.endswith(_OBJECT_KEY_SUFFIXES) or key in _ACTIVATION_KEYS:
            config[key] = _translate_object(config[key], name)
    if layer['class_name'] == 'Lambda' and callable(custom_objects.get(name)):
        config['function_type'] = 'function'
        config['function'] = name
    for classes, key, _, action in LAYER_KEY_RULES:
        if key in config and (classes == ALL_LAYERS or (
                layer['class_name'] in classes and not _torchk_layer_takes(layer, key))):
            value = action(config[key], layer, key)
            if value is DROP:
                del config[key]
            else:
                config[key] = value
    return layer


def _torchk_layer_takes(layer, key):
    """Whether the class deserializing `layer` is a `torchk.layers` layer (replacing or
    extending Keras 2.3.1's) that takes `key` itself: the rules translate for Keras 2.3.1's
    own classes."""
    import keras.layers
    cls = getattr(keras.layers, layer['class_name'], None)
    return (cls is not None and cls.__module__.startswith('torchk.')
            and key in inspect.signature(cls.__init__).parameters)


def _translate_model(model, custom_objects):
    config = model['config']
    config['layers'] = [_translate_layer(layer, custom_objects) for layer in config['layers']]
    classes = {_name(layer): layer['class_name'] for layer in config['layers']}
    for layer in config['layers']:
        if 'inbound_nodes' in layer:
            layer['inbound_nodes'] = [_translate_node(node, layer, classes)
                                      for node in layer['inbound_nodes']]
    for key in ('input_layers', 'output_layers'):
        if key in config:
            flat = flat_tensor_references(config[key])
            if flat != config[key] and not is_tensor_reference(config[key]):
                config.setdefault(NESTED_ENDPOINTS, {})[key] = config[key]
            config[key] = flat


# The key under which a translated functional configuration keeps `input_layers` and
# `output_layers` as tf.keras nested them (a dict of inputs, lists in lists), for the
# tf.keras facade's models (torchk/keras/engine/functional.py); Keras 2.3.1 ignores it.
NESTED_ENDPOINTS = '_torchk_nested_endpoints'


def is_tensor_reference(value):
    """Whether `value` is a configuration's reference to a tensor, `[layer, node, tensor]`."""
    return isinstance(value, list) and bool(value) and isinstance(value[0], str)


def flat_tensor_references(tensors):
    """A model's inputs or outputs as Keras 2.3.1's list of `[layer, node, tensor]`:
    tf.keras 2.4+ saves one tensor as a bare triple, and nested inputs or outputs (dicts,
    lists in lists) nested, flattened here in `tf.nest`'s order (dict entries by sorted
    key)."""
    if is_tensor_reference(tensors):
        return [tensors]
    if isinstance(tensors, dict):
        return [ref for key in sorted(tensors) for ref in flat_tensor_references(tensors[key])]
    return [ref for item in tensors for ref in flat_tensor_references(item)]


# The node argument with which torchk.keras records a call whose keyword arguments hold
# tensors (torchk/keras/engine/base_layer.py): where each of the node's input tensors goes,
# {'inputs': template, 'keywords': {name: template}, 'mask': template, 'training': bool},
# a template being the argument's nesting with each tensor replaced by its index.
CALL_SPEC = '_torchk_call'

# Layers whose call takes tensors by keyword in tf.keras and as one input list in Keras 2:
# after the first argument, the keywords in their order in the list, each with the keyword
# whose tensor it defaults to when absent (tf.keras' `key` defaults to `value`).
CALL_TENSOR_KEYWORDS = {
    'MultiHeadAttention': (('value', None), ('key', 'value'), ('attention_mask', None)),
}


def call_template(value, is_tensor, flat):
    """A call argument's template for `CALL_SPEC`: `value`'s nesting (lists, tuples, dicts)
    with each tensor replaced by its index in `flat`, to which it is appended.

    # Raises
        ValueError: for a leaf that is neither a tensor (`is_tensor`) nor None."""
    if value is None:
        return None
    if is_tensor(value):
        flat.append(value)
        return len(flat) - 1
    if isinstance(value, (list, tuple)):
        return [call_template(v, is_tensor, flat) for v in value]
    if isinstance(value, dict):
        return {k: call_template(v, is_tensor, flat) for k, v in value.items()}
    raise ValueError('an argument mixes tensors and constants (%r); torchk records tensors, '
                     'and lists and dicts of them.' % (value,))


def call_filled(template, flat):
    """The argument that `template` (`call_template`'s) stands for, its tensors from
    `flat`."""
    if isinstance(template, list):
        return [call_filled(t, flat) for t in template]
    if isinstance(template, dict):
        return {k: call_filled(t, flat) for k, t in template.items()}
    return None if template is None else flat[template]


def listed_keyword_tensors(class_name, keywords):
    """The tensors that a `class_name` layer takes by keyword in tf.keras, popped from the
    dict `keywords`, as `(keyword, tensor)` in their order in Keras 2's input list
    (`CALL_TENSOR_KEYWORDS`), up to the last one given; a missing one is its default's
    tensor, or None (the caller raises)."""
    table = CALL_TENSOR_KEYWORDS.get(class_name, ())
    given = {k: keywords.pop(k) for k, _ in table if k in keywords}
    given = {k: v for k, v in given.items() if v is not None}
    last = max([i for i, (k, _) in enumerate(table) if k in given], default=-1)
    return [(keyword, given.get(keyword, given.get(default)))
            for keyword, default in table[:last + 1]]


# Layers whose nodes another module rewrites (they keep tf.keras' form here).
_OWN_NODE_FORM = ('TFOpLambda', 'SlicingOpLambda')


def _translate_node(node, layer, classes):
    """One inbound node, as Keras 2.3.1 reads it: a list of `[layer, node, tensor, kwargs]`
    whose kwargs, on the last entry, hold no tensors.

    tf.keras 2.4+ writes the call's other tensors into the kwargs (`{'value': ['x', 0, 0]}`);
    `CALL_TENSOR_KEYWORDS` says where they go in the input list. Keras 3 writes a node as
    `{'args': [...], 'kwargs': {...}}` with `__keras_tensor__` objects."""
    if layer['class_name'] in _OWN_NODE_FORM:
        return node
    if isinstance(node, dict):
        node = _node_from_keras3(node)
    if _holds_constant(node):
        raise ValueError('Layer %r (%s) was called on a constant (tf.keras saved %r); Keras 2 '
                         'layers are called on tensors.' % (_name(layer), layer['class_name'],
                                                            node))
    entries = _flat_entries(node)
    if not entries:
        return node
    kwargs = {}
    for entry in entries:
        if len(entry) > 3:
            kwargs.update(entry[3])
    tensors = [list(e[:3]) for e in entries]
    listed = listed_keyword_tensors(layer['class_name'], kwargs)
    for keyword, tensor in listed:
        if not _is_tensor_ref(tensor, classes):
            raise ValueError('Layer %r (%s) was called without the tensor %r, which Keras 2 '
                             'layers take in their input list before %r.'
                             % (_name(layer), layer['class_name'], keyword, listed[-1][0]))
        tensors.append(tensor)
    keywords = {k: kwargs.pop(k) for k in sorted(kwargs) if _holds_tensor_ref(kwargs[k], classes)}
    if keywords:
        tensors, kwargs[CALL_SPEC] = _call_spec(layer, tensors, keywords, classes)
    return [t + [{}] for t in tensors[:-1]] + [tensors[-1] + [kwargs]]


def _call_spec(layer, tensors, keywords, classes):
    """tf.keras' node of a call with tensors among its keyword arguments (the endpoint-layer
    pattern `layer(logits, targets=...)`), as torchk.keras records it: all the tensors as
    the node's inputs, `CALL_SPEC` saying which is which.

    # Returns
        `(input tensor references, call spec)`.

    # Raises
        ValueError: without torchk.keras (multi-backend Keras 2.3.1 takes tensors only as a
            layer's inputs), or if an argument mixes tensors and constants."""
    from keras.engine import base_layer
    if not getattr(base_layer.Layer.__call__, '_torchk_tf_keras', False):
        raise ValueError('Layer %r (%s) was called with tensors as its arguments %s; Keras '
                         '2.3.1 passes tensors to a layer only as its inputs: load the model '
                         'with torchk.keras (tf.keras on torchk), which records such calls.'
                         % (_name(layer), layer['class_name'], sorted(keywords)))
    flat = list(tensors)

    def template(value):
        try:
            return call_template(value, lambda v: _is_tensor_ref(v, classes), flat)
        except ValueError as e:
            raise ValueError('Layer %r (%s): %s' % (_name(layer), layer['class_name'], e)) from e
    spec = {'inputs': 0 if len(tensors) == 1 else list(range(len(tensors))),
            'keywords': {k: template(v) for k, v in keywords.items() if k != 'mask'}}
    if 'mask' in keywords:
        spec['mask'] = template(keywords['mask'])
    return flat, spec


def tf_keras_node(node):
    """A node that torchk.keras recorded with `CALL_SPEC` (tensors among the call's keyword
    arguments), as tf.keras writes it: the first argument's tensors, each with the keyword
    arguments, tensors in place (the inverse of `_call_spec`); other nodes as they are."""
    if not node or len(node[-1]) < 4 or CALL_SPEC not in node[-1][3]:
        return node
    kwargs = dict(node[-1][3])
    spec = kwargs.pop(CALL_SPEC)
    references = [list(entry[:3]) for entry in node]

    def fill(template):
        return call_filled(template, references)
    kwargs.update((k, fill(t)) for k, t in spec['keywords'].items())
    if 'mask' in spec:
        kwargs['mask'] = fill(spec['mask'])
    if 'training' in spec:
        kwargs['training'] = spec['training']
    inputs = fill(spec['inputs'])
    if _is_entry(inputs):
        return [inputs + [kwargs]]
    if not all(_is_entry(ref) for ref in inputs):
        raise ValueError('A call whose first argument nests tensors deeper than one list '
                         'cannot be written as tf.keras writes it: %r.' % (node,))
    return [ref + [kwargs] for ref in inputs]


def _node_from_keras3(node):
    """A Keras 3 node (`{'args': [...], 'kwargs': {...}}`) as a tf.keras one."""
    args = _keras3_tensor_ref(node.get('args', []))
    kwargs = _keras3_tensor_ref(node.get('kwargs', {}))
    entries = _flat_entries(args)
    if not entries:
        return []
    return [e[:3] for e in entries[:-1]] + [entries[-1][:3] + [kwargs]]


def _keras3_tensor_ref(value):
    if isinstance(value, dict) and value.get('class_name') == '__keras_tensor__':
        return list(value['config']['keras_history'])
    if isinstance(value, list):
        return [_keras3_tensor_ref(v) for v in value]
    if isinstance(value, dict):
        return {k: _keras3_tensor_ref(v) for k, v in value.items()}
    return value


def _flat_entries(node):
    """The `[layer, node, tensor(, kwargs)]` entries of a node, nested lists flattened."""
    if _is_entry(node):
        return [node]
    entries = []
    for item in node:
        entries.extend(_flat_entries(item) if isinstance(item, list) else [])
    return entries


def _holds_constant(node):
    if isinstance(node, list) and node and node[0] == '_CONSTANT_VALUE':
        return True
    return isinstance(node, list) and any(_holds_constant(item) for item in node)


def _is_entry(value):
    return (isinstance(value, list) and 3 <= len(value) <= 4 and isinstance(value[0], str)
            and isinstance(value[1], int) and isinstance(value[2], int))


def _is_tensor_ref(value, classes):
    return _is_entry(value) and len(value) == 3 and value[0] in classes


def _holds_tensor_ref(value, classes):
    if _is_tensor_ref(value, classes):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor_ref(v, classes) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor_ref(v, classes) for v in value.values())
    return False


def _check_bytecode(function, layer):
    """Raises a ValueError naming the Lambda layer if its marshalled function does not load
    on this Python (the file was written by another Python version)."""
    code = function[0] if isinstance(function, (list, tuple)) else function
    try:
        raw = codecs.decode(code.encode('ascii'), 'base64')
        marshal.loads(raw)
    except (ValueError, EOFError, TypeError, UnicodeEncodeError, base64.binascii.Error) as e:
        raise ValueError(
            'Lambda layer %r stores its function as Python bytecode that this Python cannot '
            'load (%s: %s); the file was probably saved by another Python version. Supply '
            'the function instead, under the layer\'s name: load_model(path, '
            'custom_objects={%r: function}) (also for model_from_json and model_from_config).'
            % (_name(layer), type(e).__name__, e, _name(layer))) from e


# ---- Mixed precision policies (tf.keras 2.1+) and the `.keras` zip's configuration (2.13+) ----

# Dtype policies whose variables are float32 and whose computations are in the half type.
MIXED_POLICIES = ('mixed_float16', 'mixed_bfloat16')

# The (layer name, policy) of the layers `_plain_dtype` found with a mixed policy, in the
# translation under way.
_MIXED_POLICY_LAYERS = contextvars.ContextVar('mixed_policy_layers')


def _warn_mixed_policy(layers):
    """Warns that the layers saved with a mixed policy compute in float32, unless mixed
    precision is on (`torchk.mixed_precision`): they then follow the global policy."""
    from .. import mixed_precision
    if mixed_precision.global_policy().name in MIXED_POLICIES:
        return
    policies = sorted({policy for _, policy in layers})
    warnings.warn('%d layers of the model (%s) were saved with the %s dtype policy: the model '
                  'computes in float32 until mixed precision is turned on '
                  '(torchk.mixed_precision.set_global_policy(%r) before loading).'
                  % (len(layers), ', '.join(name for name, _ in layers[:3])
                     + (', ...' if len(layers) > 3 else ''), ' and '.join(policies),
                     policies[0]))


# The keys of a `.keras` zip's `compile_config` (tf.keras 2.13+, "saving v3") as the keys of
# the training configuration of an HDF5 file; keys absent here do not change the training.
COMPILE_CONFIG_KEYS = {
    'optimizer': 'optimizer_config',
    'loss': 'loss',
    'metrics': 'metrics',
    'weighted_metrics': 'weighted_metrics',
    'loss_weights': 'loss_weights',
}


def training_config_from_compile_config(compile_config):
    """A `.keras` zip's `compile_config` as the `training_config` that `compile_arguments`
    reads: the optimizer saved as an object or by name, the other keys renamed."""
    training_config = {new: compile_config.get(old) for old, new in COMPILE_CONFIG_KEYS.items()}
    optimizer = training_config['optimizer_config']
    if isinstance(optimizer, str):
        training_config['optimizer_config'] = {'class_name': optimizer, 'config': {}}
    return training_config


# Optimizer wrappers whose training is their inner optimizer's (with the version that
# introduced each name): dynamic loss scaling skips no step of a float32 model.
LOSS_SCALE_OPTIMIZERS = {
    'LossScaleOptimizer': '2.4',
    'LossScaleOptimizerV3': '2.11',
}


def _inner_optimizer(config):
    """The optimizer configuration that a loss scale optimizer's configuration wraps."""
    while config.get('class_name', '').split('>')[-1] in LOSS_SCALE_OPTIMIZERS:
        options = config.get('config', {})
        config = options.get('inner_optimizer') or options.get('optimizer')
        if not isinstance(config, dict):
            raise ValueError('The saved loss scale optimizer has no inner optimizer (%r).'
                             % (options,))
    return config


# ---- Training configuration ------------------------------------------------------------

# The tf.keras optimizer settings that Keras 2.3.1's optimizers lack and torchk.keras'
# compute.
_FACADE_COMPUTES = ('weight_decay', 'momentum', 'centered', 'global_clipnorm')


def _optimizer_drop_if(*defaults):
    def action(value, name, key):
        if value in defaults:
            return DROP
        raise ValueError('The saved %s optimizer has %s=%r, which Keras 2.3.1 optimizers do '
                         'not compute; load the model %swith compile=False and compile it with '
                         'a Keras optimizer.' % (
                             name, key, value,
                             'with torchk.keras.models.load_model, whose tf.keras optimizers '
                             'compute it, or ' if key in _FACADE_COMPUTES else ''))
    return action


def _learning_rate(value, name, key):
    if isinstance(value, dict):
        raise ValueError('The saved %s optimizer has the learning rate schedule %s, which '
                         'Keras 2.3.1 optimizers do not take; load the model with '
                         'torchk.keras.models.load_model, whose tf.keras optimizers take it, '
                         'or with compile=False, compile it with a Keras optimizer and '
                         'schedule the rate with keras.callbacks.LearningRateScheduler.'
                         % (name, value.get('class_name')))
    return value


def _warn_initial_accumulator(value, name, key):
    if value:
        warnings.warn('The saved %s optimizer has %s=%r; Keras 2.3.1 starts its accumulators '
                      'at 0 (torchk.keras.models.load_model keeps it). The saved accumulators '
                      'are restored if the file has them.'
                      % (name, key, value))
    return DROP


def _drop(value, name, key):
    return DROP


def _epsilon_inside_the_root(value, name, key):
    warnings.warn('tf.keras\' %s divides by sqrt(accumulator + epsilon), Keras 2.3.1\'s by '
                  'sqrt(accumulator) + epsilon: training steps differ where accumulators are '
                  'near epsilon=%r (the loaded model predicts the same).' % (name, value))
    return value


# (optimizer class names, key, tf.keras version that introduced the key, action)
OPTIMIZER_KEY_RULES = [
    (ALL_LAYERS, 'name', '2.0', _drop),
    (ALL_LAYERS, 'learning_rate', '2.0', _learning_rate),
    (ALL_LAYERS, 'clipnorm', '2.0', lambda value, name, key: DROP if value is None else value),
    (ALL_LAYERS, 'clipvalue', '2.0', lambda value, name, key: DROP if value is None else value),
    (ALL_LAYERS, 'global_clipnorm', '2.4', _optimizer_drop_if(None)),
    (ALL_LAYERS, 'weight_decay', '2.11', _optimizer_drop_if(None, 0, 0.0)),
    (ALL_LAYERS, 'use_ema', '2.11', _optimizer_drop_if(False)),
    (ALL_LAYERS, 'ema_momentum', '2.11', _drop),
    (ALL_LAYERS, 'ema_overwrite_frequency', '2.11', _drop),
    (ALL_LAYERS, 'jit_compile', '2.11', _drop),
    (ALL_LAYERS, 'is_legacy_optimizer', '2.11', _drop),
    (('RMSprop',), 'momentum', '2.0', _optimizer_drop_if(0, 0.0)),
    (('RMSprop',), 'centered', '2.0', _optimizer_drop_if(False)),
    (('Adagrad',), 'initial_accumulator_value', '2.0', _warn_initial_accumulator),
    (('RMSprop', 'Adagrad'), 'epsilon', '2.0', _epsilon_inside_the_root),
]

_KERAS_OPTIMIZERS = ('SGD', 'RMSprop', 'Adagrad', 'Adadelta', 'Adam', 'Adamax', 'Nadam')
# An optimizer compiled by name ('adam') keeps the name in a `.keras` zip's compile_config.
_OPTIMIZER_NAMES = {name.lower(): name for name in _KERAS_OPTIMIZERS}


def translate_optimizer_config(config):
    """A saved optimizer configuration (tf.keras 2.0-2.15 legacy or v2, tf_keras) as Keras
    2.3.1's `{'class_name', 'config'}`, with the same hyper-parameters.

    # Raises
        ValueError: for an optimizer Keras 2.3.1 lacks, or a setting that changes its maths
            (`weight_decay`, `use_ema`, `global_clipnorm`, a learning rate schedule, ...).
    """
    config = _inner_optimizer(config)
    class_name = config['class_name'].split('>')[-1]  # tf_keras: 'Custom>Adam'
    class_name = _OPTIMIZER_NAMES.get(class_name.lower(), class_name)
    if class_name not in _KERAS_OPTIMIZERS:
        raise ValueError('The saved optimizer %s has no Keras 2.3.1 equivalent (there are %s); '
                         'load the model with compile=False and compile it with a Keras '
                         'optimizer%s.' % (class_name, ', '.join(_KERAS_OPTIMIZERS),
                                           ', or with torchk.keras.models.load_model, whose '
                                           'AdamW computes it' if class_name == 'AdamW' else ''))
    options = dict(config.get('config', {}))
    for classes, key, _, action in OPTIMIZER_KEY_RULES:
        if key in options and (classes == ALL_LAYERS or class_name in classes):
            value = action(options[key], class_name, key)
            if value is DROP:
                del options[key]
            else:
                options[key] = value
    rate_key = _learning_rate_key()
    for key in ('lr', 'learning_rate'):
        if key in options and key != rate_key:
            options[rate_key] = options.pop(key)
    return {'class_name': class_name, 'config': options}


def _learning_rate_key():
    """The learning rate's argument name in the installed Keras' optimizers: `lr` before
    2.3.0 (2.2.4, 2.2.5), `learning_rate` since."""
    import keras
    release = tuple(int(n) for n in re.findall(r'\d+', keras.__version__)[:2])
    return 'lr' if release < (2, 3) else 'learning_rate'


# tf.keras' loss classes' keys that Keras 2.3.1's loss classes lack (version introduced).
_LOSS_KEY_RULES = [
    ('ignore_class', '2.10', (None,)),
    ('axis', '2.6', (-1,)),
    ('fn', '2.0', None),
]
_REDUCTIONS = {'auto': 'sum_over_batch_size'}


def _translate_loss(loss):
    if isinstance(loss, list):
        return [_translate_loss(item) for item in loss]
    if isinstance(loss, dict) and 'class_name' not in loss:
        return {output: _translate_loss(item) for output, item in loss.items()}
    if not isinstance(loss, dict):
        return loss
    config = dict(loss.get('config', {}))
    for key, _, defaults in _LOSS_KEY_RULES:
        if key in config:
            value = config.pop(key)
            if defaults is not None and value not in defaults:
                raise ValueError('The saved loss %s has %s=%r, which Keras 2.3.1\'s loss '
                                 'does not compute.' % (loss['class_name'], key, value))
    if 'reduction' in config:
        config['reduction'] = _REDUCTIONS.get(config['reduction'], config['reduction'])
    import keras
    if not hasattr(keras.losses, 'Loss'):
        return _loss_function(loss['class_name'], loss.get('config', {}), config)
    return {'class_name': loss['class_name'], 'config': config}


# Loss classes whose function's name is not the class name in snake case.
_LOSS_FUNCTIONS = {'KLDivergence': 'kullback_leibler_divergence', 'LogCosh': 'logcosh'}
# The loss classes' arguments that Keras 2.2's loss functions compute, at these values.
_LOSS_FUNCTION_DEFAULTS = {'reduction': ('sum_over_batch_size',), 'from_logits': (False,),
                           'label_smoothing': (0, 0.0)}


_FROM_LOGITS = ('binary_crossentropy', 'categorical_crossentropy',
                'sparse_categorical_crossentropy')


def _loss_from_logits(name):
    """Keras 2.2's loss function `name` (a crossentropy) on logits, by the backend's
    `from_logits`; named as the function, with `_from_logits`."""
    from keras import backend as K
    backend_function = getattr(K, name)

    def loss(y_true, y_pred):
        result = backend_function(y_true, y_pred, from_logits=True)
        return K.mean(result, axis=-1) if name == 'binary_crossentropy' else result
    loss.__name__ = name + '_from_logits'
    return loss


def _loss_function(class_name, saved_config, config):
    """The Keras 2.2 loss function (2.2.4, 2.2.5 have no loss classes), by name or as a
    function, that computes the saved loss object `class_name` with `config`."""
    import keras
    name = saved_config.get('fn') or _LOSS_FUNCTIONS.get(class_name) or re.sub(
        r'(?<!^)(?=[A-Z])', '_', class_name).lower()
    if config.get('from_logits') and name in _FROM_LOGITS:
        return _loss_from_logits(name)
    for key, value in config.items():
        if key != 'name' and value not in _LOSS_FUNCTION_DEFAULTS.get(key, ()):
            raise ValueError('The saved loss %s has %s=%r; Keras %s has loss functions only, '
                             'which do not take it. Load the model with compile=False and '
                             'compile it with a loss function.'
                             % (class_name, key, value, keras.__version__))
    if not hasattr(keras.losses, name):
        raise ValueError('The saved loss %s has no loss function in Keras %s; load the model '
                         'with compile=False and compile it with a loss function.'
                         % (class_name, keras.__version__))
    return name


def _translate_metric(metric, output_name=None):
    """A metric as Keras 2.3.1's `compile` takes it: a function's name (tf.keras saves them
    as `MeanMetricWrapper` objects named `<output>_<name>`; 'accuracy' stays 'accuracy', which
    Keras resolves from the loss as tf.keras does) or a Keras metric object."""
    if isinstance(metric, list):
        return [_translate_metric(item, output_name) for item in metric]
    if not isinstance(metric, dict):
        return metric
    if 'class_name' not in metric:
        return {output: _translate_metric(item, output) for output, item in metric.items()}
    config = metric.get('config', {})
    if metric['class_name'] == 'MeanMetricWrapper':
        name = config.get('name', '')
        if output_name and name.startswith(output_name + '_'):
            name = name[len(output_name) + 1:]
        if name in ('accuracy', 'acc'):
            return name
        return config.get('fn', name)
    from keras import metrics
    return metrics.deserialize({'class_name': metric['class_name'], 'config': dict(config)})


def _per_output(values, output_names):
    """tf.keras 2.2+ saves metrics as one list per output; Keras 2.3.1 takes a dict."""
    if (isinstance(values, list) and values and len(values) == len(output_names)
            and all(isinstance(v, list) for v in values)):
        return dict(zip(output_names, values))
    return values


def compile_arguments(training_config, model, custom_objects=None):
    """The arguments of `model.compile` that a saved training configuration asks for.

    # Arguments
        training_config: the decoded `training_config` of a model file.
        model: the loaded model (for its output names).
        custom_objects: as given to `load_model`.

    # Returns
        A dict of keyword arguments for `model.compile`.
    """
    from keras import losses, optimizers
    custom_objects = custom_objects or {}

    def custom(value):
        if isinstance(value, list):
            return [custom(v) for v in value]
        if isinstance(value, dict):
            return {k: custom(v) for k, v in value.items()}
        if isinstance(value, str) and value in custom_objects:
            return custom_objects[value]
        return value

    optimizer = _saved_optimizer(training_config['optimizer_config'], custom_objects)
    loss = _translate_loss(training_config['loss'])
    if isinstance(loss, dict) and 'class_name' in loss:
        loss = losses.get(loss)
    elif isinstance(loss, (list, dict)):
        loss = _map_values(loss, lambda v: losses.get(v) if isinstance(v, dict) else v)
    metrics, weighted = (
        _translate_metric(_per_output(training_config.get(key), model.output_names))
        for key in ('metrics', 'weighted_metrics'))
    return dict(optimizer=optimizer, loss=custom(loss), metrics=custom(metrics),
                weighted_metrics=custom(weighted),
                loss_weights=training_config.get('loss_weights'),
                sample_weight_mode=training_config.get('sample_weight_mode'))


def _saved_optimizer(config, custom_objects):
    """The optimizer a saved configuration describes: made by its class from tf.keras'
    configuration where `custom_objects` gives a class that reads them (torchk.keras'
    optimizers: `reads_tf_keras_config`), else Keras 2.3.1's (`translate_optimizer_config`)."""
    from keras import optimizers
    inner = _inner_optimizer(config)
    class_name = inner['class_name'].split('>')[-1]
    cls = custom_objects.get(class_name, custom_objects.get(class_name.lower()))
    if getattr(cls, 'reads_tf_keras_config', False):
        return cls.from_config(inner.get('config', {}))
    return optimizers.deserialize(translate_optimizer_config(config),
                                  custom_objects=custom_objects)


def _map_values(values, function):
    if isinstance(values, dict):
        return {k: function(v) for k, v in values.items()}
    return [function(v) for v in values]


# ---- Optimizer state ---------------------------------------------------------------------

# Keras 2.3.1's optimizer weights after `iterations`: groups of one slot per trainable weight,
# with the names tf.keras gives that slot (legacy optimizers, then v2 optimizers), by the
# optimizer's configuration (torchk.keras' RMSprop adds `momentum` and `centered` slots).
_ADAM_SLOTS = (('m',), ('v',), ('vhat', 'velocity_hat'))
OPTIMIZER_SLOTS = {
    'SGD': lambda config: (('momentum', 'm'),),
    'RMSprop': lambda config: (('rms', 'velocity'),) + (
        (('momentum',),) if config.get('momentum') else ()) + (
        (('mg', 'average_gradient'),) if config.get('centered') else ()),
    'Adagrad': lambda config: (('accumulator',),),
    'Adadelta': lambda config: (('accum_grad', 'accumulated_grad'),
                                ('accum_var', 'accumulated_delta_var')),
    'Adam': lambda config: _ADAM_SLOTS,
    'AdamW': lambda config: _ADAM_SLOTS,
    'Adamax': lambda config: (('m',), ('v', 'u')),
}
_ITERATION_NAMES = ('iter', 'iteration', 'iterations')


def optimizer_state(optimizer, names, values, trainable_weights):
    """Keras 2.3.1 optimizer weights from the optimizer weights tf.keras saved.

    tf.keras names each slot `<optimizer>/<weight>/<slot>` (legacy optimizers) or
    `<optimizer>/<slot>/<weight>` (v2), in its own order; Keras 2.3.1 keeps `iterations`,
    then one list per slot kind. Slots are matched to the model's trainable weights by the
    weight's name where every name matches, else by order.

    # Returns
        The list for `optimizer.set_weights`; None when the optimizer never ran (there is
        no state); or a string saying why the state does not map.
    """
    class_name = type(optimizer).__name__
    if class_name not in OPTIMIZER_SLOTS:
        return 'Keras 2.3.1 keeps %s\'s state in another form' % class_name
    groups = OPTIMIZER_SLOTS[class_name](optimizer.get_config())
    iterations = None
    slots = {}
    for name, value in zip(names, values):
        parts = name.split(':')[0].split('/')
        if parts[-1] in _ITERATION_NAMES:
            iterations = value
            continue
        if len(parts) < 3:
            continue  # hyper-parameter variables of legacy optimizers: the config has them
        known = {s for group in groups for s in group}
        if parts[1] in known:
            slot, weight = parts[1], '/'.join(parts[2:])
        elif parts[-1] in known:
            slot, weight = parts[-1], '/'.join(parts[1:-1])
        elif parts[0] in known:  # a LossScaleOptimizerV3's inner slots (tf.keras 2.11+)
            slot, weight = parts[0], '/'.join(parts[1:])
        else:
            return 'the file has the optimizer slot %r, unknown to Keras 2.3.1\'s %s' % (
                name, class_name)
        slots.setdefault(slot, []).append((weight, value))
    if not slots and (iterations is None or not np.any(iterations)):
        return None  # compiled, never trained: a fresh optimizer is the saved one
    if iterations is None:
        return 'the file has no iteration count'
    state = [np.asarray(iterations).astype('int64')]
    for group in groups:
        saved = next((slots[s] for s in group if s in slots), None)
        if saved is None:
            if group[0] == 'vhat' and not optimizer.amsgrad:
                state.extend(np.zeros((1,), 'float32') for _ in trainable_weights)
                continue
            return 'the file has no %r slots' % group[0]
        ordered = _in_model_order(saved, trainable_weights)
        if len(ordered) != len(trainable_weights):
            return 'the file has %d %r slots for %d trainable weights' % (
                len(ordered), group[0], len(trainable_weights))
        state.extend(ordered)
    return state


# A tf.keras LossScaleOptimizer's variables (their last name part): torchk's
# `LossScaleOptimizer` attribute that takes each.
LOSS_SCALE_VARIABLES = {'current_loss_scale': 'loss_scale', 'good_steps': 'dynamic_counter'}


def restore_optimizer_state(model, names, values):
    """Sets a compiled model's optimizer state from a saved one (tf.keras slot `names`, numpy
    `values`) where it maps onto the Keras optimizer; otherwise warns that training starts
    with a fresh optimizer. A `torchk.mixed_precision.LossScaleOptimizer` (compiled under
    `mixed_float16`) gets the state into its inner optimizer, and the saved loss scale and
    count of finite steps where the file has them."""
    from .. import mixed_precision
    from keras import backend as K
    model._make_train_function()
    optimizer = model.optimizer
    if isinstance(optimizer, mixed_precision.LossScaleOptimizer):
        for name, value in zip(names, values):
            attribute = LOSS_SCALE_VARIABLES.get(name.split(':')[0].split('/')[-1])
            if attribute is not None:
                K.set_value(getattr(optimizer, attribute), value)
        optimizer = optimizer.inner_optimizer
    state = optimizer_state(optimizer, names, values, model._collected_trainable_weights)
    if state is None:
        return
    if isinstance(state, str):
        warnings.warn('The saved optimizer state was not restored (%s): the model starts '
                      'training with a fresh optimizer.' % state)
        return
    if optimizer.weights and optimizer.weights[0] is not optimizer.iterations:
        # Keras 2.2's RMSprop, Adagrad and Adadelta keep no iteration count in their weights
        K.set_value(optimizer.iterations, state[0])
        state = state[1:]
    try:
        optimizer.set_weights(state)
    except ValueError as e:
        warnings.warn('The saved optimizer state does not fit the model (%s): the model '
                      'starts training with a fresh optimizer.' % e)


def _in_model_order(saved, trainable_weights):
    by_name = dict(saved)
    names = [w.name.split(':')[0] for w in trainable_weights]
    if len(by_name) == len(saved) and set(by_name) == set(names):
        return [by_name[n] for n in names]
    return [value for _, value in saved]
