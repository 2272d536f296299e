"""tf.keras' eager calls on Keras 2.3.1 objects: layers, models and metrics called on tensors.

In tf.keras 2 `model(x)` on a tensor computes at once, and a `train_step` or a
`GradientTape` loop differentiates the result. Keras 2.3.1 layers only build graphs, so an
eager call here is: the object called once on symbolic inputs shaped like the values (batch
size unknown), the graph compiled into a program (cached per input signature and learning
phase), and the program run on the values with autograd. Text (string tensors, arrays of
strings) is fed to string placeholders, whose host stage runs first (docs/ARCHITECTURE.md). The results are torch tensors
connected to the variables (`torch.nn.Parameter`s), so `torch.autograd.grad` (and
`tf.GradientTape`) reach the weights. In training mode the layer's updates (batch-norm
moving statistics) are applied after the call, and the losses it adds (`add_loss`,
regularizers) are kept for `Layer.losses` until the next eager call.

Metrics called on tensors (`update_state`, `__call__`) update their variables at once, and
`result()` after an eager update returns a tensor.

Layer calls reach `call_layer` from tf.keras' `Layer.__call__` (`engine/base_layer.py`).
Its overrides (`torchk.overrides`, applied when `torchk.keras` is imported) put the metric
paths on Keras' `Metric` and `metrics_utils`, and tf.keras 2's names for weights
(`trainable_variables`, `non_trainable_variables`, `variables`) on `Layer`.
"""
import contextlib
import threading

import numpy as np
import torch

import keras
from keras import backend as K
from keras.engine.input_layer import InputLayer
from keras.utils.generic_utils import to_list

from .. import config
from .. import cpu_threads
from .. import function
from .. import graph
from .. import program
from .. import strings
from ..passes import batch_norm_fusion
from ..tf import tracing as step_tracing
from ..variables import Variable

_tracing = threading.local()


def is_eager(value):
    """True if `value` (nested lists, tuples, dicts) holds tensors or arrays (of numbers or
    text) and no symbol."""
    found = leaves(value)
    return bool(found) and all(
        isinstance(v, (torch.Tensor, np.ndarray, float, int, np.number, strings.StringTensor))
        and not graph.is_symbol(v) for v in found) and any(
        isinstance(v, (torch.Tensor, np.ndarray, np.generic, strings.StringTensor))
        for v in found)


def _numbers_only(value):
    """True if `value` (nested lists, tuples, dicts) holds Python or numpy numbers only
    (metric data given as lists, `m.update_state([0, 1], [0.3, 0.5])`, or as a number,
    `loss_tracker.update_state(float(loss))`)."""
    found = leaves(value)
    return bool(found) and all(isinstance(v, (bool, int, float, np.generic)) for v in found)


def leaves(value):
    """The leaves of `value` (lists, tuples, dicts), in order."""
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in leaves(v)]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in leaves(v)]
    return [value]


def map_structure(fn, value):
    """`fn` applied to each leaf of `value` (lists, tuples, namedtuples, dicts), in its
    nesting."""
    if isinstance(value, list):
        return [map_structure(fn, v) for v in value]
    if isinstance(value, tuple):
        items = [map_structure(fn, v) for v in value]
        return type(value)(*items) if hasattr(value, '_fields') else tuple(items)
    if isinstance(value, dict):
        return {k: map_structure(fn, v) for k, v in value.items()}
    return fn(value)


def dtype_name(value):
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.float64:  # cast to floatx by `_tensor`
            return K.floatx()
        return str(value.dtype).replace('torch.', '')
    if strings.is_text(value):
        return 'string'
    dtype = np.asarray(value).dtype
    return K.floatx() if dtype == np.float64 else dtype.name


def _signature(value):
    """A hashable key of the shapes (batch size left out) and dtypes of `value`."""
    def key(leaf):
        shape = tuple(np.shape(leaf))
        return (shape[1:] if shape else None, dtype_name(leaf))
    return repr(map_structure(key, value))


