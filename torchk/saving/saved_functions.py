"""The functions of a SavedModel written by torchk: ATen graphs as JSON, read without running
any code the file could carry.

TensorFlow saves a `tf.function` as a TF graph; torchk saves each concrete function as the
graph of ATen operations that tracing it gave (`torchk.tf.function_capture`), in
`assets.extra/torchk_functions.json` (the folder TF keeps for files it does not read), the
tensors the graphs capture (constants, not variables: those are the SavedModel's
`variables/`) in the bundle `assets.extra/torchk_constants` (`tensor_bundle`).

A graph is a list of nodes: placeholders, then calls of an operation named by a string, whose
arguments are numbers, strings, booleans, None, dtypes, devices, layouts, memory formats,
lists of these and references to earlier nodes. Reading resolves each name in a fixed set:
the operators of `torch.ops.aten` and `torch.ops.prims` (but those that touch files) and the
arithmetic of Python's `operator` on symbolic sizes. Nothing else is imported, looked up or
evaluated; a file naming anything else, or malformed in any way, raises `ModelFileError`
naming the file and the fault.
"""
import json
import math
import operator
import os
import re

import torch

from .atomic_files import replacing
from .errors import ModelFileError
from .tensor_bundle import TensorBundle, write_bundle

FORMAT = 'torchk.saved_functions/1'
FUNCTIONS_FILE = os.path.join('assets.extra', 'torchk_functions.json')
CONSTANTS_PREFIX = os.path.join('assets.extra', 'torchk_constants')

_OPERATOR_NAMES = ('getitem', 'add', 'sub', 'mul', 'floordiv', 'truediv', 'mod', 'neg', 'pos',
                   'pow', 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'and_', 'or_', 'not_', 'abs')
_OPERATORS = {'operator.' + name: getattr(operator, name) for name in _OPERATOR_NAMES}
_SYMBOLIC = {'torch.sym_float': torch.sym_float, 'torch.sym_int': torch.sym_int,
             'torch.sym_max': torch.sym_max, 'torch.sym_min': torch.sym_min,
             'torch.sym_not': torch.sym_not, 'math.ceil': math.ceil, 'math.floor': math.floor}
_OP_NAME = re.compile(r'^(aten|prims)\.([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$')
_REFUSED_OPS = ('from_file',)  # ATen operations that read files
_DTYPES = {str(dtype).replace('torch.', ''): dtype for dtype in (
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.uint8, torch.int8,
    torch.int16, torch.int32, torch.int64, torch.bool, torch.complex64, torch.complex128)}
_LAYOUTS = {'strided': torch.strided}
_MEMORY_FORMATS = {'contiguous_format': torch.contiguous_format,
                   'channels_last': torch.channels_last,
                   'channels_last_3d': torch.channels_last_3d,
                   'preserve_format': torch.preserve_format}
_MAX_NODES = 10 ** 6


# ---- Writing ------------------------------------------------------------------------------

def _target_name(target):
    if isinstance(target, torch._ops.OpOverload):
        name = str(target)
        match = _OP_NAME.match(name)
        if match and match.group(2) not in _REFUSED_OPS:
            return name
    for table in (_OPERATORS, _SYMBOLIC):
        for name, function in table.items():
            if target is function:
                return name
    raise ValueError('The operation %s cannot be saved: torchk saves graphs of ATen operations '
                     '(torch.ops.aten, torch.ops.prims) and size arithmetic only.' % (target,))


def _encode_argument(value, index):
    if isinstance(value, torch.fx.Node):
        return {'node': index[value]}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {'float': repr(value)}
    if isinstance(value, (list, tuple)):
        return {'list' if isinstance(value, list) else 'tuple':
                [_encode_argument(item, index) for item in value]}
    if isinstance(value, torch.dtype):
        return {'dtype': str(value).replace('torch.', '')}
    if isinstance(value, torch.device):
        return {'device': value.type}
    if isinstance(value, torch.layout):
        return {'layout': str(value).replace('torch.', '')}
    if isinstance(value, torch.memory_format):
        return {'memory_format': str(value).replace('torch.', '')}
    raise ValueError('An argument of type %s cannot be saved in a torchk function graph: %r'
                     % (type(value).__name__, value))


def encode_graph(graph):
    """A JSON-able description of a `torch.fx.Graph` of placeholders, calls and one output.

    # Raises
        ValueError: for a node or argument that cannot be saved (other than ATen operations
            and size arithmetic; `get_attr` nodes must have been made placeholders).
    """
    index, nodes, output = {}, [], None
    for node in graph.nodes:
        if node.op == 'placeholder':
            nodes.append({'op': 'placeholder'})
        elif node.op == 'call_function':
            nodes.append({'op': 'call', 'target': _target_name(node.target),
                          'args': [_encode_argument(a, index) for a in node.args],
                          'kwargs': {k: _encode_argument(v, index)
                                     for k, v in node.kwargs.items()}})
        elif node.op == 'output':
            output = _encode_argument(node.args[0], index)
            continue
        else:
            raise ValueError('A %s node (%s) cannot be saved in a torchk function graph.'
                             % (node.op, node.target))
        index[node] = len(nodes) - 1
    return {'nodes': nodes, 'output': output}


