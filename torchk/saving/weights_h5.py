"""tf.keras 2.13+ weights in the per-layer `vars` layout ("saving v3").

The `model.weights.h5` of a `.keras` zip, and the file `model.save_weights('x.weights.h5')`
writes, hold one HDF5 group per object: `layers/<name>/vars/<i>` for the i-th variable of a
layer (its trainable variables, then its other variables, in creation order), sublayers under
the attribute that holds them (`layers/bidirectional/forward_layer/cell/vars`), and
`optimizer/vars/<i>` for the optimizer. `<name>` is not the layer's name but its class name in
snake case, numbered among the layers of its model (`dense`, `dense_1`, ...).

`load_into(model, root, source)` sets a Keras 2.3.1 model's weights from such a group, through
Keras' own `preprocess_weights_for_loading`; `optimizer_weights(...)` names the optimizer's
variables as tf.keras' HDF5 files do, for `optimizer_state.restore_optimizer_state`.

Saved state: the text and categorical layers (`torchk.layers.text`, `.categorical`) keep what
`adapt` computes outside Keras weights, as tf.keras' do: variables named in their group
(`vars/idf_weights`, a `Discretization`'s summary `vars/0`) and asset files (the `.keras`
zip's `assets/<group>/vocabulary.txt`). Such a layer has `save_own_variables()` and
`save_assets()` (`{name: array}`, `{name: bytes}`), `load_own_variables(store)` and
`load_assets({name: lines})`, and may list in `saved_sublayers` the attributes under which
tf.keras writes the same state again (`TextVectorization._lookup_layer`); its Keras weights
(the IDF weights) are part of that state, not read as numbered `vars`. Their variables are
read with `vocabulary.MAX_BYTES` as the size limit and charged to the load's memory budget.
"""
import re

import h5py
import numpy as np

from . import validation, vocabulary
from .errors import ModelFileError

# tf.keras' class names of the layers that Keras 2.3.1 names otherwise (the file's group
# names are tf.keras').
TF_CLASS_NAMES = {'Model': 'Functional'}

# The sublayers, by the attribute holding them, whose variables follow the layer's own in
# tf.keras' `layer.weights`, for the layers Keras 2.3.1 (or torchk) keeps as one layer.
SUBLAYERS = {
    'MultiHeadAttention': ('_query_dense', '_key_dense', '_value_dense', '_output_dense'),
}

# The order in which tf.keras 2.11+ optimizers create their variables after the iteration
# count: each loop runs over the trainable variables and creates these slots for each; the
# slots are named as `optimizer_state.OPTIMIZER_SLOTS` knows them.
OPTIMIZER_SLOT_LOOPS = {
    'SGD': lambda config: [('m',)],
    'Adam': lambda config: [('m', 'v')] + ([('vhat',)] if config.get('amsgrad') else []),
    'AdamW': lambda config: [('m', 'v')] + ([('vhat',)] if config.get('amsgrad') else []),
    'Adamax': lambda config: [('m', 'u')],
    'Adagrad': lambda config: [('accumulator',)],
    'Adadelta': lambda config: [('accumulated_grad', 'accumulated_delta_var')],
    'RMSprop': lambda config: [('velocity',)] + ([('momentum',)] if config.get('momentum')
                                                 else []) + (
        [('average_gradient',)] if config.get('centered') else []),
}


def is_vars_layout(h5file, source):
    """Whether an open HDF5 file holds weights in the `vars` layout (not Keras 2's
    `layer_names` layout of `save_weights` and `model.save`).

    # Raises
        ModelFileError: naming `source`, where the file's root group is damaged.
    """
    try:
        return ('layer_names' not in h5file.attrs and 'model_weights' not in h5file
                and ('layers' in h5file or 'vars' in h5file))
    except H5_ERRORS as e:
        raise ModelFileError(source, 'its root group is damaged (%s: %s)'
                             % (type(e).__name__, e)) from e


def snake_case(class_name):
    """A class name as tf.keras names an object's group (`BatchNormalization` ->
    `batch_normalization`, `Conv2D` -> `conv2d`)."""
    words = re.sub(r'(.)([A-Z][a-z0-9]+)', r'\1_\2', class_name)
    name = re.sub(r'([a-z])([A-Z])', r'\1_\2', words).lower()
    return name if not name.startswith('_') else 'private' + name


def load_into(model, root, source, class_names=None, assets=None):
    """Sets a model's weights (and its layers' saved state) from a `vars` layout group.

    # Arguments
        model: a Keras 2.3.1 model, built.
        root: the h5py group holding `layers/...` (the file).
        source: the file's path, for errors.
        class_names: tf.keras' class name of each layer, by layer name, where the file came
            with its configuration; else the Keras class names are used (`TF_CLASS_NAMES`).
        assets: a function of a layer's group path returning its asset files
            (`{name: lines}`), where the file has assets (a `.keras` zip).

    # Returns
        The model's trainable weights in the order of tf.keras' `model.trainable_variables`
        (the order of the optimizer's slots).

    # Raises
        ModelFileError: naming the layer, where the file's variables disagree in number or
            shape with the layer's weights, or the file is damaged.
    """
    reader = _Reader(root, source, _largest_size(model.weights))
    pairs = []
    _load_network(model, '', reader, class_names or {}, pairs, assets)
    from keras import backend as K
    K.batch_set_value(pairs)
    trainable = {id(w) for w in model.trainable_weights}
    return [w for w, _ in pairs if id(w) in trainable]