class Program:
    """Symbolic `outputs`, `losses` and `updates` of `inputs`, compiled for one learning
    phase and run on values.

    # Arguments
        inputs: flat list of placeholders.
        outputs: flat list of symbols to return.
        losses: flat list of scalar symbols (added losses), returned after the outputs.
        updates: (variable, new value) pairs applied after each run.
        training: the learning phase (bool).
    """

    def __init__(self, inputs, outputs, losses=(), updates=(), training=False):
        updates = program.unique_updates(function.flatten_updates(updates))
        self.inputs = list(inputs)
        self.n_outputs, self.n_losses = len(outputs), len(losses)
        results = len(outputs) + len(losses)
        targets = function.specialise_phase(
            list(outputs) + list(losses) + [value for _, value in updates], int(training),
            self.inputs)
        # Fused batch-norm steps move their statistics in place, while the program runs.
        targets, updates = batch_norm_fusion.fuse(
            targets[:results], [(variable, value) for (variable, _), value in
                                zip(updates, targets[results:])], [False] * results,
            self.inputs)
        targets += [value for _, value in updates]
        _, sources = program.ancestors(targets, stop={id(x) for x in self.inputs})
        self.weights = [leaf for leaf in sources if isinstance(leaf, Variable)]
        self.run, unfed = program.compile_program(
            self.inputs + self.weights, targets, [], [False] * len(targets))
        missing = [p for p in unfed if not function.is_learning_phase(p)]
        if missing:
            raise ValueError('An eager call needs placeholder(s) %s that are not among its '
                             'inputs %s.' % (missing, self.inputs))
        self.phase = [torch.tensor(bool(training))] * len(unfed)
        self.updated = [variable for variable, _ in updates]

    def __call__(self, values):
        """Returns (outputs, losses) for the flat list `values`, after the updates."""
        cpu_threads.adapt()
        device = config.device()
        feeds = [function.convert_feed(symbol, _tensor(value), i, device)
                 for i, (symbol, value) in enumerate(zip(self.inputs, values))]
        plain = [w.as_subclass(torch.Tensor) for w in self.weights]
        results = self.run(*feeds, *plain, *self.phase)
        with torch.no_grad():
            for variable, value in zip(self.updated,
                                       results[self.n_outputs + self.n_losses:]):
                variable.copy_(value)
        return (results[:self.n_outputs],
                results[self.n_outputs:self.n_outputs + self.n_losses])


def _tensor(value):
    """An input of an eager call as a tensor; float64 data are cast to floatx, as tf.keras
    layers cast floating inputs to their dtype."""
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.float64 and K.floatx() != 'float64':
            return value.to(getattr(torch, K.floatx()))
        return value
    if strings.is_text(value):
        return strings.as_bytes(value)
    value = np.asarray(value)
    if value.dtype == np.float64:
        value = value.astype(K.floatx())
    return torch.from_numpy(contiguous(value))


def contiguous(array):
    """`array` in C order; a scalar stays one (numpy's `ascontiguousarray` gives it a
    dimension)."""
    return np.ascontiguousarray(array) if array.ndim else array


def _placeholder(value, name=None, batch=False):
    shape = tuple(np.shape(value))
    if not shape:
        # A scalar (`model(1)`): Keras 2.3.1's `Input` takes no empty shape, so its layer
        # is given the scalar placeholder, whose own shape stands.
        tensor = K.placeholder(shape=(), dtype=dtype_name(value), name=name)
        InputLayer(input_tensor=tensor, batch_input_shape=(1,)).batch_input_shape = ()
        return tensor
    batch_shape = ((shape[0] if batch else None),) + shape[1:]
    return keras.layers.Input(batch_shape=batch_shape, dtype=dtype_name(value), name=name)


def training_value(training):
    """The learning phase of an eager call given `training` (None: Keras' learning phase
    where it is set to a value, else inference)."""
    if training is None:
        phase = K.learning_phase()
        return bool(phase) if isinstance(phase, (int, bool)) else False
    return bool(training)


@contextlib.contextmanager
def tracing():
    """Marks a symbolic layer call (see `_keep_variables_symbolic_in_tf_ops`)."""
    _tracing.depth = getattr(_tracing, 'depth', 0) + 1
    try:
        yield
    finally:
        _tracing.depth -= 1


def in_layer_call():
    """Whether a layer's `call` is running on Keras symbols (`tracing`)."""
    return getattr(_tracing, 'depth', 0) > 0