def write_functions(directory, functions, constants):
    """Writes a SavedModel's functions (`{name: JSON-able entry}`, each with its `graph` from
    `encode_graph`) and the constants they capture (`{key: numpy array}`)."""
    folder = os.path.join(directory, os.path.dirname(FUNCTIONS_FILE))
    os.makedirs(folder, exist_ok=True)
    with replacing(os.path.join(directory, FUNCTIONS_FILE)) as temporary:
        with open(temporary, 'w') as f:
            json.dump({'format': FORMAT, 'functions': functions}, f)
    write_bundle(os.path.join(directory, CONSTANTS_PREFIX), constants)


# ---- Reading ------------------------------------------------------------------------------

class _Reader(object):
    def __init__(self, path):
        self.path = path

    def fail(self, what):
        raise ModelFileError(self.path, what)

    def target(self, name):
        if not isinstance(name, str):
            self.fail('a node names its operation with %r, not a string' % (name,))
        if name in _OPERATORS:
            return _OPERATORS[name]
        if name in _SYMBOLIC:
            return _SYMBOLIC[name]
        match = _OP_NAME.match(name)
        if match is None or match.group(2) in _REFUSED_OPS:
            self.fail('the operation %r is not one torchk runs from a file (ATen and prims '
                      'operations, size arithmetic)' % name[:200])
        namespace, op, overload = match.groups()
        packet = getattr(getattr(torch.ops, namespace), op, None)
        overload = getattr(packet, overload, None) if packet is not None else None
        if not isinstance(overload, torch._ops.OpOverload):
            self.fail('the operation %r does not exist in this torch (%s)' % (
                name, torch.__version__))
        return overload

    def argument(self, value, nodes):
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, dict) and len(value) == 1:
            (kind, content), = value.items()
            if kind == 'node':
                if not isinstance(content, int) or not 0 <= content < len(nodes):
                    self.fail('a node refers to node %r, which does not precede it' % (content,))
                return nodes[content]
            if kind in ('list', 'tuple') and isinstance(content, list):
                items = [self.argument(item, nodes) for item in content]
                return items if kind == 'list' else tuple(items)
            tables = {'dtype': _DTYPES, 'layout': _LAYOUTS, 'memory_format': _MEMORY_FORMATS,
                      'device': {'cpu': torch.device('cpu'), 'cuda': torch.device('cuda')},
                      'float': {'inf': math.inf, '-inf': -math.inf, 'nan': math.nan}}
            if kind in tables and content in tables[kind]:
                return tables[kind][content]
        self.fail('an argument of a node is not one a function graph holds: %r'
                  % (str(value)[:200],))


def decode_graph(encoded, path):
    """The `torch.fx.GraphModule` of a graph `encode_graph` described.

    # Arguments
        encoded: the description (read from JSON).
        path: the file, for errors.

    # Raises
        ModelFileError: if the description is malformed or names an operation outside the
            set torchk runs.
    """
    try:
        return _decoded_graph(encoded, _Reader(path))
    except RecursionError as e:
        raise ModelFileError(path, 'a function graph is nested too deeply to read') from e


def _decoded_graph(encoded, reader):
    path = reader.path
    if not isinstance(encoded, dict) or not isinstance(encoded.get('nodes'), list):
        reader.fail('a function graph is not an object with a list of nodes')
    if len(encoded['nodes']) > _MAX_NODES:
        reader.fail('a function graph has %d nodes, more than %d' % (len(encoded['nodes']),
                                                                   _MAX_NODES))
    graph = torch.fx.Graph()
    nodes = []
    for i, node in enumerate(encoded['nodes']):
        if not isinstance(node, dict) or node.get('op') not in ('placeholder', 'call'):
            reader.fail('node %d is neither a placeholder nor a call' % i)
        if node['op'] == 'placeholder':
            if any(n.op != 'placeholder' for n in nodes):
                reader.fail('placeholder %d comes after a call' % i)
            nodes.append(graph.placeholder('input_%d' % i))
            continue
        args, kwargs = node.get('args', []), node.get('kwargs', {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            reader.fail('node %d has malformed arguments' % i)
        nodes.append(graph.create_node(
            'call_function', reader.target(node.get('target')),
            tuple(reader.argument(a, nodes) for a in args),
            {str(k): reader.argument(v, nodes) for k, v in kwargs.items()}, name='node_%d' % i))
    graph.output(reader.argument(encoded.get('output'), nodes))
    try:
        return torch.fx.GraphModule(torch.nn.Module(), graph)
    except Exception as e:  # fx's code generation of a graph it cannot write
        raise ModelFileError(path, 'a function graph does not form a program (%s)' % e) from e


def read_functions(directory):
    """`({name: entry}, constants)` of a SavedModel folder torchk wrote; `constants` is a
    `TensorBundle`, or None if the folder has no functions file.

    # Raises
        ModelFileError: if the file is not valid JSON of this format.
    """
    path = os.path.join(directory, FUNCTIONS_FILE)
    if not os.path.isfile(path):
        return None, None
    try:
        with open(path) as f:
            content = json.load(f)
    except (ValueError, RecursionError) as e:
        raise ModelFileError(path, 'not valid JSON (%s)' % e) from e
    if not isinstance(content, dict) or content.get('format') != FORMAT or not isinstance(
            content.get('functions'), dict):
        raise ModelFileError(path, 'not a torchk functions file of format %s' % FORMAT)
    return content['functions'], TensorBundle(os.path.join(directory, CONSTANTS_PREFIX))
