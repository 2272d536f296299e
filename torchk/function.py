"""Running graphs: `function`, `gradients`, `eval`, the learning phase and `switch`."""
import contextlib

import numpy as np
import torch

from . import config
from . import cpu_threads
from . import dtypes
from . import graph
from . import program
from . import strings
from .passes import adam_fusion
from .passes import batch_norm_fusion
from .passes import compiled
from .passes import device_graphs
from .passes import feed_checks
from .passes import folding
from .passes import fusion
from .passes import host_scalars
from .passes import identities
from .passes import zeros
from .passes import phase
from .validation import format_shape
from .variables import Variable, reset_uids, sparse_tensor, to_numpy

_LEARNING_PHASE_NAME = 'keras_learning_phase'
# The passes that rewrite a program's nodes and updates, in order (`program.compile_program`).
UPDATE_PASSES = (adam_fusion, host_scalars, fusion)
# The numpy dtypes `torch.as_tensor` takes; a feed of another dtype is converted by numpy.
_TORCH_NUMPY_DTYPES = frozenset(np.dtype(name) for name in (
    'bool', 'uint8', 'uint16', 'uint32', 'uint64', 'int8', 'int16', 'int32', 'int64',
    'float16', 'float32', 'float64', 'complex64', 'complex128'))
_learning_phase_placeholder = None
_learning_phase_value = None


def placeholder(shape=None, ndim=None, dtype=None, sparse=False, name=None):
    """Instantiates a placeholder: a symbolic input fed when a function runs.

    # Arguments
        shape: tuple of ints and `None`s (unknown sizes), or None.
        ndim: number of axes, used when `shape` is None (all sizes unknown).
        dtype: dtype (default `K.floatx()`).
        sparse: whether it is fed with sparse (`scipy.sparse`) values.
        name: optional name, used in error messages.

    # Returns
        A `KerasTensor`.

    # Example
    >>> x = K.placeholder(shape=(None, 3))
    >>> K.int_shape(x)
    (None, 3)
    """
    if shape is None and ndim is not None:
        shape = (None,) * int(ndim)
    if shape is not None:
        shape = tuple(None if d is None else int(d) for d in shape)
    tensor = graph.placeholder_tensor(shape, dtype or config.floatx(), name)
    tensor._is_sparse = bool(sparse)
    return tensor


def is_placeholder(x):
    """True if `x` is a placeholder (a `K.placeholder` or Keras `Input`)."""
    return isinstance(x, graph.KerasTensor) and x.node is None


def learning_phase():
    """Returns the learning phase: the int 0 (test) or 1 (train) if it was set with
    `set_learning_phase`, else a scalar placeholder that defaults to 0 when not fed."""
    global _learning_phase_placeholder
    if _learning_phase_value is not None:
        return _learning_phase_value
    if _learning_phase_placeholder is None:
        _learning_phase_placeholder = placeholder(shape=(), dtype='bool',
                                                  name=_LEARNING_PHASE_NAME)
    return _learning_phase_placeholder


def set_learning_phase(value):
    """Fixes the learning phase to 0 (test) or 1 (train).

    # Raises
        ValueError: if `value` is not 0 or 1.
    """
    global _learning_phase_value
    if value not in (0, 1) or isinstance(value, float):
        raise ValueError('Expected learning phase to be 0 or 1, got %r.' % (value,))
    _learning_phase_value = int(value)


@contextlib.contextmanager
def learning_phase_scope(value):
    """Context manager that sets the learning phase to `value` (0 or 1) inside it."""
    global _learning_phase_value
    previous = _learning_phase_value
    set_learning_phase(value)
    try:
        yield value
    finally:
        _learning_phase_value = previous


def is_learning_phase(symbol):
    """True if `symbol` is the learning-phase placeholder."""
    return symbol is _learning_phase_placeholder and symbol is not None


