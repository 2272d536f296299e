"""Mixing Keras 2 and PyTorch: torch modules in Keras models, Keras models in torch code.

- `TorchModule`: a Keras layer that runs any `torch.nn.Module`. The module's parameters and
  buffers are replaced by Keras variables (which are `torch.nn.Parameter`s), so Keras
  optimizers train them, `save_weights`/`load_weights` include them, and the module used
  directly in torch code reads the same storage.
- `to_torch(model)`: a `torch.nn.Module` whose `forward` runs a Keras model's compiled graph
  on torch tensors with autograd, sharing the model's variables as its parameters, so that
  `torch.optim` trains the Keras model in a plain torch loop.
- `DataLoaderSequence`: a `keras.utils.Sequence` over a torch `DataLoader`, for
  `fit_generator`, `evaluate_generator` and `predict_generator`.

Importing this module imports Keras, which must be configured to use torchk
(`KERAS_BACKEND=torchk.core`, or `"backend": "torchk.core"` in keras.json).
"""
import importlib
import re
import threading

import torch

import keras
from keras import backend as K

from . import config
from . import function
from . import graph
from . import program
from . import variables
from .variables import Variable

if K.backend() != 'torchk.core':
    raise ImportError("torchk.interop needs Keras running on the torchk backend, but Keras "
                      "loaded the '%s' backend: set KERAS_BACKEND=torchk.core before Keras is "
                      "first imported." % K.backend())

__all__ = ['TorchModule', 'KerasModule', 'to_torch', 'DataLoaderSequence']


# ------------------------------------------------------------------------------------------
# Torch modules inside Keras.

def _factory_path(factory):
    """The importable `'module:qualname'` path of `factory` (a callable or such a string)."""
    if isinstance(factory, str):
        path = factory
    else:
        path = '%s:%s' % (getattr(factory, '__module__', None),
                          getattr(factory, '__qualname__', None))
    try:
        resolved = _resolve_factory(path)
    except (ImportError, AttributeError, ValueError) as e:
        raise ValueError("TorchModule needs a factory importable by name ('package.module:"
                         "function'), so that a saved model can rebuild the module; %r is not "
                         "(%s). Use a function defined at module level." % (factory, e)) from None
    if not isinstance(factory, str) and resolved is not factory:
        raise ValueError("TorchModule factory %r is not the object found at '%s': use a function "
                         "defined at module level." % (factory, path))
    return path


def _resolve_factory(path):
    module_name, _, qualname = path.partition(':')
    if not module_name or not qualname or '<locals>' in qualname:
        raise ValueError("expected 'package.module:function', got %r" % path)
    target = importlib.import_module(module_name)
    for part in qualname.split('.'):
        target = getattr(target, part)
    return target


def _adopt_state(module):
    """Replaces the parameters and persistent buffers of `module` by Keras variables.

    A parameter becomes a `Variable` sharing its storage and `requires_grad`; a persistent
    buffer becomes a `Variable` that does not require gradients. Tied parameters stay tied
    (one variable), and variables already in place are kept.

    # Returns
        (names, variables): the dotted names `functional_call` takes, and their variables.
    """
    persistent = set(module.state_dict(keep_vars=True))
    adopted, names, state = {}, [], []

    def adopt(full_name, tensor, requires_grad):
        variable = adopted.get(id(tensor))
        if variable is None:
            variable = tensor if isinstance(tensor, Variable) else Variable(
                tensor.detach(), requires_grad, name=full_name)
            adopted[id(tensor)] = variable
            names.append(full_name)
            state.append(variable)
        return variable

    for prefix, submodule in module.named_modules():
        dotted = prefix + '.' if prefix else ''
        for name, parameter in list(submodule.named_parameters(recurse=False)):
            setattr(submodule, name, adopt(dotted + name, parameter, parameter.requires_grad))
        for name, buffer in list(submodule.named_buffers(recurse=False)):
            if dotted + name in persistent:
                submodule.register_buffer(name, adopt(dotted + name, buffer, False))
    return names, state


