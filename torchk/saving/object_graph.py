"""TensorFlow 2's object-based checkpoints (`tf.train.Checkpoint`, TF-format `save_weights`,
a SavedModel's `variables/`), read and written through `tensor_bundle`.

Beside the values, a checkpoint holds the graph of the objects that owned them
(`TrackableObjectGraph`, serialized in the string tensor `_CHECKPOINTABLE_OBJECT_GRAPH`):
node 0 is the root; each node lists its named children and its values (`attributes`: the
value's name, e.g. `VARIABLE_VALUE`, the variable's full name and the key of the tensor). A
value's key is the path of names by which it is first reached from the root, breadth first,
then `/.ATTRIBUTES/<name>` (`net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE`); in names, `.` is
written `..` and `/` `.S`. A folder's text file `checkpoint` (`CheckpointState`) names its
latest checkpoint and those kept.

`ObjectGraph` reads the graph (checking every reference), `write_checkpoint` writes one,
`read_state` and `write_state` the state file.
"""
import codecs
import os
import re

import numpy as np

from . import protos
from .atomic_files import replacing
from .errors import ModelFileError
from .tensor_bundle import TensorBundle, write_bundle

OBJECT_GRAPH_KEY = '_CHECKPOINTABLE_OBJECT_GRAPH'
VALUE_ATTRIBUTE = 'VARIABLE_VALUE'
STATE_FILE = 'checkpoint'


def escape_local_name(name):
    """A child's name as it appears in checkpoint keys (`.` → `..`, `/` → `.S`)."""
    return str(name).replace('.', '..').replace('/', '.S')


def checkpoint_key(path, attribute):
    """The key of value `attribute` of the object reached by the names `path` from the root."""
    return '/'.join([escape_local_name(name) for name in path] + ['.ATTRIBUTES', attribute])


class ObjectGraph(object):
    """A checkpoint's values and object graph, read from the bundle at `prefix`.

    # Arguments
        prefix: the checkpoint's path prefix (`dir/ckpt-1`, `saved_model/variables/variables`).

    # Attributes
        bundle: the `TensorBundle`.
        nodes: the graph's `TrackableObject` messages, by node id.

    # Raises
        ModelFileError: if the bundle is damaged, has no object graph (a TensorFlow 1
            checkpoint, read by names only), or the graph refers to missing nodes or values.
    """

    def __init__(self, prefix):
        self.bundle = TensorBundle(prefix)
        self.path = self.bundle.index_path
        if OBJECT_GRAPH_KEY not in self.bundle.entries:
            raise ModelFileError(self.path, 'the checkpoint has no object graph (%s): it was '
                                 'not written by TensorFlow 2' % OBJECT_GRAPH_KEY)
        serialized = self.bundle.read(OBJECT_GRAPH_KEY)
        if len(serialized) != 1:
            raise ModelFileError(self.path, 'the object graph is %d strings, not one' %
                                 len(serialized))
        graph = protos.TrackableObjectGraph()
        try:
            graph.ParseFromString(serialized[0])
        except Exception as e:  # protobuf's DecodeError, whose module varies by runtime
            raise ModelFileError(self.path, 'the object graph is not a valid '
                                 'TrackableObjectGraph (%s)' % e) from e
        self.nodes = graph.nodes
        if not self.nodes:
            raise ModelFileError(self.path, 'the object graph is empty')
        for node_id, node in enumerate(self.nodes):
            for child in node.children:
                self.node(child.node_id)
            for slot in node.slot_variables:
                self.node(slot.original_variable_node_id)
                self.node(slot.slot_variable_node_id)

    def node(self, node_id):
        if not 0 <= node_id < len(self.nodes):
            raise ModelFileError(self.path, 'the object graph has no node %d (it has %d)' % (
                node_id, len(self.nodes)))
        return self.nodes[node_id]

    def children(self, node_id):
        """`{local name: node id}` of a node's children."""
        return {child.local_name: child.node_id for child in self.node(node_id).children}

    def items(self, node_id):
        """The node ids of a list object's elements, in order (children named 0, 1, ...)."""
        children = self.children(node_id)
        if sorted(children) != sorted(str(i) for i in range(len(children))):
            raise ModelFileError(self.path, 'node %d is not a list: its children are %s' % (
                node_id, sorted(children)))
        return [children[str(i)] for i in range(len(children))]

    def variable(self, node_id):
        """(checkpoint key, full name) of a variable node."""
        for attribute in self.node(node_id).attributes:
            if attribute.name == VALUE_ATTRIBUTE:
                if attribute.checkpoint_key not in self.bundle.entries:
                    raise ModelFileError(self.path, 'variable node %d refers to %r, which the '
                                         'checkpoint lacks' % (node_id, attribute.checkpoint_key))
                return attribute.checkpoint_key, attribute.full_name
        raise ModelFileError(self.path, 'node %d, listed as a variable, has no value' % node_id)

    def read(self, key):
        """The value stored under `key` (a numpy array; a list of bytes for strings).

        # Raises
            ModelFileError: if the graph names a value the checkpoint lacks.
        """
        if key not in self.bundle.entries:
            raise ModelFileError(self.path, 'the object graph refers to the value %r, which '
                                 'the checkpoint lacks' % key)
        return self.bundle.read(key)


