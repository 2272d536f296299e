"""The protocol buffer messages of TensorFlow's SavedModel and checkpoints that torchk reads
and writes.

Only the messages and fields read or written are declared (field numbers as in TensorFlow's
`saved_model.proto`, `meta_graph.proto`, `saved_object_graph.proto`,
`trackable_object_graph.proto`, `tensor_bundle.proto`, `tensor_shape.proto`, `graph.proto`,
`node_def.proto`, `attr_value.proto`, `tensor.proto` and Keras' `saved_metadata.proto`); the
protobuf runtime skips every other field. The graph's messages are read for the constants a
lookup table is initialized from (a text layer's vocabulary), never to run anything. Enumerations
(`DataType`) are read as the integers they are on the wire. The descriptors live in a private
pool, so they never clash with TensorFlow's own when both are imported.

The message classes (`BundleHeaderProto`, `BundleEntryProto`, `TrackableObjectGraph`,
`SavedModel`, `SavedMetadata`) are made on first use, so that importing torchk's tf.keras
(whose layers and datasets are trackable) needs no protobuf until a checkpoint or a
SavedModel is read or written.
"""
import importlib

_PACKAGE = 'torchk.saving.tf'
_TYPES = ('int32', 'int64', 'bool', 'string', 'fixed32', 'bytes')

# message name: [(field name, number, type or message name, repeated)]
_MESSAGES = {
    'TensorShapeProto': [('dim', 2, 'TensorShapeDim', True), ('unknown_rank', 3, 'bool', False)],
    'TensorShapeDim': [('size', 1, 'int64', False), ('name', 2, 'string', False)],
    'TensorSliceProto': [],
    'VersionDef': [('producer', 1, 'int32', False), ('min_consumer', 2, 'int32', False)],
    'BundleHeaderProto': [('num_shards', 1, 'int32', False), ('endianness', 2, 'int32', False),
                          ('version', 3, 'VersionDef', False)],
    'BundleEntryProto': [('dtype', 1, 'int32', False), ('shape', 2, 'TensorShapeProto', False),
                         ('shard_id', 3, 'int32', False), ('offset', 4, 'int64', False),
                         ('size', 5, 'int64', False), ('crc32c', 6, 'fixed32', False),
                         ('slices', 7, 'TensorSliceProto', True)],
    'ObjectReference': [('node_id', 1, 'int32', False), ('local_name', 2, 'string', False)],
    'SerializedTensor': [('name', 1, 'string', False), ('full_name', 2, 'string', False),
                         ('checkpoint_key', 3, 'string', False)],
    'SlotVariableReference': [('original_variable_node_id', 1, 'int32', False),
                              ('slot_name', 2, 'string', False),
                              ('slot_variable_node_id', 3, 'int32', False)],
    'BoolValue': [('value', 1, 'bool', False)],
    'TrackableObject': [('children', 1, 'ObjectReference', True),
                        ('attributes', 2, 'SerializedTensor', True),
                        ('slot_variables', 3, 'SlotVariableReference', True),
                        ('has_checkpoint_values', 5, 'BoolValue', False)],
    'TrackableObjectGraph': [('nodes', 1, 'TrackableObject', True)],
    'SavedUserObject': [('identifier', 1, 'string', False), ('metadata', 3, 'string', False)],
    'SavedFunction': [('concrete_functions', 1, 'string', True)],
    'SavedBareConcreteFunction': [('concrete_function_name', 1, 'string', False),
                                  ('argument_keywords', 2, 'string', True)],
    'SavedVariable': [('dtype', 1, 'int32', False), ('shape', 2, 'TensorShapeProto', False),
                      ('trainable', 3, 'bool', False), ('name', 6, 'string', False)],
    'SavedConstant': [('operation', 1, 'string', False)],
    'SavedObject': [('children', 1, 'ObjectReference', True),
                    ('user_object', 4, 'SavedUserObject', False),
                    ('function', 6, 'SavedFunction', False),
                    ('variable', 7, 'SavedVariable', False),
                    ('bare_concrete_function', 8, 'SavedBareConcreteFunction', False),
                    ('constant', 9, 'SavedConstant', False)],
    'SavedObjectGraph': [('nodes', 1, 'SavedObject', True)],
    'TensorProto': [('dtype', 1, 'int32', False), ('tensor_shape', 2, 'TensorShapeProto', False),
                    ('tensor_content', 4, 'bytes', False), ('int_val', 7, 'int32', True),
                    ('string_val', 8, 'bytes', True), ('int64_val', 10, 'int64', True)],
    'AttrValue': [('tensor', 8, 'TensorProto', False)],
    'AttrEntry': [('key', 1, 'string', False), ('value', 2, 'AttrValue', False)],
    'NodeDef': [('name', 1, 'string', False), ('op', 2, 'string', False),
                ('attr', 5, 'AttrEntry', True)],
    'GraphDef': [('node', 1, 'NodeDef', True)],
    'MetaInfoDef': [('meta_graph_version', 1, 'string', False), ('tags', 4, 'string', True),
                    ('tensorflow_version', 5, 'string', False),
                    ('tensorflow_git_version', 6, 'string', False),
                    ('stripped_default_attrs', 7, 'bool', False)],
    'TensorInfo': [('name', 1, 'string', False), ('dtype', 2, 'int32', False),
                   ('tensor_shape', 3, 'TensorShapeProto', False)],
    'TensorInfoEntry': [('key', 1, 'string', False), ('value', 2, 'TensorInfo', False)],
    'SignatureDef': [('inputs', 1, 'TensorInfoEntry', True),
                     ('outputs', 2, 'TensorInfoEntry', True),
                     ('method_name', 3, 'string', False)],
    'SignatureDefEntry': [('key', 1, 'string', False), ('value', 2, 'SignatureDef', False)],
    'MetaGraphDef': [('meta_info_def', 1, 'MetaInfoDef', False),
                     ('graph_def', 2, 'GraphDef', False),
                     ('signature_def', 5, 'SignatureDefEntry', True),
                     ('object_graph_def', 7, 'SavedObjectGraph', False)],
    'SavedModel': [('saved_model_schema_version', 1, 'int64', False),
                   ('meta_graphs', 2, 'MetaGraphDef', True)],
    'KerasSavedObject': [('node_id', 2, 'int32', False), ('node_path', 3, 'string', False),
                         ('identifier', 4, 'string', False), ('metadata', 5, 'string', False)],
    'SavedMetadata': [('nodes', 1, 'KerasSavedObject', True)],
}