def clear_session():
    """Resets the uids and the learning phase, as Keras' TF backend does."""
    global _learning_phase_placeholder, _learning_phase_value
    reset_uids()
    _learning_phase_placeholder = None
    _learning_phase_value = None


def _describe(symbol, position):
    name = getattr(symbol, 'name', None)
    return "input %d ('%s')" % (position, name) if name else 'input %d' % position


def convert_feed(symbol, value, position, device):
    """Checks a fed value against its placeholder and converts it to a tensor of the
    placeholder's dtype, as a TF session does (`np.asarray(value, dtype)`: floats truncate
    into ints); a value that already has that dtype is not copied."""
    if is_learning_phase(symbol):
        return torch.tensor(learning_phase_feed(value))
    if getattr(symbol, '_is_sparse', False) and hasattr(value, 'tocoo'):
        return sparse_tensor(value, symbol._torch_dtype, device)
    expected_dtype = symbol._torch_dtype
    if expected_dtype is dtypes.STRING:
        value = strings.as_bytes(value, _describe(symbol, position))
        _check_feed_shape(symbol, value.shape, position)
        return value
    if isinstance(value, torch.Tensor):
        given_shape = tuple(value.shape)
    else:
        if not isinstance(value, np.ndarray):
            value = np.asarray(value)
        if value.dtype not in _TORCH_NUMPY_DTYPES:
            value = _numeric_feed(symbol, value, position)
        given_shape = value.shape
    _check_feed_shape(symbol, given_shape, position)
    if device.type == 'cuda' and not isinstance(value, torch.Tensor):
        # Page-locked host memory lets the copy to the GPU run asynchronously.
        host = dtypes.as_tensor(value, dtype=expected_dtype).pin_memory()
        return host.to(device, non_blocking=True)
    return dtypes.as_tensor(value, dtype=expected_dtype, device=device)


def learning_phase_feed(value):
    """The value fed to the learning phase as a Python bool.

    # Raises
        TypeError: if `value` is not a scalar.
    """
    if isinstance(value, (bool, int, float, np.number, np.bool_)) or np.ndim(value) == 0:
        return bool(value)
    raise TypeError('The learning phase must be fed 0 or 1, got %r.' % (value,))


def _check_feed_shape(symbol, given_shape, position):
    expected_shape = symbol._static_shape
    if expected_shape is not None and (
            len(given_shape) != len(expected_shape)
            or any(e is not None and e != g for e, g in zip(expected_shape, given_shape))):
        raise ValueError('Cannot feed a value of shape %s to %s, which has shape %s.'
                         % (format_shape(given_shape), _describe(symbol, position),
                            format_shape(expected_shape)))


def _numeric_feed(symbol, value, position):
    """Converts a fed value that torch cannot take as it is (objects, long doubles) to the
    placeholder's dtype, as a TF session does; strings are refused."""
    expected = dtypes.to_numpy(symbol._torch_dtype)
    if value.dtype.kind not in 'SUV':
        try:
            return np.asarray(value, dtype=expected)
        except (TypeError, ValueError) as e:
            raise TypeError('Cannot feed %s: values of dtype %s do not convert to %s (%s).'
                            % (_describe(symbol, position), value.dtype, expected, e)) from e
    raise TypeError('Cannot feed %s: values of dtype %s (strings) do not convert to %s.'
                    % (_describe(symbol, position), value.dtype, expected))


def flatten_updates(updates):
    """Keras' updates (pairs, nested lists of pairs) as a flat list of (variable, value)."""
    flat = []
    for item in updates or []:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Variable):
            flat.append(item)
        elif isinstance(item, (list, tuple)):
            flat.extend(flatten_updates(item))
        else:
            raise TypeError('An update must be a (variable, new_value) pair as returned by '
                            'K.update, got %r.' % (item,))
    return flat