def optimizer_weights(root, source, optimizer_config, trainable_weights):
    """The optimizer variables of a `vars` layout group named as tf.keras' HDF5 files name
    them (`iteration`, `Adam/m/dense/kernel`), for `optimizer_state.restore_optimizer_state`.

    # Arguments
        root: the h5py group holding `optimizer/vars`.
        source: the file's path, for errors.
        optimizer_config: the compiled Keras optimizer's class name and configuration
            (`{'class_name': ..., 'config': optimizer.get_config()}`), which the saved
            optimizer's translated into.
        trainable_weights: as `load_into` returns them.

    # Returns
        `(names, values)`, or a string saying why the state does not map.
    """
    reader = _Reader(root, source, _largest_size(trainable_weights))
    if not reader.has('optimizer'):
        return [], []
    if not reader.has('optimizer/vars'):
        return 'the file has no optimizer variables'
    class_name = optimizer_config['class_name']
    if class_name not in OPTIMIZER_SLOT_LOOPS:
        return 'Keras 2.3.1 keeps %s\'s state in another form' % class_name
    loops = OPTIMIZER_SLOT_LOOPS[class_name](optimizer_config['config'])
    count = 1 + sum(len(slots) for slots in loops) * len(trainable_weights)
    values = reader.variables('optimizer', 'the optimizer')
    if len(values) != count:
        return ('the file has %d optimizer variables where %s over %d trainable weights has %d'
                % (len(values), class_name, len(trainable_weights), count))
    names = ['iteration']
    for slots in loops:
        names.extend('%s/%s/%s' % (class_name, slot, weight.name.split(':')[0])
                     for weight in trainable_weights for slot in slots)
    return names, values


def _largest_size(weights):
    from keras import backend as K
    sizes = [int(np.prod(K.int_shape(w))) * 8 for w in weights]
    return max(sizes, default=8)


# What h5py raises for a damaged file, by where the damage is (a group's index, a link, a
# datatype, a dataset's header); a reader turns them into ModelFileError.
H5_ERRORS = (KeyError, OSError, RuntimeError, TypeError, ValueError, AttributeError,
              OverflowError)


class _Reader(object):
    """Reads the `vars` of a group, checking each variable's declared size against the
    largest weight of the model before it allocates (a damaged or hostile file can declare
    terabytes)."""

    def __init__(self, root, source, largest):
        self.root = root
        self.source = source
        self.largest = largest

    def has(self, path):
        try:
            return path in self.root
        except H5_ERRORS as e:
            raise ModelFileError(self.source, 'its group %r is damaged (%s: %s)'
                                 % (path, type(e).__name__, e)) from e

    def named_variables(self, path, owner):
        """`{name: array}` of `<path>/vars` (a layer's saved state); {} where there is none."""
        vars_path = path + '/vars'
        if not self.has(vars_path):
            return {}
        try:
            group = self.root[vars_path]
            keys = [str(key) for key in group.keys()]
        except H5_ERRORS as e:
            raise ModelFileError(self.source, 'the variables of %s (%s) cannot be listed (%s: '
                                 '%s)' % (owner, vars_path, type(e).__name__, e)) from e
        values = {}
        for key in keys:
            values[key] = self._read(group, '%s/%s' % (vars_path, key), key, owner,
                                     vocabulary.MAX_BYTES)
            validation.charge(values[key].nbytes, 'the variable %s/%s of %s'
                              % (vars_path, key, owner))
        return values

    def variables(self, path, owner):
        """The arrays of `<path>/vars`, in their order; [] where the group has none."""
        vars_path = (path + '/vars') if path else 'vars'
        if not self.has(vars_path):
            return []
        try:
            group = self.root[vars_path]
            keys = sorted(str(key) for key in group.keys())
        except H5_ERRORS as e:
            raise ModelFileError(self.source, 'the variables of %s (%s) cannot be listed (%s: '
                                 '%s)' % (owner, vars_path, type(e).__name__, e)) from e
        if set(keys) != {str(i) for i in range(len(keys))}:
            raise ModelFileError(self.source, 'the variables of %s (%s) are not numbered 0 to '
                                 '%d: %s' % (owner, vars_path, len(keys) - 1, keys[:10]))
        return [self._read(group, '%s/%d' % (vars_path, i), str(i), owner)
                for i in range(len(keys))]

    def _read(self, group, path, key, owner, limit=None):
        try:
            dataset = group[key]
            if not isinstance(dataset, h5py.Dataset) or dataset.dtype.kind not in 'fiub':
                raise ModelFileError(self.source, 'the variable %s of %s is not an array of '
                                     'numbers' % (path, owner))
            size = int(np.prod(dataset.shape, dtype=np.int64)) * dataset.dtype.itemsize
            if size > (limit or self.largest):
                raise ModelFileError(self.source, 'the variable %s of %s declares the shape %s '
                                     '(%d bytes), larger than %s'
                                     % (path, owner, dataset.shape, size,
                                        '%d bytes' % limit if limit else
                                        'any weight of the model'))
            value = np.asarray(dataset)
        except ModelFileError:
            raise
        except H5_ERRORS as e:
            raise ModelFileError(self.source, 'the variable %s of %s cannot be read (%s: %s)'
                                 % (path, owner, type(e).__name__, e)) from e
        return value.astype(value.dtype.newbyteorder('='), copy=False)


