"""`tf.saved_model.save` and `load` on torch: SavedModel folders in TF's layout, whose
functions are torch programs.

`save(obj, export_dir, signatures=None)` writes, for a `tf.Module` (or any trackable object)
or a Keras model:
- `variables/`: the checkpoint of the object graph under `obj` (TF's format and keys, read
  by TF and by `tf.train.Checkpoint.restore(export_dir)`);
- `saved_model.pb`: a `SavedModel` whose `SavedObjectGraph` has the same nodes (variables with
  their dtype, shape, name and trainability; modules, lists and dicts), one function node per
  `tf.function` of an object, the `signatures`, and each signature's `SignatureDef`;
- `assets.extra/torchk_functions.json` and `torchk_constants`: each concrete function traced
  into an ATen graph (`function_capture`), through `torchk.saving.saved_functions`, the one
  reader of such files. A `tf.function` is saved for each input signature it was called with
  and its `input_signature`; a Keras model, its call on its inputs (learning phase 0) as
  `__call__` and as the `serving_default` signature (outputs named after the model's).

TF's own SavedModels hold TF graphs, which torchk does not run: `load` refuses them by name
(their variables read with `tf.train.load_checkpoint`, a Keras model with
`tf.keras.models.load_model`). `load` rebuilds the object graph: objects with the saved
attributes, variables with their values, functions that run the saved programs on them
(each call matched to a saved input signature, as TF's restored functions), `signatures`.
"""
import os
import sys

from .. import variables
from ..saving import object_graph, protos, saved_functions
from ..saving.errors import ModelFileError
from ..saving.tensor_bundle import DTYPE_NUMBERS
from .. import structure
from . import custom_gradient, function_capture, restored, trackable, tracing
from . import dtypes
from .data import TensorSpec
from .namespaces import module_getattr

__all__ = ['save', 'load', 'SaveOptions', 'LoadOptions', 'contains_saved_model',
           'DEFAULT_SERVING_SIGNATURE_DEF_KEY', 'SERVING']

DEFAULT_SERVING_SIGNATURE_DEF_KEY = 'serving_default'
SERVING = 'serve'
_SIGNATURES = 'signatures'
_SAVED_MODEL_FILE = 'saved_model.pb'


class SaveOptions(object):
    """TF's saving options (`tf.saved_model.SaveOptions`): accepted; `save` reads
    `experimental_custom_gradients`, the others are unused."""

    def __init__(self, namespace_whitelist=None, save_debug_info=False, function_aliases=None,
                 experimental_io_device=None, experimental_variable_policy=None,
                 experimental_custom_gradients=True, experimental_image_format=False,
                 experimental_skip_saver=False, experimental_sharding_callback=None,
                 extra_tags=None):
        self.function_aliases = function_aliases
        self.experimental_custom_gradients = experimental_custom_gradients


class LoadOptions(object):
    """TF's loading options (`tf.saved_model.LoadOptions`): accepted, unused."""

    def __init__(self, allow_partial_checkpoint=False, experimental_io_device=None,
                 experimental_skip_checkpoint=False, experimental_variable_policy=None,
                 experimental_load_function_aliases=False):
        pass


def contains_saved_model(export_dir):
    """Whether `export_dir` holds a SavedModel (`saved_model.pb`)."""
    return os.path.isfile(os.path.join(os.fspath(export_dir), _SAVED_MODEL_FILE))


# ---- Saving -------------------------------------------------------------------------------

def _keras_class(module, name):
    """A Keras 2.3.1 class if Keras is imported (no Keras object exists otherwise)."""
    loaded = sys.modules.get(module)
    return getattr(loaded, name) if loaded is not None else ()


def _is_keras_model(obj):
    return isinstance(obj, _keras_class('keras.engine.network', 'Network'))


def _functions_of(obj):
    """`[(attribute, tf.function)]` of an object: its class's `tf.function` methods (bound to
    it) and its attributes holding `tf.function`s, by name."""
    found = {}
    for cls in reversed(type(obj).__mro__):
        for name, value in vars(cls).items():
            if isinstance(value, tracing.Function):
                found[name] = tracing.BoundFunction(value, obj)
    for name, value in getattr(obj, '__dict__', {}).items():
        if isinstance(value, (tracing.Function, tracing.BoundFunction)):
            found[name] = value
    return sorted(found.items())