def _check_update_shapes(updates):
    for variable, value in updates:
        shape = int_shape_of(value)
        if shape is None or shape == ():
            continue
        target = tuple(variable.shape)
        if len(shape) != len(target) or any(
                s is not None and s != t for s, t in zip(shape, target)):
            raise ValueError('Cannot update %s of shape %s with a value of shape %s.'
                             % (variable.name, format_shape(target), format_shape(shape)))


def int_shape_of(x):
    """Static shape of a symbol, tensor, array or number: a tuple of ints and Nones."""
    if isinstance(x, graph.KerasTensor):
        return x._keras_shape
    if isinstance(x, torch.Tensor):
        return tuple(x.shape)
    return tuple(np.shape(x))


class Function:
    """A compiled `K.function`: call it with the list of input values.

    `recorded=True` (a recorded step's program, `torchk.recording`): the outputs are
    computed before the updates and returned as a list of tensors.
    """

    def __init__(self, inputs, outputs, updates=None, name=None, recorded=False):
        self.name = name
        self._recorded = recorded
        self.inputs = list(inputs or [])
        self._single = not isinstance(outputs, (list, tuple))
        self._structure = type(outputs) if not self._single else None
        self.outputs = [outputs] if self._single else list(outputs)
        for position, symbol in enumerate(self.inputs):
            if not isinstance(symbol, graph.KerasTensor):
                raise TypeError('K.function inputs must be placeholders or symbolic tensors; '
                                'input %d is %r.' % (position, symbol))
        self.updates = flatten_updates(updates)
        _check_update_shapes(self.updates)
        # A recorded step's outputs already read what the step wrote (`torchk.recording`):
        # all of them are computed from the state before the call.
        self._metric_flags = [not recorded and getattr(o, '_is_metric', False)
                              for o in self.outputs]
        unfed = self._unfed_placeholders()
        missing = [p for p in unfed if not is_learning_phase(p)]
        if missing:
            raise ValueError('K.function %s needs placeholder(s) %s, which are not among its '
                             'inputs: add them to `inputs`.'
                             % (name or '', ', '.join(p._describe() for p in missing)))
        # With the learning phase fed, a program per fed value is built on first use; an
        # unfed learning phase is 0 on every call.
        self._phase_position = next((i for i, s in enumerate(self.inputs)
                                     if is_learning_phase(s)), None)
        if not phase.enabled():
            self._phase_position = None
        self._programs = {}
        self._program = self._defaults = None
        self._checks = ()
        if self._phase_position is None:
            fixed_phase = False if unfed and phase.enabled() else None
            self._program, self._defaults, self._checks = self._build(fixed_phase)
        self._accepted = [None] * len(self.inputs)

    def _unfed_placeholders(self):
        """The placeholders the outputs and updates need that are not among the inputs."""
        targets = self.outputs + [value for _, value in self.updates]
        _, leaves = program.ancestors(targets, stop={id(s) for s in self.inputs})
        return [leaf for leaf in leaves if isinstance(leaf, graph.KerasTensor)]

    def _build(self, fixed_phase):
        """Compiles the program for a learning phase fixed to `fixed_phase` (None: as fed).

        Returns (program, values of the placeholders it needs that are not fed, checks of
        the fed values (`passes/feed_checks.py`))."""
        targets = self.outputs + [value for _, value in self.updates]
        if fixed_phase is not None:
            targets = specialise_phase(targets, fixed_phase, self.inputs)
        frozen = compiled.freezes_inference() and not program.computes_gradients(
            targets, self.inputs)
        if not frozen:
            # A program compiled with frozen weights is left unfolded: inductor folds it.
            targets = folding.fold(targets, self.inputs)
        targets = identities.simplify(targets, self.inputs)
        targets = zeros.rewrite(targets, self.inputs)
        targets, checks = feed_checks.hoist(targets, self.inputs)
        outputs = targets[:len(self.outputs)]
        updates = [(variable, value) for (variable, _), value in
                   zip(self.updates, targets[len(self.outputs):])]
        outputs, updates = batch_norm_fusion.fuse(outputs, updates, self._metric_flags,
                                                  self.inputs)
        # A whole-step compile plans its own memory: it gets no `out=` destinations.
        step = compiled.enabled()
        captured = not step and not frozen and device_graphs.applies(config.device())
        built, unfed = program.compile_program(self.inputs, outputs, updates,
                                               self._metric_flags,
                                               update_passes=None if step else UPDATE_PASSES,
                                               frozen=frozen, variable_arguments=step,
                                               host_variables=not captured)
        if frozen:
            built = compiled.FrozenProgram(built, self.name)
        elif step:
            built = compiled.CompiledProgram(built, self.name)
        elif captured:
            built = device_graphs.CapturedProgram(built, self.name,
                                                  copy_outputs=self._recorded)
        return built, [torch.tensor(False) for _ in unfed], checks

    def _select_program(self, fed_phase):
        """Sets `_program` and `_defaults` to the program for the learning phase `fed_phase`
        (a bool)."""
        if fed_phase not in self._programs:
            self._programs[fed_phase] = self._build(fed_phase)
        self._program, self._defaults, self._checks = self._programs[fed_phase]

    def _feed(self, position, value, device):
        """`convert_feed`, skipped for a numpy array of the same dtype, shape and strides as
        the last one fed at `position` when that one became a tensor sharing its memory:
        checking again would give the same answer, and `torch.from_numpy` the same tensor.
        A fed learning phase picks the program specialised on it, which does not read it: it
        stays a Python bool (no tensor made, no device read)."""
        if position == self._phase_position:
            return learning_phase_feed(value)
        if type(value) is np.ndarray and self._accepted[position] == (
                value.dtype, value.shape, value.strides, device):
            return torch.from_numpy(value)
        feed = convert_feed(self.inputs[position], value, position, device)
        shares = (type(value) is np.ndarray and isinstance(feed, torch.Tensor)
                  and device.type == 'cpu' and value.size and feed.layout == torch.strided and feed.data_ptr() == value.ctypes.data
                  and feed.numpy().dtype == value.dtype)
        self._accepted[position] = (value.dtype, value.shape, value.strides,
                                    device) if shares else None
        return feed

    def _run(self, feeds):
        """Runs the current program: under `torch.inference_mode` when it computes no
        gradient (no autograd bookkeeping at all), else with autograd off outside the
        gradient nodes. The context managers cost more than a small graph's whole run: the
        modes are set directly."""
        if not self._program.computes_gradients:
            guard = torch._C._InferenceMode(True)
            try:
                return self._program(*feeds, *self._defaults)
            finally:
                del guard
        grad_enabled = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)
        try:
            return self._program(*feeds, *self._defaults)
        finally:
            torch._C._set_grad_enabled(grad_enabled)

    def __call__(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise TypeError('A K.function is called with a list of input values, got %s.'
                            % type(inputs).__name__)
        if len(inputs) != len(self.inputs):
            raise ValueError('K.function %s expects %d input value(s), got %d.'
                             % (self.name or '', len(self.inputs), len(inputs)))
        cpu_threads.adapt()
        device = config.device()
        feeds = [self._feed(i, v, device) for i, v in enumerate(inputs)]
        if self._phase_position is not None:
            self._select_program(feeds[self._phase_position])
        for check in self._checks:
            check(inputs[check.position])
        values = self._run(feeds)
        if self._recorded:
            return [v.detach() if isinstance(v, torch.Tensor) else v for v in values]
        results = [_to_output(v) for v in values]
        if self._single:
            return results[0]
        return results if self._structure is list else self._structure(results)


def specialise_phase(targets, value, fed=()):
    """`targets` computed with the learning phase fixed to `value` (0 or 1) by the phase pass
    (`passes/phase.py`); unchanged when the pass is off or no learning phase was created.

    # Arguments
        targets: symbols (or constants): outputs, update values.
        value: the learning phase, 0 or 1.
        fed: symbols fed by each call: kept as they are, with their ancestors.

    # Returns
        A list like `targets`.
    """
    if not phase.enabled() or _learning_phase_placeholder is None:
        return list(targets)
    return phase.specialise(targets, _learning_phase_placeholder, value, fed)


def _to_output(value):
    if isinstance(value, torch.Tensor):
        return to_numpy(value)
    return value if value is None else np.asarray(value)


def function(inputs, outputs, updates=None, **kwargs):
    """Instantiates a Keras function: a graph compiled once into straight-line code.

    # Arguments
        inputs: list of placeholders (or intermediate tensors) fed on each call.
        outputs: list of tensors to compute (a single tensor returns a single value).
        updates: list of `(variable, new_value)` updates applied after the outputs.
        name: optional name.

    # Returns
        A callable taking the list of input values and returning a list of numpy arrays.

    # Raises
        ValueError: for an unknown keyword argument, or an unfed placeholder.
    """
    name = kwargs.pop('name', None)
    if kwargs:
        raise ValueError('Invalid argument(s) %s passed to K.function with the torchk '
                         'backend; it accepts only `name`.' % ', '.join(sorted(kwargs)))
    return Function(inputs, outputs, updates=updates, name=name)


def evaluate(x):
    """Computes a symbol's value now, as a tensor (placeholders must not be needed)."""
    if isinstance(x, Variable):
        return x.detach()
    if _is_update(x):
        # As TF runs an assign op: the update is applied, its value is the new value.
        run = Function([], [], updates=[x])
        with torch.no_grad():
            run._program(*run._defaults)
        return x[0].detach()
    run = Function([], [x])
    with torch.no_grad():
        return run._program(*run._defaults)[0]


graph.set_evaluator(evaluate)


def _is_update(x):
    """True for the `(variable, new_value)` pair of `K.update`, `update_add`, ..."""
    return isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], Variable)


