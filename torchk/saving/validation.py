"""Checks that make a damaged or hostile model file fail fast and cleanly, before Keras reads it.

Keras 2.3.1 trusts what it reads. A functional configuration with a layer cycle, two layers of
one name or a call on a node no layer creates makes `Network.from_config` loop forever
(engine/network.py:1062, the `while unprocessed_nodes` loop); a configuration nested a few
thousand levels deep overflows the stack in its recursive readers; a layer declaring a huge
shape allocates it. So, during a load (`loading`):

- `check_nesting` bounds the nesting (and size) of a configuration before anything
  recursive reads it;
- `check_functional_config` replays `Network.from_config`'s node loop on the configuration
  alone (which layer call can run once which nodes exist) and names what would never connect;
- `Layer.add_weight` (its override `charging_weights`) charges every weight's declared size to
  the load's memory budget before the weight is allocated, and `check_weight_datasets` checks
  the sizes an HDF5 file declares before Keras reads them.

Each raises a ModelFileError naming the file (or 'the configuration') and what is wrong.
"""
import contextlib
import contextvars
import functools
import os

import numpy as np

from .errors import CONFIGURATION, ModelFileError, reading, source

MAX_DEPTH = 100
"""The deepest nesting of lists and dicts a configuration may have: a model nested in a model
adds 4, a wrapped layer 2; Python's recursion limit (1000 frames) is reached by the readers
well before 1000 levels."""

MAX_ITEMS = 10 ** 6
"""The most values a configuration may hold (tf_keras' NASNetMobile's holds 27,084)."""

BUDGET_VARIABLE = 'TORCHK_LOAD_MEMORY_BUDGET'

_LOAD_BYTES = contextvars.ContextVar('torchk_load_bytes', default=None)

# Layers that exist with one node before any call: node 0 of an `InputLayer` is its input,
# node 0 of a model is the one linking its inputs to its outputs (network.py:861-867).
_FIRST_NODE_CLASSES = ('InputLayer',)


def memory_budget():
    """The bytes of weights a load may allocate: `TORCHK_LOAD_MEMORY_BUDGET` if set, else
    half of the machine's physical memory (the rest is left to the optimizer's state and the
    computation)."""
    value = os.environ.get(BUDGET_VARIABLE)
    if value:
        return int(value)
    return os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2


@contextlib.contextmanager
def loading(path):
    """Runs a load of `path` (a file, a directory or `CONFIGURATION`) with its memory budget,
    its errors becoming ModelFileErrors naming it (`errors.reading`). A load inside another
    is part of the outer one."""
    if _LOAD_BYTES.get() is not None:
        yield
        return
    token = _LOAD_BYTES.set([0])
    try:
        with reading(path):
            yield
    finally:
        _LOAD_BYTES.reset(token)


def _where():
    return source() or CONFIGURATION


def _size(nbytes):
    for unit in ('bytes', 'KB', 'MB', 'GB', 'TB', 'PB'):
        if nbytes < 1000 or unit == 'PB':
            return ('%d %s' if unit == 'bytes' else '%.1f %s') % (nbytes, unit)
        nbytes /= 1000.


def charge(nbytes, what):
    """Counts `nbytes` against the load's memory budget (no-op outside a load).

    # Arguments
        nbytes: the size about to be allocated.
        what: what it is, for the error (e.g. "layer 'dense' weight 'kernel' (10, 10)").

    # Raises
        ModelFileError: if the load's allocations would exceed `memory_budget()`.
    """
    used = _LOAD_BYTES.get()
    if used is None:
        return
    budget = memory_budget()
    if used[0] + nbytes > budget:
        raise ModelFileError(_where(), '%s needs %s, which would take the model over the %s '
                             'a load may allocate (set %s, in bytes, to allow more).'
                             % (what, _size(nbytes), _size(budget), BUDGET_VARIABLE))
    used[0] += nbytes


def _weight_bytes(layer, name, shape, dtype):
    for dim in shape:
        if not isinstance(dim, (int, np.integer)) or dim < 0:
            raise ModelFileError(_where(), 'layer %r declares its weight %r with the shape %r; '
                                 'dimensions are counts (integers >= 0).'
                                 % (layer.name, name, tuple(shape)))
    from keras import backend
    itemsize = np.dtype(dtype or backend.floatx()).itemsize
    return int(np.prod([int(d) for d in shape], dtype=object)) * itemsize


def charging_weights(keras_add_weight):
    """Override of `Layer.add_weight`: each weight is charged to the load's budget before it
    is created."""
    @functools.wraps(keras_add_weight)
    def add_weight(self, *args, **kwargs):
        # passed on as given: Keras 2.2's add_weight takes at most two positional arguments
        named = dict(zip(('name', 'shape', 'dtype'), args), **kwargs)
        name, shape = named.get('name'), named.get('shape')
        if _LOAD_BYTES.get() is not None and shape is not None:
            charge(_weight_bytes(self, name, shape, named.get('dtype')),
                   'layer %r weight %r of shape %s' % (self.name, name, tuple(shape)))
        return keras_add_weight(self, *args, **kwargs)
    return add_weight