def call_layer(layer, inputs, training, key, trace):
    """Calls a Keras layer or model on tensors or arrays (see the module docstring).

    # Arguments
        layer: a Keras `Layer` (a `Model` included).
        inputs: tensors or arrays (one, or lists and dicts of them), fed to placeholders of
            their shapes (batch size unknown, unless the layer is stateful) and dtypes.
        training: the learning phase (bool).
        key: a string that tells apart calls of other arguments.
        trace: a function of the placeholders (nested as `inputs`) that calls `layer` on
            them symbolically; it is called once per input signature, `training` and `key`.

    # Returns
        Torch tensors in the structure the layer returns, each carrying as `_keras_mask`
        the mask the layer computes for it (if any).
    """
    key = (_signature(inputs), training, key)
    if _keeps_batch_size(layer):
        key += (tuple(np.shape(v)[:1] for v in leaves(inputs)),)
    programs = layer.__dict__.setdefault('_torchk_eager_programs', {})
    if key not in programs:
        programs[key] = _build_layer_program(layer, inputs, training, trace)
    run, structure, masked = programs[key]
    results, losses = run([_tensor(v) for v in leaves(inputs)])
    layer._torchk_eager_losses = list(losses)
    outputs = results[:len(results) - len(masked)]
    for index, mask in zip(masked, results[len(outputs):]):
        outputs[index]._keras_mask = mask
    return pack(structure, outputs)


def _build_layer_program(layer, inputs, training, trace):
    batch = _keeps_batch_size(layer)
    symbols = map_structure(lambda value: _placeholder(value, batch=batch), inputs)
    flat_inputs = leaves(symbols)
    # The call is recorded as a step is (`tf/tracing.py`): its writes to `tf.Variable`s
    # (`assign_add` in `call`) are updates of the program, and what it returns of them their
    # written values. `tracing()` keeps the step's layer-state recording out of it: the
    # program takes the layer's updates itself.
    recording = step_tracing.Recording(flat_inputs)
    with recording.active(), tracing():
        outputs = trace(symbols)
    flat_outputs = [recording.read(x) if isinstance(x, Variable) else x
                    for x in leaves(outputs)]
    masks = [mask_of(x) for x in flat_outputs]
    masked = [i for i, mask in enumerate(masks) if mask is not None]
    losses = _computable(_each_once(layer.get_losses_for(flat_inputs)
                                    + layer.get_losses_for(None)), flat_inputs)
    updates = _computable(function.flatten_updates(
        layer.get_updates_for(flat_inputs) + layer.get_updates_for(None)
        if training else _state_updates(layer)), flat_inputs) + recording.updates()
    run = Program(flat_inputs, flat_outputs + [masks[i] for i in masked],
                  [K.sum(l) for l in losses], updates, training)
    return run, map_structure(lambda _: None, outputs), masked


def mask_of(symbol):
    """The mask Keras computed for a layer's output `symbol` (None if none)."""
    history = getattr(symbol, '_keras_history', None)
    if history is None:
        return None
    layer, node_index, tensor_index = history
    return to_list(layer._inbound_nodes[node_index].output_masks)[tensor_index]


def _state_updates(layer):
    """The updates of the stateful layers among `layer` and its layers (recurrent states),
    which inference applies too."""
    if getattr(layer, 'stateful', False):
        return layer.updates
    return list(getattr(layer, 'state_updates', []))


def _keeps_batch_size(layer):
    """A stateful recurrent layer's (or a model's holding one) batch size is part of its
    state: the placeholders of an eager call keep the values' batch size, as tf.keras'
    eager calls do."""
    layers = [layer] + list(getattr(layer, 'layers', []))
    return any(getattr(sub, 'stateful', False) for sub in layers)


def _each_once(losses):
    """`losses` without repeats: a network's `get_losses_for` returns its layers' losses,
    which Keras also keeps on the network; Keras' `losses` counts each once."""
    return list({id(loss): loss for loss in losses}.values())