def eval(x):
    """Evaluates a tensor or variable and returns its value as a numpy array.

    An update (`K.update`, `K.update_add`, ...) is applied, and its new value returned.

    # Raises
        ValueError: if the value depends on a placeholder (its name is given).
    """
    if graph.is_symbol(x) or _is_update(x):
        value = evaluate(x)
    else:
        value = x
    return _to_output(value) if isinstance(value, torch.Tensor) else np.asarray(value)


def _gradients_of(loss, *wrt, create_graph=False, retain_graph=None):
    # A non-scalar loss is differentiated as its sum (TF's rule): ones as its output
    # gradient, since a program may run this node where autograd does not record (a `sum`
    # here would not be differentiable).
    differentiable = [i for i, w in enumerate(wrt) if w.requires_grad]
    grads = [None] * len(wrt)
    if loss.requires_grad and differentiable:
        found = torch.autograd.grad(loss, [wrt[i] for i in differentiable], allow_unused=True,
                                    grad_outputs=torch.ones_like(loss),
                                    create_graph=create_graph, retain_graph=retain_graph)
        for i, g in zip(differentiable, found):
            grads[i] = g
    return tuple(torch.zeros_like(w) if g is None else g for g, w in zip(grads, wrt))


def gradients(loss, variables):
    """Returns the gradients of `loss` with respect to `variables`.

    # Arguments
        loss: scalar tensor to minimize (a non-scalar one is summed, as in TF).
        variables: a variable, placeholder or intermediate tensor, or a list of them.

    # Returns
        A list of gradient tensors, with `None` for a variable `loss` does not depend on.
    """
    wrt = list(variables) if isinstance(variables, (list, tuple)) else [variables]
    reachable = _reachable_from(loss)
    connected = [w for w in wrt if id(w) in reachable]
    if not connected:
        return [None] * len(wrt)
    node = graph.Node(_gradients_of, (loss,) + tuple(connected), {}, (loss,) + tuple(connected),
                      kind=program.GRADIENTS)
    by_id = {}
    for i, w in enumerate(connected):
        by_id[id(w)] = graph.KerasTensor(node, (i,), int_shape_of(w), _torch_dtype_of(w))
    return [by_id.get(id(w)) for w in wrt]


