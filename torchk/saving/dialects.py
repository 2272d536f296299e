"""Model files of every Keras 2 dialect, translated into what Keras 2.3.1 deserializes.

Most Keras 2 models were saved by TensorFlow's Keras 2: `tf.keras` in TF 2.0-2.15 and the
`tf_keras` package since TF 2.16. Their configurations use class names, keys and serialized
forms that multi-backend Keras 2.3.1 does not know. This module rewrites a saved model
configuration (and training configuration) into Keras 2.3.1's own before Keras reads it; the
layers themselves are then built by Keras 2.3.1's deserializer, unchanged.

The rewriting is data: `LAYER_KEY_RULES` (by layer class name and configuration key),
`CLASS_NAMES` and `OBJECT_CLASS_NAMES`, each entry with the tf.keras version that introduced
what it translates (the training configuration's rules are in `training_config`, the
optimizer state's in `optimizer_state`; the nodes of calls with tensors among their keyword
arguments take torchk's form, `torchk.call_spec`). A key is mapped to its Keras 2.3.1
meaning; a value that would change what the model computes, and that Keras 2.3.1 cannot
express, raises a ValueError naming the layer.

`torchk.saving.h5` puts it into Keras' loaders.

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
import warnings

from . import safe_mode
from ..call_spec import CALL_SPEC, call_template, is_node_entry, listed_keyword_tensors

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


# The override of `Layer.__call__` by which torchk.keras records calls with tensors among their
# keyword arguments (`torchk.overrides`).
_FACADE_CALL = 'torchk.keras.engine.base_layer:tf_keras_call'

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
    from .. import overrides
    if _FACADE_CALL not in overrides.installed_chain('keras.engine.base_layer:Layer.__call__'):
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
    if is_node_entry(node):
        return [node]
    entries = []
    for item in node:
        entries.extend(_flat_entries(item) if isinstance(item, list) else [])
    return entries


def _holds_constant(node):
    if isinstance(node, list) and node and node[0] == '_CONSTANT_VALUE':
        return True
    return isinstance(node, list) and any(_holds_constant(item) for item in node)


def _is_tensor_ref(value, classes):
    return is_node_entry(value) and len(value) == 3 and value[0] in classes


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


# ---- Mixed precision policies (tf.keras 2.1+) ----

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