def write_checkpoint(prefix, nodes):
    """Writes a checkpoint of an object graph and its values.

    # Arguments
        prefix: the checkpoint's path prefix; its folder is made if it does not exist.
        nodes: one per object, node 0 the root: dicts with `children` (`[(local name, node
            id)]`) and `values` (`[(attribute, full name, checkpoint key, numpy value)]`).

    # Returns
        The prefix.
    """
    folder = os.path.dirname(os.fspath(prefix))
    if folder:
        os.makedirs(folder, exist_ok=True)
    graph = protos.TrackableObjectGraph()
    tensors = {}
    has_values = _nodes_with_values(nodes)
    for node_id, node in enumerate(nodes):
        message = graph.nodes.add()
        for name, child in node['children']:
            message.children.add(node_id=child, local_name=str(name))
        for attribute, full_name, key, value in node['values']:
            message.attributes.add(name=attribute, full_name=full_name, checkpoint_key=key)
            tensors[key] = value
        message.has_checkpoint_values.value = node_id in has_values
    tensors[OBJECT_GRAPH_KEY] = np.array(graph.SerializeToString(), dtype=object)
    return write_bundle(os.fspath(prefix), tensors)


def _nodes_with_values(nodes):
    """The ids of the nodes with values of their own or below them."""
    found = {i for i, node in enumerate(nodes) if node['values']}
    changed = True
    while changed:
        changed = False
        for i, node in enumerate(nodes):
            if i not in found and any(child in found for _, child in node['children']):
                found.add(i)
                changed = True
    return found


# ---- The `checkpoint` state file ----------------------------------------------------------

class CheckpointState(object):
    """A folder's `checkpoint` file (TensorFlow's `CheckpointState`, in protobuf text form).

    # Attributes
        model_checkpoint_path: the latest checkpoint's prefix.
        all_model_checkpoint_paths: the prefixes kept, oldest first.
        all_model_checkpoint_timestamps: when each was written (seconds since the epoch).
        last_preserved_timestamp: when the last checkpoint kept for good was written.
    """

    def __init__(self, model_checkpoint_path='', all_model_checkpoint_paths=(),
                 all_model_checkpoint_timestamps=(), last_preserved_timestamp=None):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def __repr__(self):
        return 'CheckpointState(model_checkpoint_path=%r, all_model_checkpoint_paths=%r)' % (
            self.model_checkpoint_path, self.all_model_checkpoint_paths)


_STATE_LINE = re.compile(r'^\s*(\w+)\s*:\s*(?:"((?:[^"\\]|\\.)*)"|([-+0-9.eE]+|inf|nan))\s*$')


def read_state(directory, filename=STATE_FILE):
    """The `CheckpointState` of `directory`, None if it has no state file.

    # Raises
        ModelFileError: if the file is not a checkpoint state.
    """
    path = os.path.join(os.fspath(directory), filename)
    if not os.path.isfile(path):
        return None
    state = CheckpointState()
    with open(path, 'rb') as f:
        text = f.read().decode('utf8', 'replace')
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = _STATE_LINE.match(line)
        if match is None:
            raise ModelFileError(path, 'line %d is not a checkpoint state field: %r' % (
                number, line[:100]))
        field, string, value = match.groups()
        if string is not None:
            value = codecs.escape_decode(string.encode('utf8'))[0].decode('utf8', 'replace')
        if field == 'model_checkpoint_path':
            state.model_checkpoint_path = value
        elif field == 'all_model_checkpoint_paths':
            state.all_model_checkpoint_paths.append(value)
        elif field == 'all_model_checkpoint_timestamps':
            state.all_model_checkpoint_timestamps.append(float(value))
        elif field == 'last_preserved_timestamp':
            state.last_preserved_timestamp = float(value)
    return state


def _quoted(text):
    escaped = ''.join(c if c.isprintable() and c not in '"\\' else
                      ''.join('\\%03o' % b for b in c.encode('utf8')) for c in text)
    return '"%s"' % escaped


def write_state(directory, state, filename=STATE_FILE):
    """Writes `state` as `directory`'s state file (whole, or not at all)."""
    lines = ['model_checkpoint_path: %s' % _quoted(state.model_checkpoint_path)]
    lines += ['all_model_checkpoint_paths: %s' % _quoted(p)
              for p in state.all_model_checkpoint_paths]
    lines += ['all_model_checkpoint_timestamps: %r' % float(t)
              for t in state.all_model_checkpoint_timestamps]
    if state.last_preserved_timestamp is not None:
        lines.append('last_preserved_timestamp: %r' % float(state.last_preserved_timestamp))
    with replacing(os.path.join(os.fspath(directory), filename)) as temporary:
        with open(temporary, 'w') as f:
            f.write('\n'.join(lines) + '\n')