def _torch_dtype_of(x):
    return x._torch_dtype if isinstance(x, graph.KerasTensor) else x.dtype


def _reachable_from(target):
    if not graph.is_symbol(target):
        return set()
    nodes, leaves = program.ancestors([target], stop=set())
    reachable = {id(target)} | {id(leaf) for leaf in leaves}
    reachable.update(id(item) for node in nodes for item in node.inputs)
    return reachable


def stop_gradient(variables):
    """Returns `variables` (a tensor or a list) with gradients blocked."""
    if isinstance(variables, (list, tuple)):
        return [_detach(v) for v in variables]
    return _detach(variables)


@graph.op
def _detach(x):
    return x.detach()


def switch(condition, then_expression, else_expression):
    """Selects between two expressions by a condition.

    A scalar condition picks a whole branch; a condition of rank >= 1 selects element-wise
    (its shape is expanded on the right to the expressions' rank).

    # Arguments
        condition: tensor (int or bool), or a Python bool/int.
        then_expression, else_expression: tensors, or callables returning tensors.

    # Returns
        The selected tensor.
    """
    if isinstance(condition, (bool, int)) and not graph.is_symbol(condition):
        chosen = then_expression if condition else else_expression
        return chosen() if callable(chosen) else chosen
    if callable(then_expression):
        then_expression = then_expression()
    if callable(else_expression):
        else_expression = else_expression()
    return phase.select(condition, then_expression, else_expression)