def _concrete_functions(function):
    """The `ConcreteFunction`s a SavedModel saves of a `tf.function`."""
    if isinstance(function, tracing.BoundFunction):
        base, instance = function.function, function.instance
    else:
        base, instance = function, None
    signatures = base.concrete_arguments(instance)
    if base.input_signature is not None:
        signatures.insert(0, (tuple(base.input_signature), {}))
    found, keys = [], set()
    for args, kwargs in signatures:
        if _takes_text(args, kwargs):
            print('torchk: tf.saved_model.save leaves out the signature %s of tf.function %s: '
                  'text (tf.string) inputs stay on the host and cannot be saved in a torch '
                  'program.' % (_text_signature(args, kwargs), base._name), file=sys.stderr)
            continue
        concrete = base.concrete_function(instance, args, kwargs)
        key = repr(concrete.structured_input_signature)
        if key not in keys:
            keys.add(key)
            found.append(concrete)
    return found


def _takes_text(args, kwargs):
    return any(isinstance(leaf, TensorSpec) and leaf.dtype == dtypes.string
               for leaf in structure.flatten([list(args), dict(kwargs)]))


def _text_signature(args, kwargs):
    return ', '.join([repr(arg) for arg in args]
                     + ['%s=%r' % item for item in sorted(kwargs.items())])


def _signature_functions(obj, signatures):
    """`{name: ConcreteFunction or Traced}` of the signatures to save."""
    if signatures is None:
        if _is_keras_model(obj):
            return {DEFAULT_SERVING_SIGNATURE_DEF_KEY: 'keras_model'}
        candidates = []
        for _, function in _functions_of(obj):
            if function.input_signature is None:
                continue
            concrete = function.get_concrete_function()
            leaves = structure.flatten(concrete.structured_outputs)
            if leaves and all(isinstance(leaf, TensorSpec) for leaf in leaves):
                candidates.append(concrete)
        return {DEFAULT_SERVING_SIGNATURE_DEF_KEY: candidates[0]} if len(candidates) == 1 else {}
    if not isinstance(signatures, dict):
        signatures = {DEFAULT_SERVING_SIGNATURE_DEF_KEY: signatures}
    result = {}
    for name, function in signatures.items():
        if isinstance(function, (tracing.Function, tracing.BoundFunction)):
            if function.input_signature is None:
                raise ValueError('The signature %r is a tf.function without input_signature: '
                                 'give its concrete function (get_concrete_function(spec...)) '
                                 'instead.' % name)
            function = function.get_concrete_function()
        if not isinstance(function, function_capture.ConcreteFunction):
            raise ValueError('The signature %r must be a concrete function or a tf.function '
                             'with an input_signature, got %r.' % (name, function))
        result[name] = function
    return result


