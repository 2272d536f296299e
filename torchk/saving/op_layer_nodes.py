"""tf.keras' inbound nodes of op layers (`TFOpLambda`, `SlicingOpLambda`) in Keras 2.3.1's form.

tf.keras saves an op layer's node as its first argument (tensors as `[layer, node_index,
tensor_index, kwargs]`, constants as `['_CONSTANT_VALUE', -1, value]`) and its keyword
arguments; Keras 2.3.1 reads a node as a list of input tensors. Each tensor the op uses
becomes an input, and the op's arguments go into the `call_structure` keyword, with tensors
as `{'class_name': '__tensor__', 'index': i}` (read by `torchk.layers.tf_ops`). Pure data:
the loaders check and translate configurations with it before any layer exists;
`rewriting_op_layer_nodes` is the override of Keras 2.3.1's `Network.from_config` (engine/
network.py:953) that reads them so.
"""
import functools

CONSTANT_VALUE = '_CONSTANT_VALUE'
TENSOR = '__tensor__'
CALL_STRUCTURE = 'call_structure'


def _is_tensor_reference(data):
    """Whether `data` is tf.keras' `[layer_name, node_index, tensor_index(, kwargs)]`."""
    return (isinstance(data, list) and len(data) in (3, 4) and isinstance(data[0], str)
            and isinstance(data[1], int) and (len(data) == 3 or isinstance(data[3], dict)))


def _is_keras2_node(node_data):
    """Whether `node_data` is already Keras 2.3.1's list of inputs with `call_structure`."""
    return (isinstance(node_data, list) and node_data
            and all(_is_tensor_reference(entry) and len(entry) == 4
                    and CALL_STRUCTURE in entry[3] for entry in node_data))


def keras2_node(node_data):
    """Rewrites one tf.keras inbound node of a `TFOpLambda` into Keras 2.3.1's form.

    # Arguments
        node_data: tf.keras' node: one `[layer, node_index, tensor_index, kwargs]` entry,
            or a nested list of them (the op's first argument is a list of tensors).

    # Returns
        A list of `[layer, node_index, tensor_index, {'call_structure': ...}]`, one per
        tensor the op uses (unchanged if `node_data` is already in that form).
    """
    if _is_keras2_node(node_data):
        return node_data
    references = []
    last_kwargs = [{}]

    def tensor(entry):
        references.append(list(entry[:3]))
        return {'class_name': TENSOR, 'index': len(references) - 1}

    def first_argument(data):
        if _is_tensor_reference(data):
            if len(data) == 4:
                last_kwargs[0] = data[3]
            if data[0] == CONSTANT_VALUE:
                return data[2]
            return tensor(data)
        if isinstance(data, list):
            return [first_argument(item) for item in data]
        return data

    def keyword_argument(data):
        if _is_tensor_reference(data) and len(data) == 3:
            return tensor(data)
        if isinstance(data, list):
            return [keyword_argument(item) for item in data]
        if isinstance(data, dict):
            return {key: keyword_argument(value) for key, value in data.items()}
        return data

    args = first_argument(node_data)
    kwargs = keyword_argument(last_kwargs[0])
    structure = {'args': args, 'kwargs': kwargs}
    return [reference + [{CALL_STRUCTURE: structure}] for reference in references]


def keras2_network_config(config):
    """`config` (a functional model's) with its op layers' inbound nodes in Keras 2.3.1's form."""
    layers = []
    for layer in config.get('layers', []):
        if layer.get('class_name') in ('TFOpLambda', 'SlicingOpLambda'):
            layer = dict(layer, inbound_nodes=[keras2_node(node)
                                               for node in layer['inbound_nodes']])
        layers.append(layer)
    return dict(config, layers=layers)


def rewriting_op_layer_nodes(keras_from_config):
    """Override of `Network.from_config`: the op layers' nodes rewritten first
    (`keras2_network_config`)."""
    @functools.wraps(keras_from_config)
    def from_config(cls, config, custom_objects=None, **kwargs):  # and safe_mode
        return keras_from_config(cls, keras2_network_config(config), custom_objects, **kwargs)
    return from_config