def check_nesting(config):
    """Raises a ModelFileError if `config` nests lists and dicts deeper than `MAX_DEPTH`, or
    holds more than `MAX_ITEMS` of them and their items (YAML aliases can make a small text
    a huge configuration)."""
    stack = [(config, 1)]
    items = 0
    while stack:
        value, depth = stack.pop()
        items += 1
        if items > MAX_ITEMS:
            raise ModelFileError(_where(), 'the configuration holds more than %d items; no '
                                 'Keras model has that many.' % MAX_ITEMS)
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, (list, tuple)):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            raise ModelFileError(_where(), 'the configuration nests more than %d levels deep; '
                                 'no Keras model does.' % MAX_DEPTH)
        stack.extend((child, depth + 1) for child in children)


def _invalid(what):
    return ModelFileError(_where(), 'the model configuration ' + what)


def _short(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + '...'


def _entries(node, layer):
    """The `(layer, node index)` inputs of one inbound node, in Keras 2.3.1's form."""
    if not isinstance(node, (list, tuple)):
        raise _invalid('gives layer %r the inbound node %s, not a list of inputs'
                       % (layer, _short(node)))
    entries = []
    for entry in node:
        if (not isinstance(entry, (list, tuple)) or len(entry) not in (3, 4)
                or not isinstance(entry[0], str)
                or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                           for i in entry[1:3])
                or (len(entry) == 4 and not isinstance(entry[3], dict))):
            raise _invalid('gives layer %r the input %s, where Keras expects '
                           '[layer name, node index, tensor index(, keyword arguments)]'
                           % (layer, _short(entry)))
        entries.append((entry[0], entry[1]))
    return entries


def _first_nodes(layer):
    config = layer.get('config')
    model = isinstance(config, dict) and 'layers' in config
    return 1 if model or layer.get('class_name') in _FIRST_NODE_CLASSES else 0


def check_functional_config(config):
    """Checks that Keras 2.3.1 can connect the layers of a functional model configuration.

    # Arguments
        config: the model's `'config'` (with `layers`, `input_layers`, `output_layers`), in
            Keras 2.3.1's form.

    # Raises
        ModelFileError: for a malformed layer list or node, two layers of one name, a call on
            a layer the model does not have, or calls that never connect (a cycle).
    """
    layers = config.get('layers')
    if not isinstance(layers, list):
        raise _invalid("has no list of 'layers'")
    names = []
    for layer in layers:
        if not isinstance(layer, dict) or not isinstance(layer.get('name'), str):
            raise _invalid('has a layer without a name: %s' % _short(layer))
        if layer['name'] in names:
            raise _invalid('has two layers named %r' % layer['name'])
        if not isinstance(layer.get('inbound_nodes'), list):
            raise _invalid("gives layer %r no list of 'inbound_nodes'" % layer['name'])
        names.append(layer['name'])
    pending = {}
    for layer in layers:
        nodes = [_entries(node, layer['name']) for node in layer['inbound_nodes']]
        for node in nodes:
            for inbound, _ in node:
                if inbound not in names:
                    raise _invalid('calls layer %r on layer %r, which the model does not have'
                                   % (layer['name'], inbound))
        pending[layer['name']] = nodes
    created = _connect(layers, pending)
    for key in ('input_layers', 'output_layers'):
        tensors = config.get(key)
        if not isinstance(tensors, list) or not tensors:
            raise _invalid('has no list of %r' % key)
        for tensor in tensors:
            for name, node in _entries([tensor], key):
                if name not in created or node >= created[name]:
                    raise _invalid('names %s in %r, a node the model does not create'
                                   % (_short(tensor), key))


def _connect(layers, pending):
    """Replays network.py:1062-1089: returns how many nodes each layer ends with, or raises
    naming a layer whose calls can never run."""
    created = {layer['name']: _first_nodes(layer) for layer in layers}
    progress = True
    while progress:
        progress = False
        for layer in layers:
            nodes = pending[layer['name']]
            while nodes and all(index < created[name] for name, index in nodes[0]):
                if nodes.pop(0):
                    created[layer['name']] += 1
                progress = True
    for layer in layers:
        if pending[layer['name']]:
            missing = [(name, index) for name, index in pending[layer['name']][0]
                       if index >= created[name]]
            raise _invalid('calls layer %r on node %d of layer %r, which no call creates '
                           '(the layers form a cycle, or the node does not exist)'
                           % ((layer['name'],) + missing[0][::-1]))
    return created


def check_weight_datasets(group):
    """Checks the weight datasets of an HDF5 model file before Keras reads them: together
    they must fit the load's memory budget, and an uncompressed dataset must not declare more
    bytes than the file stores for it (a damaged header would make the reader allocate them).

    # Arguments
        group: the file's `model_weights` h5py group.

    # Raises
        ModelFileError: naming the dataset and the sizes.
    """
    import h5py
    datasets = []
    group.visititems(lambda name, item: datasets.append((name, item))
                     if isinstance(item, h5py.Dataset) else None)
    total = 0
    for name, dataset in datasets:
        nbytes = int(np.prod([int(d) for d in dataset.shape], dtype=object)) * \
            dataset.dtype.itemsize
        if dataset.chunks is None and dataset.compression is None:
            stored = dataset.id.get_storage_size()
            if stored and stored < nbytes:
                raise ModelFileError(_where(), 'the weight %r declares %s but the file stores '
                                     '%s for it: the file is damaged.'
                                     % (name, _size(nbytes), _size(stored)))
        total += nbytes
    if total > memory_budget():
        raise ModelFileError(_where(), 'the weights declare %s, more than the %s a load may '
                             'allocate (set %s, in bytes, to allow more).'
                             % (_size(total), _size(memory_budget()), BUDGET_VARIABLE))