def _encode_structure(value):
    if isinstance(value, TensorSpec):
        return {'spec': [None if value.shape is None else list(value.shape), str(value.dtype),
                         value.name]}
    if isinstance(value, dict):
        return {'dict': [[str(k), _encode_structure(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return {'list' if isinstance(value, list) else 'tuple':
                [_encode_structure(v) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {'value': value}
    raise ValueError('A value of type %s cannot be saved in a function signature: %r'
                     % (type(value).__name__, value))


def _signature_result(result, output_names=None):
    """A signature's outputs as TF names them: a dict as it is, else `output_0`, ... (or the
    Keras model's output names)."""
    if isinstance(result, dict):
        return {name: TensorSpec(spec.shape, spec.dtype, name) for name, spec in result.items()}
    leaves = result if isinstance(result, (list, tuple)) else [result]
    names = output_names or ['output_%d' % i for i in range(len(leaves))]
    return {name: TensorSpec(leaf.shape, leaf.dtype, name) for name, leaf in zip(names, leaves)}


class _Writer(object):
    """The nodes of a SavedModel and the functions it saves."""

    def __init__(self, root, exclude=()):
        self.objects, self.nodes = trackable.graph_nodes(root, exclude)
        self.ids = {id(obj): i for i, obj in enumerate(self.objects)}
        self.kinds = [None] * len(self.objects)
        self.functions = {}
        self.constants = {}
        self.variables = [obj for obj in self.objects if isinstance(obj, variables.Variable)]
        # Keras' non-trainable weights (batch normalization's moving statistics) require
        # gradients in torch; their layers say what they are.
        layer = _keras_class('keras.engine.base_layer', 'Layer')
        self.non_trainable = {id(w) for obj in self.objects if isinstance(obj, layer)
                              for w in obj.non_trainable_weights}

    def add_node(self, parent, name, kind, obj=None):
        node_id = len(self.nodes)
        self.nodes.append({'children': [], 'values': []})
        self.objects.append(obj)
        self.kinds.append(kind)
        self.nodes[parent]['children'].append((name, node_id))
        return node_id

    def add_function(self, traced, prefix):
        name = '__inference_%s_%d' % (prefix.strip('_') or 'function', len(self.functions))
        captures = []
        for tensor in traced.captures:
            if id(tensor) in self.ids and isinstance(tensor, variables.Variable):
                captures.append({'variable': self.ids[id(tensor)]})
            elif isinstance(tensor, variables.Variable):
                raise ValueError('The function %s reads the variable %s, which is not in the '
                                 'saved object graph: make it an attribute of the object saved '
                                 '(TF saves only the variables it tracks).'
                                 % (prefix, tensor.name))
            else:
                key = 'constant_%d' % len(self.constants)
                self.constants[key] = trackable.variable_value(tensor)
                captures.append({'constant': key})
        self.functions[name] = {
            'graph': saved_functions.encode_graph(traced.graph), 'captures': captures,
            'updates': traced.updates, 'arguments': _encode_structure(traced.arguments),
            'result': _encode_structure(traced.result), 'dynamic': traced.dynamic}
        return name


def _saved_object(writer, node_id, message):
    obj, kind = writer.objects[node_id], writer.kinds[node_id]
    if kind is not None:
        kind(message)
    elif isinstance(obj, variables.Variable):
        dtype = str(obj.dtype).replace('torch.', '')
        message.variable.dtype = DTYPE_NUMBERS.get(dtype, 0)
        for size in obj.shape:
            message.variable.shape.dim.add().size = int(size)
        message.variable.trainable = (bool(getattr(obj, 'trainable', False))
                                      and id(obj) not in writer.non_trainable)
        message.variable.name = obj.name
    elif isinstance(obj, list):
        message.user_object.identifier = 'trackable_list_wrapper'
    elif isinstance(obj, tuple):
        message.user_object.identifier = 'trackable_tuple_wrapper'
    elif isinstance(obj, dict):
        message.user_object.identifier = 'trackable_dict_wrapper'
    else:
        message.user_object.identifier = ('_tf_keras_model' if _is_keras_model(obj)
                                          else '_generic_user_object')


def _tensor_info(message, spec, name):
    message.name = '%s:0' % name
    message.dtype = DTYPE_NUMBERS.get(str(spec.dtype), 0)
    if spec.shape is None:
        message.tensor_shape.unknown_rank = True
    else:
        for size in spec.shape:
            message.tensor_shape.dim.add().size = -1 if size is None else int(size)


def save(obj, export_dir, signatures=None, options=None):
    """Saves `obj` (a `tf.Module`, a trackable object or a Keras model) as a SavedModel in
    `export_dir` (see the module docstring).

    # Arguments
        obj: the object to save.
        export_dir: the folder to write (made if needed).
        signatures: a concrete function (`f.get_concrete_function(spec)`), a `tf.function`
            with an `input_signature`, or `{name: one of these}`; None: a Keras model's call,
            or the one `tf.function` of `obj` that has an `input_signature` and returns
            tensors.
        options: `tf.saved_model.SaveOptions`: only `experimental_custom_gradients` is read
            (False: a function with a `tf.custom_gradient` is saved as its forward
            computation; True, TF's default: torchk refuses to save it).

    # Raises
        ValueError: for a signature of another kind, or a function that cannot be traced or
            reads a variable outside the object graph.
    """
    keep = getattr(options, 'experimental_custom_gradients', True)
    with custom_gradient.saving_custom_gradients(keep):
        _save(obj, export_dir, signatures)


def _save(obj, export_dir, signatures=None, exclude=(), keras_metadata=None,
          trace_keras=True):
    """`save`, leaving out the objects of ids `exclude` and writing `keras_metadata.pb` from
    `keras_metadata(objects)` (`[(node id, identifier, metadata JSON)]`, for
    `tf.keras.models.load_model`); `trace_keras=False` saves no function of a Keras model."""
    export_dir = os.fspath(export_dir)
    writer = _Writer(obj, exclude)
    keras_traced = None
    if trace_keras and _is_keras_model(obj) and getattr(obj, 'inputs', None):
        keras_traced = function_capture.trace_keras_model(obj)
    signature_functions = _signature_functions(obj, signatures) if trace_keras else {}
    layer_class = _keras_class('keras.engine.base_layer', 'Layer')
    for node_id, owner in enumerate(list(writer.objects)):
        if isinstance(owner, layer_class) and owner.weights:
            _add_variable_list(writer, node_id, 'variables', owner.weights)
    for node_id, owner in enumerate(list(writer.objects)):
        if owner is None or isinstance(owner, (variables.Variable, list, tuple, dict)):
            continue
        for attribute, function in _functions_of(owner):
            names = [writer.add_function(concrete.traced(writer.variables), attribute)
                     for concrete in _concrete_functions(function)]
            writer.add_node(node_id, attribute, _function_kind(names))
    if keras_traced is not None:
        name = writer.add_function(keras_traced, '__call__')
        writer.add_node(0, '__call__', _function_kind([name]))
    if _is_keras_model(obj):
        for attribute in ('trainable_variables', 'non_trainable_variables'):
            _add_variable_list(writer, 0, attribute, getattr(obj, attribute))
    signature_defs = {}
    if signature_functions:
        holder = writer.add_node(0, _SIGNATURES, _user_object('signature_map'))
        for key, function in sorted(signature_functions.items()):
            if function == 'keras_model':
                traced = keras_traced
                if traced is None:
                    raise ValueError('The Keras model %s has no inputs yet (a subclassed model '
                                     'never called): call it, or give signatures.' % obj.name)
                result = _signature_result(traced.result, list(obj.output_names))
            else:
                traced = function.traced(writer.variables)
                result = _signature_result(traced.result)
            signature = function_capture.Traced(
                traced.graph, traced.captures, traced.updates,
                [[], {spec.name: spec for spec in structure.flatten(traced.arguments)
                      if isinstance(spec, TensorSpec)}], result, traced.dynamic)
            name = writer.add_function(signature, 'signature_' + key)
            writer.add_node(holder, key, _bare_kind(name, sorted(signature.arguments[1])))
            signature_defs[key] = signature
    _write(writer, export_dir, signature_defs)
    if keras_metadata is not None:
        _write_keras_metadata(export_dir, writer, keras_metadata(writer.objects))


def _add_variable_list(writer, parent, name, listed):
    """A list node `name` of `parent` holding the saved variables of `listed` (a Keras
    layer's `variables`, as tf.keras saves them)."""
    listed = [v for v in listed if id(v) in writer.ids]
    list_id = writer.add_node(parent, name, None, listed)
    writer.nodes[list_id]['children'] = [(str(i), writer.ids[id(v)])
                                         for i, v in enumerate(listed)]


def _write_keras_metadata(export_dir, writer, entries):
    from ..saving.atomic_files import replacing
    metadata = protos.SavedMetadata()
    for node_id, identifier, text in entries:
        metadata.nodes.add(node_id=node_id, node_path='root' if node_id == 0 else
                           'node %d' % node_id, identifier=identifier, metadata=text)
    with replacing(os.path.join(export_dir, 'keras_metadata.pb')) as temporary:
        with open(temporary, 'wb') as f:
            f.write(metadata.SerializeToString())


def _user_object(identifier):
    def kind(message):
        message.user_object.identifier = identifier
    return kind


def _function_kind(names):
    def kind(message):
        message.function.concrete_functions.extend(names)
    return kind


def _bare_kind(name, keywords):
    def kind(message):
        message.bare_concrete_function.concrete_function_name = name
        message.bare_concrete_function.argument_keywords.extend(keywords)
    return kind


def _write(writer, export_dir, signature_defs):
    os.makedirs(os.path.join(export_dir, 'assets'), exist_ok=True)
    saved_model = protos.SavedModel(saved_model_schema_version=1)
    meta_graph = saved_model.meta_graphs.add()
    meta_graph.meta_info_def.tags.append(SERVING)
    meta_graph.meta_info_def.tensorflow_version = '2.15.0'
    meta_graph.meta_info_def.tensorflow_git_version = 'torchk'
    meta_graph.meta_info_def.stripped_default_attrs = True
    for node_id, node in enumerate(writer.nodes):
        message = meta_graph.object_graph_def.nodes.add()
        for name, child in node['children']:
            message.children.add(node_id=child, local_name=name)
        _saved_object(writer, node_id, message)
    for key, signature in sorted(signature_defs.items()):
        entry = meta_graph.signature_def.add(key=key)
        entry.value.method_name = 'tensorflow/serving/predict'
        for name, spec in sorted(signature.arguments[1].items()):
            _tensor_info(entry.value.inputs.add(key=name).value, spec,
                         '%s_%s' % (key, name))
        for name, spec in sorted(signature.result.items()):
            _tensor_info(entry.value.outputs.add(key=name).value, spec, 'StatefulCall')
    object_graph.write_checkpoint(os.path.join(export_dir, 'variables', 'variables'),
                                  writer.nodes)
    saved_functions.write_functions(export_dir, writer.functions, writer.constants)
    from ..saving.atomic_files import replacing
    with replacing(os.path.join(export_dir, _SAVED_MODEL_FILE)) as temporary:
        with open(temporary, 'wb') as f:
            f.write(saved_model.SerializeToString())


# ---- Loading ------------------------------------------------------------------------------

def _read_saved_model(export_dir):
    path = os.path.join(export_dir, _SAVED_MODEL_FILE)
    if not os.path.isfile(path):
        raise OSError('SavedModel file does not exist at: %s/{saved_model.pbtxt|'
                      'saved_model.pb}' % export_dir)
    with open(path, 'rb') as f:
        data = f.read()
    message = protos.SavedModel()
    try:
        message.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError, whose module varies by runtime
        raise ModelFileError(path, 'not a valid SavedModel protocol buffer (%s)' % e) from e
    if len(message.meta_graphs) != 1:
        raise ModelFileError(path, 'a SavedModel of %d meta graphs: torchk reads one'
                             % len(message.meta_graphs))
    return path, message.meta_graphs[0]


def load(export_dir, tags=None, options=None):
    """Loads a SavedModel `save` wrote (see the module docstring).

    # Returns
        The root object: its attributes are the saved children (variables, objects, lists,
        dicts, functions), `signatures` the saved signatures.

    # Raises
        OSError: if `export_dir` holds no SavedModel.
        NotImplementedError: for a SavedModel written by TensorFlow (its functions are
            TensorFlow graphs, which torchk does not run).
        torchk.saving.ModelFileError: if a file is damaged, or a function names an
            operation torchk does not run from files.
    """
    export_dir = os.fspath(export_dir)
    path, meta_graph = _read_saved_model(export_dir)
    functions, constants = saved_functions.read_functions(export_dir)
    if functions is None:
        raise NotImplementedError(
            'tf.saved_model.load: %s was written by TensorFlow; its functions are TensorFlow '
            'graphs (GraphDef), which torchk does not run (it has no TensorFlow graph '
            'interpreter). Its variables read with tf.train.load_checkpoint(%r); a Keras model '
            'saved by tf.keras (model.save) loads with tf.keras.models.load_model.'
            % (export_dir, os.path.join(export_dir, 'variables', 'variables')))
    checkpoint = object_graph.ObjectGraph(os.path.join(export_dir, 'variables', 'variables'))
    nodes = meta_graph.object_graph_def.nodes
    if len(nodes) != len(checkpoint.nodes):
        raise ModelFileError(path, 'the object graph has %d nodes, its checkpoint %d' % (
            len(nodes), len(checkpoint.nodes)))
    loader = restored.Loader(path, nodes, checkpoint, functions, constants,
                             os.path.join(export_dir, saved_functions.FUNCTIONS_FILE))
    return loader.root()


__getattr__ = module_getattr('tf.saved_model')