def in_train_phase(x, alt, training=None):
    """Selects `x` in the training phase and `alt` otherwise.

    # Arguments
        x, alt: tensors or callables returning tensors.
        training: None (use `K.learning_phase()`), a Python bool/int, or a tensor.

    # Returns
        `x`, `alt`, or a new symbolic selection between them.
    """
    uses_learning_phase = training is None
    if training is None:
        training = learning_phase()
    # Keras compares by identity: only Python ints and bools are static phases.
    if type(training) in (int, bool) and training in (0, 1):
        chosen = x if training else alt
        return chosen() if callable(chosen) else chosen
    result = switch(training, x, alt)
    if uses_learning_phase:
        result._uses_learning_phase = True
    return result


def in_test_phase(x, alt, training=None):
    """Selects `x` in the test phase and `alt` otherwise (see `in_train_phase`)."""
    return in_train_phase(alt, x, training=training)


def print_tensor(x, message=''):
    """Returns `x`; each time it is computed, prints `message` and its value."""
    return _print_tensor(x, message)


@graph.op
def _print_tensor(x, message):
    if not graph.inferring():
        print(message, x)
    return x


@contextlib.contextmanager
def control_dependencies(control_inputs):
    """Context manager accepted for compatibility: `K.function` already orders updates
    before the `_is_metric` outputs that depend on them."""
    yield


class Session:
    """TF1-style session object for code that calls `K.get_session().run(...)`."""

    def run(self, fetches, feed_dict=None):
        """Evaluates `fetches` (a tensor or a list) with the placeholders in `feed_dict`."""
        feed_dict = feed_dict or {}
        single = not isinstance(fetches, (list, tuple))
        run = Function(list(feed_dict), [fetches] if single else list(fetches))
        values = run(list(feed_dict.values()))
        return values[0] if single else values


_session = Session()


def get_session():
    """Returns the compatibility `Session`."""
    return _session


def set_session(session):
    """Sets the session returned by `get_session`."""
    global _session
    _session = session


def manual_variable_initialization(value):
    """Accepted for compatibility: torchk variables are initialized when created."""
    return None