def _class_name(layer, class_names):
    name = class_names.get(layer.name, type(layer).__name__)
    return TF_CLASS_NAMES.get(name, name)


def _child_paths(path, layers, class_names):
    """The group of each layer of a model or list, numbered per class as tf.keras does."""
    used = {}
    paths = []
    for layer in layers:
        name = snake_case(_class_name(layer, class_names))
        if name in used:
            used[name] += 1
            name = '%s_%d' % (name, used[name])
        else:
            used[name] = 0
        paths.append('%s/%s' % (path, name) if path else name)
    return paths


def _load_network(network, path, reader, class_names, pairs, assets):
    from keras.engine.network import Network
    layers_path = (path + '/layers') if path else 'layers'
    for layer, child in zip(network.layers,
                            _child_paths(layers_path, network.layers, class_names)):
        if isinstance(layer, Network):
            _load_network(layer, child, reader, class_names, pairs, assets)
        elif hasattr(layer, 'load_own_variables'):
            _load_state(layer, child, reader, assets)
        elif layer.weights:
            _load_layer(layer, child, reader, pairs)


def saved_state_paths(layer, path):
    """The groups under which a layer with saved state has it: its own, and its
    `saved_sublayers`' (tf.keras writes the same state there)."""
    return [path] + ['%s/%s' % (path, name) for name in getattr(layer, 'saved_sublayers', ())]


def _load_state(layer, path, reader, assets):
    """A layer's saved state (see the module docstring): its assets first, which set its
    vocabulary, then its variables (the IDF weights of that vocabulary)."""
    owner = 'layer %r (%s)' % (layer.name, type(layer).__name__)
    if assets is not None and hasattr(layer, 'load_assets'):
        layer.load_assets(assets(path))
    layer.load_own_variables(reader.named_variables(path, owner))


def _load_layer(layer, path, reader, pairs):
    from keras.engine.saving import preprocess_weights_for_loading
    if not reader.has(path):
        raise ModelFileError(reader.source, 'it has no variables for layer %r (%s) at %r'
                             % (layer.name, type(layer).__name__, path))
    values = _values(layer, path, reader)
    weights = layer.weights
    if len(values) == len(weights):
        values = preprocess_weights_for_loading(layer, values, original_keras_version='2.13',
                                                original_backend='tensorflow')
    if len(values) != len(weights):
        raise ModelFileError(reader.source, 'layer %r (%s) has %d weights, the file %d '
                             'variables for it (%s)' % (layer.name, type(layer).__name__,
                                                        len(weights), len(values), path))
    from keras import backend as K
    for weight, value in zip(weights, values):
        if K.int_shape(weight) != tuple(value.shape):
            raise ModelFileError(reader.source, 'layer %r (%s) has the weight %s of shape %s, '
                                 'the file a variable of shape %s for it (%s)'
                                 % (layer.name, type(layer).__name__, weight.name,
                                    K.int_shape(weight), tuple(value.shape), path))
        pairs.append((weight, value))


def _values(layer, path, reader):
    """A layer's variables in tf.keras' `layer.weights` order: its own, then its sublayers'."""
    from keras.layers import RNN, Bidirectional, StackedRNNCells
    from keras.layers.wrappers import Wrapper
    class_name = type(layer).__name__
    values = reader.variables(path, 'layer %r (%s)' % (getattr(layer, 'name', '?'), class_name))
    if isinstance(layer, Bidirectional):
        for attribute in ('forward_layer', 'backward_layer'):
            values += _values(getattr(layer, attribute), '%s/%s' % (path, attribute), reader)
    elif isinstance(layer, Wrapper):
        values += _values(layer.layer, path + '/layer', reader)
    elif isinstance(layer, RNN):
        values += _values(layer.cell, path + '/cell', reader)
    elif isinstance(layer, StackedRNNCells):
        for cell, child in zip(layer.cells, _child_paths(path + '/cells', layer.cells, {})):
            values += _values(cell, child, reader)
    for attribute in SUBLAYERS.get(class_name, ()):
        values += reader.variables('%s/%s' % (path, attribute),
                                   'layer %r (%s)' % (layer.name, class_name))
    return values