def _tensors_in(value, module):
    """The tensors of a module's output, flattened in order (`None` entries dropped)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors_in(item, module)]
    if value is None:
        return []
    raise TypeError('TorchModule: %s returned a %s; expected a tensor, or (nested) tuples or '
                    'lists of tensors.' % (type(module).__name__, type(value).__name__))


class _ModuleCall:
    """A graph node function: runs a module with its state given as arguments.

    The state arrives as the compiled program's autograd-connected aliases of the variables,
    so `K.gradients` (and a torch `backward` through `to_torch`) reach the variables. The
    module is in training mode when `training` is true, except while static shapes are
    inferred; the modes of its submodules are restored afterwards.
    """

    def __init__(self, module, state_names):
        self.module = module
        self.state_names = state_names
        self.__name__ = type(module).__name__

    def __call__(self, inputs, state, training):
        training = not graph.inferring() and bool(training)
        submodules = list(self.module.modules())
        modes = [m.training for m in submodules]
        self.module.train(training)
        try:
            result = torch.func.functional_call(
                self.module, dict(zip(self.state_names, state)), tuple(inputs))
        finally:
            for submodule, mode in zip(submodules, modes):
                submodule.training = mode
        tensors = _tensors_in(result, self.module)
        return tensors[0] if len(tensors) == 1 else tensors


class TorchModule(keras.layers.Layer):
    """A Keras layer that runs a `torch.nn.Module`.

    The module's parameters become the layer's weights: trainable if they require gradients
    (and the layer is trainable), non-trainable otherwise; its persistent buffers (such as
    batch-norm running statistics) become non-trainable weights. Each one is replaced in the
    module by a Keras `Variable` that shares its storage, so Keras optimizers update the
    module in place, `save_weights`/`load_weights`/`get_weights`/`set_weights` include it,
    and the module called directly on torch tensors sees the same values.

    The module runs in training mode when Keras' learning phase is 1 (`fit`) and in
    evaluation mode otherwise (`predict`, `evaluate`), so its dropout and batch norm behave
    as in torch. Its parameters and buffers are moved to torchk's device when the layer is
    created; move the module with `.to()` before wrapping it, not after (moving replaces
    buffers, which would no longer be the layer's weights). Its dtype must match its
    inputs' (`K.floatx()` by default).

    The layer's input is a tensor, or a list of tensors passed to `forward` as separate
    arguments. Its output is the module's output: a tensor, or the tensors of a (nested)
    tuple or list, flattened in order, with `None` entries dropped. Output shapes are
    inferred by running the module on meta tensors. The layer does not support masking.

    # Arguments
        module: the `torch.nn.Module` to run. May be omitted when `factory` is given.
        factory: a function, importable by name, that takes no argument and returns the
            module (or its path as a string, `'package.module:function'`). Needed only to
            serialize the layer (`model.save`, `to_json`, `clone_model`): its config records
            the path, and `from_config` calls the factory to rebuild the module; the weights
            travel separately, as for every Keras layer.
        **kwargs: standard Keras layer arguments (`name`, `trainable`, `input_shape`, ...).
            `dtype` is the dtype of the inputs used to infer output shapes before the layer
            is first called (`'int64'` for an `nn.Embedding`).

    # Raises
        TypeError: if neither a module nor a factory is given, or the module (or the
            factory's result) is not a `torch.nn.Module`.
        ValueError: if `factory` is not importable by name.

    # Example
    ```python
    import torch.nn as nn
    from keras.layers import Dense, Input
    from keras.models import Model
    from torchk.interop import TorchModule

    inputs = Input(shape=(16,))
    hidden = TorchModule(nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32)))(inputs)
    model = Model(inputs, Dense(3, activation='softmax')(hidden))
    model.compile('adam', 'sparse_categorical_crossentropy')
    ```
    """

    def __init__(self, module=None, factory=None, **kwargs):
        super(TorchModule, self).__init__(**kwargs)
        self.factory = None if factory is None else _factory_path(factory)
        if module is None:
            if self.factory is None:
                raise TypeError('TorchModule needs a torch.nn.Module to run, or a factory that '
                                'returns one; got neither.')
            module = _resolve_factory(self.factory)()
            if not isinstance(module, torch.nn.Module):
                raise TypeError("TorchModule's factory %s returned a %s; expected a "
                                'torch.nn.Module.' % (self.factory, type(module).__name__))
        if not isinstance(module, torch.nn.Module):
            raise TypeError('TorchModule wraps a torch.nn.Module; got a %s. Apply torch '
                            'functions to Keras tensors in a Lambda layer instead.'
                            % type(module).__name__)
        self.module = module.to(config.device())
        with variables.name_scope(self.name):
            names, state = _adopt_state(self.module)
        self._call = _ModuleCall(self.module, names)
        self._state = tuple(state)
        self._input_dtypes = None
        self._trainable_weights = [v for v in state if v.trainable]
        self._non_trainable_weights = [v for v in state if not v.trainable]

    def call(self, inputs, training=None):
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        self._input_dtypes = [K.dtype(x) for x in inputs]
        outputs = self._apply(inputs, K.learning_phase() if training is None else training)
        return outputs[0] if len(outputs) == 1 else outputs

    def _apply(self, inputs, training):
        """Records the module's call on `inputs`; returns the list of output symbols."""
        outputs = graph.record(self._call, (inputs, self._state, training))
        outputs = outputs if isinstance(outputs, list) else [outputs]
        if graph.is_symbol(training):
            for output in outputs:
                output._uses_learning_phase = True
        return outputs

    def compute_output_shape(self, input_shape):
        shapes = input_shape if isinstance(input_shape, list) else [input_shape]
        input_dtypes = self._input_dtypes or [self.dtype] * len(shapes)
        placeholders = [K.placeholder(shape=s, dtype=d) for s, d in zip(shapes, input_dtypes)]
        output_shapes = [K.int_shape(o) for o in self._apply(placeholders, 0)]
        return output_shapes[0] if len(output_shapes) == 1 else output_shapes

    def get_config(self):
        """Returns the layer's config, which records the module's factory.

        # Raises
            NotImplementedError: if the layer was created without a `factory`: a torch
                module has no config from which Keras could rebuild it.
        """
        if self.factory is None:
            raise NotImplementedError(
                "The TorchModule layer '%s' wraps a %s, which Keras cannot rebuild from a "
                "config: create the layer with factory=<a module-level function returning the "
                "module> to save the whole model (model.save, to_json, clone_model). "
                "save_weights/load_weights work without a factory."
                % (self.name, type(self.module).__name__))
        base_config = super(TorchModule, self).get_config()
        return dict(base_config, factory=self.factory)


# ------------------------------------------------------------------------------------------
# Keras models inside torch.

def _attribute_name(weight, layer_name, taken):
    """A torch attribute name for a Keras weight: `'dense_1/kernel:0'` gives `'kernel'`."""
    name = re.sub(r':\d+$', '', weight.name)
    if name.startswith(layer_name + '/'):
        name = name[len(layer_name) + 1:]
    name = re.sub(r'\W', '_', name)
    unique, count = name, 1
    while unique in taken:
        unique, count = '%s_%d' % (name, count), count + 1
    taken.add(unique)
    return unique


class _LayerWeights(torch.nn.Module):
    """Holds one Keras layer's weights: trainable ones as parameters, the others as buffers."""

    def __init__(self, layer, trainable_ids, registered):
        super(_LayerWeights, self).__init__()
        self._keras_class = type(layer).__name__
        taken = set()
        for weight in layer.weights:
            if id(weight) in registered:
                continue
            registered.add(id(weight))
            name = _attribute_name(weight, layer.name, taken)
            if id(weight) in trainable_ids:
                self.register_parameter(name, weight)
            else:
                self.register_buffer(name, weight)

    def extra_repr(self):
        return 'keras layer: %s' % self._keras_class


def _plain(tensor):
    """A variable as a plain tensor (inside a program, Python operators must be torch's);
    any other tensor (swapped in by `functional_call`) as it is."""
    return tensor.as_subclass(torch.Tensor) if isinstance(tensor, Variable) else tensor


class KerasModule(torch.nn.Module):
    """A `torch.nn.Module` that runs a Keras model (see `to_torch`).

    # Arguments
        model: a built Keras `Sequential` or functional `Model`.

    # Attributes
        keras_model: the Keras model.
        layers: a `ModuleDict` with one module per Keras layer that has weights, keyed by
            the layer's name; the layer's trainable weights are its parameters and its other
            weights its buffers, named after the Keras weights (`dense_1.kernel`).

    # Raises
        ValueError: if the model has no symbolic inputs and outputs (a `Sequential` never
            built, or a subclassed model), or its graph needs a placeholder that is not
            one of its inputs.
    """

    def __init__(self, model):
        super(KerasModule, self).__init__()
        if not getattr(model, 'inputs', None) or not getattr(model, 'outputs', None):
            raise ValueError('to_torch needs a Keras model with symbolic inputs and outputs; '
                             '%s has none. Build it first (give its first layer an input_shape)'
                             '; subclassed models are not supported.' % model.name)
        self.keras_model = model
        trainable_ids = {id(w) for w in model.trainable_weights}
        registered = set()
        self.layers = torch.nn.ModuleDict()
        for layer in model.layers:
            if layer.weights:
                key = re.sub(r'\W', '_', layer.name)
                self.layers[key] = _LayerWeights(layer, trainable_ids, registered)
        self._weight_paths = {id(weight): (key, name)
                              for key, weights in self.layers.items()
                              for name, weight in weights.named_parameters(recurse=False)}
        self._weight_paths.update((id(weight), (key, name))
                                  for key, weights in self.layers.items()
                                  for name, weight in weights.named_buffers(recurse=False))
        self._programs = {}

    def forward(self, *inputs):
        """Runs the Keras model on `inputs`, one tensor (or array) per model input.

        In training mode (`train()`, the default) the learning phase is 1 and the model's
        updates (batch-norm moving statistics) are applied; in `eval()` mode it is 0.

        # Returns
            The output tensor, or a tuple of them for a model with several outputs.

        # Raises
            ValueError: for a wrong number of inputs, or an input of the wrong shape.
        """
        model = self.keras_model
        if len(inputs) != len(model.inputs):
            raise ValueError('The Keras model %s takes %d input(s) (%s); forward got %d.' % (
                model.name, len(model.inputs), ', '.join(x.name or '?' for x in model.inputs),
                len(inputs)))
        feeds = [function.convert_feed(symbol, value, i, config.device())
                 for i, (symbol, value) in enumerate(zip(model.inputs, inputs))]
        run, weight_paths, updated = self._program(self.training)
        weights = [_plain(self._weight(path)) for path in weight_paths]
        values = run(*feeds, *weights)
        outputs = values[:len(model.outputs)]
        with torch.no_grad():
            for path, value in zip(updated, values[len(model.outputs):]):
                self._weight(path).copy_(value)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _weight(self, path):
        """The tensor this module holds at `path` (a `(layer key, attribute)` pair); a
        variable the module does not hold stands for itself."""
        if isinstance(path, Variable):
            return path
        key, name = path
        return getattr(self.layers[key], name)

    def _program(self, training):
        """The compiled model for a mode: `(run, weight_paths, updated)`.

        `run(*feeds, *weights)` returns the model's outputs, then (in training mode) the new
        values of the variables the model updates. `weights` are the tensors found at
        `weight_paths` (`(layer key, attribute)` pairs) in this module, read at each call so
        that `torch.func.functional_call` and parameter-swapping wrappers are obeyed;
        `updated` holds the paths of the updated variables (or the variables themselves).
        Variables that the graph reads but the module does not hold (made outside any
        layer) stay constants.
        """
        if training not in self._programs:
            model = self.keras_model
            updates = (program.unique_updates(function.flatten_updates(model.updates))
                       if training else [])
            targets = function.specialise_phase(
                list(model.outputs) + [value for _, value in updates], training, model.inputs)
            _, leaves = program.ancestors(targets, stop={id(x) for x in model.inputs})
            weights = [leaf for leaf in leaves if id(leaf) in self._weight_paths]
            compiled, unfed = program.compile_program(
                list(model.inputs) + weights, targets, [], [False] * len(targets))
            missing = [p for p in unfed if not function.is_learning_phase(p)]
            if missing:
                raise ValueError('The Keras model %s needs placeholder(s) %s, which are not '
                                 'among its inputs.' % (model.name, ', '.join(
                                     repr(p) for p in missing)))
            phase_values = [torch.tensor(bool(training))] * len(unfed)

            def run(*feeds):
                return compiled(*feeds, *phase_values)
            self._programs[training] = (
                run, [self._weight_paths[id(w)] for w in weights],
                [self._weight_paths.get(id(v), v) for v, _ in updates])
        return self._programs[training]


def to_torch(model):
    """Returns a `torch.nn.Module` that runs a Keras model on torch tensors.

    `forward(*inputs)` runs the model's compiled graph (inputs to outputs) with autograd, so
    a torch loss can be back-propagated to the model's weights and to the inputs. The
    module's parameters are the model's trainable weights themselves (Keras variables are
    `torch.nn.Parameter`s) and its buffers the other weights: a `torch.optim` optimizer
    built on `module.parameters()` trains the Keras model, whose `predict` and
    `save_weights` then see the new values, and the module can be part of a larger torch
    model. `train()` runs the model with learning phase 1 (dropout active, batch-norm
    moving statistics updated), `eval()` with 0.

    `forward` reads the weights through the module's attributes on every call, so
    `torch.func.functional_call` with other parameters or buffers runs the model on those
    (in train mode the given buffers receive the updates), and `torch.func.grad`/`vmap`
    (per-sample gradients) and parameter-swapping wrappers work.

    The module is a view of the model as it is now: the graph is compiled on the first call
    in each mode. It computes the model's outputs only: add Keras regularization penalties
    yourself (or use the torch optimizer's `weight_decay`); weight constraints are not
    applied by torch optimizers. Do not move it with `.to()`: the model lives on torchk's
    device (`TORCHK_DEVICE`), and inputs are moved there. With a learning phase fixed by
    `K.set_learning_phase`, `train()`/`eval()` change only whether updates are applied.

    # Arguments
        model: a built Keras `Sequential` or functional `Model`.

    # Returns
        A `KerasModule`.

    # Example
    ```python
    module = to_torch(model)
    optimizer = torch.optim.Adam(module.parameters(), lr=1e-3)
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(module(x), y)
        loss.backward()
        optimizer.step()
    model.predict(x_test)            # uses the trained weights
    ```
    """
    return KerasModule(model)


# ------------------------------------------------------------------------------------------
# Data.

def _batch_part(value):
    """A batch item as Keras takes it: CPU tensors as numpy arrays sharing their memory;
    tensors on another device as they are (Keras passes backend tensors through), with a
    1-D one made a column, as Keras does for arrays."""
    if isinstance(value, torch.Tensor):
        value = value.detach()
        if value.device.type == 'cpu':
            return value.numpy()
        return value.unsqueeze(1) if value.ndim == 1 else value
    if isinstance(value, list):
        return [_batch_part(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_batch_part(v) for v in value)
    if isinstance(value, dict):
        return {k: _batch_part(v) for k, v in value.items()}
    return value


class DataLoaderSequence(keras.utils.Sequence):
    """A `keras.utils.Sequence` that yields the batches of a torch `DataLoader`.

    For `fit_generator`, `evaluate_generator` and `predict_generator`. A batch that is a
    tuple or a list (as `default_collate` makes from `(x, y)` samples) is taken as
    `(x, y)` or `(x, y, sample_weight)`; any other batch as the inputs `x` alone. Within a
    batch, lists and dicts are kept (several model inputs or outputs, by position or by
    name). CPU tensors are converted with `.numpy()`, which shares their memory: no copy.

    Batches come in the loader's order: its sampler decides the shuffling (Keras' `shuffle`
    argument has no effect), and the batch index Keras asks for is not used. Let the
    loader's `num_workers` load in parallel, and keep Keras' defaults `workers=1`,
    `use_multiprocessing=False` (several Keras workers would reorder batches, and a
    process pool would copy the loader).

    # Arguments
        loader: a `torch.utils.data.DataLoader`, or any re-iterable with a length.

    # Raises
        TypeError: if the loader has no length (an `IterableDataset` without `__len__`):
            pass a generator (`iter(loader)`) with `steps_per_epoch` to Keras instead.

    # Example
    ```python
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model.fit_generator(DataLoaderSequence(loader), epochs=5)
    ```
    """

    def __init__(self, loader):
        try:
            self._length = len(loader)
        except TypeError:
            raise TypeError('DataLoaderSequence needs a loader with a length, to tell Keras '
                            'the number of steps per epoch; %r has none. Pass a generator '
                            '(iter(loader)) and steps_per_epoch to Keras instead.'
                            % (loader,)) from None
        self.loader = loader
        self._iterator = None
        self._lock = threading.Lock()

    def __len__(self):
        return self._length

    def __getitem__(self, index):
        with self._lock:
            if self._iterator is None:
                self._iterator = iter(self.loader)
            try:
                batch = next(self._iterator)
            except StopIteration:
                self._iterator = iter(self.loader)
                batch = next(self._iterator)
        if isinstance(batch, (list, tuple)):
            return tuple(_batch_part(part) for part in batch)
        return _batch_part(batch)

    def on_epoch_end(self):
        """Starts a new pass over the loader at the next batch."""
        with self._lock:
            self._iterator = None