_PUBLIC = ('BundleHeaderProto', 'BundleEntryProto', 'TrackableObjectGraph', 'SavedModel',
           'SavedMetadata')


def _protobuf(module):
    try:
        return importlib.import_module('google.protobuf.' + module)
    except ImportError as e:
        raise ImportError('Reading or writing TensorFlow checkpoints and SavedModels needs the '
                          "protobuf package: pip install 'protobuf>=4.25' (torchk's [keras] "
                          'extra installs it). %s' % e) from None


def _file_descriptor():
    descriptor_pb2 = _protobuf('descriptor_pb2')
    field_type = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name='torchk_saving_tf.proto', package=_PACKAGE,
                                               syntax='proto3')
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        for field_name, number, kind, repeated in fields:
            field = message.field.add(
                name=field_name, number=number,
                label=field_type.LABEL_REPEATED if repeated else field_type.LABEL_OPTIONAL)
            if kind in _TYPES:
                field.type = getattr(field_type, 'TYPE_' + kind.upper())
            else:
                field.type = field_type.TYPE_MESSAGE
                field.type_name = '.%s.%s' % (_PACKAGE, kind)
    return proto


def _message_classes():
    pool = _protobuf('descriptor_pool').DescriptorPool()
    pool.Add(_file_descriptor())
    factory = _protobuf('message_factory')
    return {name: factory.GetMessageClass(pool.FindMessageTypeByName('%s.%s' % (_PACKAGE, name)))
            for name in _PUBLIC}


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError('module %r has no attribute %r' % (__name__, name))
    globals().update(_message_classes())
    return globals()[name]