def record_layer_state(layer, inputs, training):
    """After a layer's outermost symbolic call in a step being recorded (`tf/tracing.py`):
    in training (`training`: the call's argument, None for the learning phase), its updates
    (batch normalization's moving statistics) become writes of the step, as an eager call
    applies them; its losses are those `Layer.losses` gives until its next call."""
    recording = step_tracing.current()
    if recording is None or getattr(_tracing, 'depth', 0):
        return
    flat_inputs = leaves(inputs)
    fed = recording.inputs + flat_inputs
    if training_value(training):
        recording.write(_computable(function.flatten_updates(
            layer.get_updates_for(flat_inputs) + layer.get_updates_for(None)), fed))
    recording.layer_losses[id(layer)] = _computable(_each_once(
        layer.get_losses_for(flat_inputs) + layer.get_losses_for(None)), fed)


def _computable(items, inputs):
    """The losses (or `(variable, value)` updates) among `items` that `inputs` determine:
    a layer keeps those of all its calls (other placeholders, other eager calls)."""
    fed = {id(x) for x in inputs}

    def computable(item):
        value = item[1] if isinstance(item, tuple) else item
        _, sources = program.ancestors([value], stop=fed)
        return all(isinstance(leaf, Variable) or function.is_learning_phase(leaf)
                   for leaf in sources)
    return [item for item in items if computable(item)]


def pack(structure, flat):
    """The items of `flat`, in order, nested as `structure`."""
    flat = iter(flat)
    return map_structure(lambda _: next(flat), structure)


def layer_losses(layer):
    """The losses of the last eager call of `layer`, or its losses that need no inputs
    (regularizers) computed now; tensors. In a step being recorded, the losses of the
    layer's last call in the step (symbols)."""
    recording = step_tracing.current()
    if recording is not None:
        if id(layer) in recording.layer_losses:
            return list(recording.layer_losses[id(layer)])
        return _computable(_each_once(layer.get_losses_for(None)), recording.inputs)
    if '_torchk_eager_losses' in layer.__dict__:
        return list(layer._torchk_eager_losses)
    symbolic = _each_once(layer.get_losses_for(None))
    if not symbolic:
        return []
    _, losses = Program([], [], [K.sum(l) for l in symbolic])([])
    return list(losses)


def update_metric(metric, update_state, args, kwargs):
    """Runs `metric.update_state(*args, **kwargs)` on values: the variables are updated."""
    values = list(args) + [kwargs[k] for k in sorted(kwargs) if kwargs[k] is not None]
    names = sorted(k for k in kwargs if kwargs[k] is not None)
    values = [map_structure(_detached, v) for v in values]
    key = (_signature(values), tuple(names), len(args))
    programs = metric.__dict__.setdefault('_torchk_update_programs', {})
    if key not in programs:
        # A metric whose state has the shape of its values (MeanTensor) sees their batch size.
        whole = getattr(metric, 'state_has_value_shape', False)
        symbols = [map_structure(lambda v: K.placeholder(
            shape=tuple(np.shape(v)) if whole or not np.ndim(v)
            else (None,) + tuple(np.shape(v))[1:],
            dtype=dtype_name(v)), value) for value in values]
        symbolic_args = symbols[:len(args)]
        symbolic_kwargs = dict(zip(names, symbols[len(args):]))
        updates = update_state(*symbolic_args, **symbolic_kwargs)
        programs[key] = Program(leaves(symbols), [], [], updates or [])
    with torch.no_grad():
        programs[key]([_tensor(v) for v in leaves(values)])
    metric._torchk_eager = True


def _detached(value):
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, (float, int, np.number)):
        return np.asarray(value, dtype=K.floatx())
    return value


def metric_result(metric, result):
    """`metric.result()` computed now, as a tensor."""
    if '_torchk_result_program' not in metric.__dict__:
        metric._torchk_result_program = Program([], [result()])
    with torch.no_grad():
        outputs, _ = metric._torchk_result_program([])
    return outputs[0]


def trainable_variables(layer):
    """tf.keras' `Layer.trainable_variables`: the trainable weights."""
    return layer.trainable_weights


def non_trainable_variables(layer):
    """tf.keras' `Layer.non_trainable_variables`: the non-trainable weights."""
    return layer.non_trainable_weights


def variables(layer):
    """tf.keras' `Layer.variables`: the weights."""
    return layer.weights


def eager_update_state_wrapper(keras_update_wrapper):
    """Override of `keras.utils.metrics_utils.update_state_wrapper`: a metric's `update_state`
    on values updates it at once (`update_metric`); recorded in a step, it records its
    writes; on Keras symbols it is Keras'."""
    def update_state_wrapper(update_state_fn):
        update_state_fn = _writes_returned(update_state_fn)
        symbolic = keras_update_wrapper(update_state_fn)

        def decorated(metric, *args, **kwargs):
            recording = step_tracing.current()
            if recording is not None:
                updates = update_state_fn(*args, **kwargs)
                recording.write(updates or [])
                return updates
            values = list(args) + [v for v in kwargs.values() if v is not None]
            if _numbers_only(values):  # lists of numbers are arrays, as TF converts them
                args = [np.asarray(v) for v in args]
                kwargs = {k: v if v is None else np.asarray(v) for k, v in kwargs.items()}
                values = args
            if is_eager(values):
                return update_metric(metric, update_state_fn, args, kwargs)
            metric._torchk_eager = False
            return symbolic(metric, *args, **kwargs)
        return decorated
    return update_state_wrapper


def eager_result_wrapper(keras_result_wrapper):
    """Override of `keras.utils.metrics_utils.result_wrapper`: the result of a metric updated
    on values is computed at once (`metric_result`)."""
    def result_wrapper(result_fn):
        symbolic = keras_result_wrapper(result_fn)

        def decorated(metric, *args, **kwargs):
            if step_tracing.current() is not None:
                return symbolic(metric, *args, **kwargs)
            if metric.__dict__.get('_torchk_eager', True):
                return metric_result(metric, lambda: symbolic(metric, *args, **kwargs))
            return symbolic(metric, *args, **kwargs)
        return decorated
    return result_wrapper


def eager_metric_call(keras_metric_call):
    """Override of `Metric.__call__`: called on values, a metric updates and returns its
    result at once."""
    def metric_call(self, *args, **kwargs):
        values = list(args) + [v for v in kwargs.values() if v is not None]
        if step_tracing.current() is None and is_eager(values):
            self.update_state(*args, **kwargs)
            return self.result()
        return keras_metric_call(self, *args, **kwargs)
    return metric_call


def reset_state(metric):
    """tf.keras' `Metric.reset_state`: Keras 2.3.1's `reset_states`."""
    return metric.reset_states()


def weights_assign_as_tf_variables(variables_module):
    """Keras weights (`add_weight`'s variables, `torchk.variables.Variable`) get
    `tf.Variable`'s `assign`, `assign_add` and `assign_sub`, which tf.keras metrics'
    `update_state` call on their state, and `get_shape`."""
    from ..tf.variable import Variable as TFVariable
    for name in ('assign', 'assign_add', 'assign_sub', 'get_shape'):
        setattr(variables_module.Variable, name, getattr(TFVariable, name))


def _writes_returned(update_state_fn):
    """`update_state_fn` recorded as a step is (`tf/tracing.py`): on Keras symbols, the
    variable writes it makes (`self.total.assign_add(...)`, returning nothing, as tf.keras
    metrics do) are returned as its updates, which Keras' metric wrapper keeps."""
    def update_state(*args, **kwargs):
        recording = step_tracing.Recording([])
        with recording.active():
            updates = update_state_fn(*args, **kwargs)
        written = recording.updates()
        if not written:
            return updates
        return (to_list(updates) if updates is not None else []) + written
    return update_state


def eager_unless_tracing(tf_eager):
    """Override of `torchk.tf.namespaces.eager`: `tf.*` ops record on a layer's variables
    while Keras traces the layer's `call`.

    torchk.tf computes ops whose only Keras operands are variables eagerly (TF's eager
    mode). Inside a traced `call` (`self.add_loss(tf.reduce_sum(tf.square(self.w)))`) that
    would make a constant of the variables' values at tracing time, so there torchk.tf's
    variable-to-tensor step is skipped while a symbolic `Layer.__call__` runs.
    """
    def eager(value):
        if getattr(_tracing, 'depth', 0):
            return value
        return tf_eager(value)
    return eager
