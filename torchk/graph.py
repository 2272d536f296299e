"""Symbolic tensors and the one mechanism that makes an op eager or lazy.

An op is a plain function over torch tensors, decorated with `@op`. Called on plain values
(torch tensors, numpy arrays, Python numbers) it runs at once. Called with a Keras leaf
anywhere in its arguments (a placeholder, a variable, or a `KerasTensor` built from them),
it records a `Node` and returns `KerasTensor`s instead; `program.py` later turns the recorded
nodes into straight-line code.

Static shapes come from running the same function on example values: `device='meta'`
tensors, each unknown dimension filled with 83 in one run and 89 in another. Dimensions that
differ between the runs are unknown (`None`). Shape tensors (`K.shape(x)`) stay real small
CPU integer tensors in those runs, so shape arithmetic flows through them. An op that meta
tensors cannot run (it reads tensor values) is run on real CPU tensors of the same sizes.
"""
import contextlib
import functools
import inspect
import itertools
import operator

import numpy as np
import torch

from . import config
from . import dtypes

_FILL_SIZES = (83, 89)
# How many of the sizes that a node's arguments fix are tried for its unknown dimensions.
_MAX_CONCRETE_SIZES = 8
_inference_device = None


def target_device():
    """Device for tensors an op creates from nothing (`arange`, random ops, constants).

    `meta` (or the CPU) while static shapes are being inferred, else the configured device.
    """
    return _inference_device if _inference_device is not None else config.device()


def inferring():
    """True while static shapes are being inferred (ops run on example values)."""
    return _inference_device is not None


_compiling_program = False


@contextlib.contextmanager
def compiling_program():
    """Marks the calls of a program that `torch.compile` compiles (`TORCHK_COMPILE=1`): in
    them `exporting()` is False, where torch (2.11) reports `is_exporting()` while dynamo
    traces for `torch.compile` too."""
    global _compiling_program
    previous, _compiling_program = _compiling_program, True
    try:
        yield
    finally:
        _compiling_program = previous


def exporting():
    """True while `torch.export` traces a program (`torchk.export`, or a user's
    `torch.export` of `to_torch(model)`): ops take their exportable forms (scans for the
    recurrences, `F.pad`, symbolic sizes), with no value checks."""
    return torch.compiler.is_exporting() and not _compiling_program


_drawing_initial_values = False


@contextlib.contextmanager
def drawing_initial_values():
    """Inside, random ops draw with CPU generators and move their samples to their device, so
    that a variable's random initial value (a Keras initializer's) is the same on every
    device for the same seed. Samples drawn while a program runs (dropout) stay on the
    device's own generator."""
    global _drawing_initial_values
    previous, _drawing_initial_values = _drawing_initial_values, True
    try:
        yield
    finally:
        _drawing_initial_values = previous


def draws_initial_values():
    """True inside `drawing_initial_values()`."""
    return _drawing_initial_values


@contextlib.contextmanager
def _inferring_on(device):
    global _inference_device
    previous, _inference_device = _inference_device, torch.device(device)
    try:
        yield
    finally:
        _inference_device = previous


class SymbolicOperators:
    """Python operators of Keras symbols: each one records a lazy op.

    Shared by `KerasTensor` and `Variable`. Augmented assignment (`x *= y`) returns a new
    symbol and never modifies anything in place, as Keras relies on. `==` and hashing are by
    identity, as for TF1 tensors; use `K.equal` for element-wise equality.
    """
    __array_ufunc__ = None

    def __add__(self, other):
        return record(operator.add, (self, _operand(other, self)))

    def __radd__(self, other):
        return record(operator.add, (_operand(other, self), self))

    def __sub__(self, other):
        return record(operator.sub, (self, _operand(other, self)))

    def __rsub__(self, other):
        return record(operator.sub, (_operand(other, self), self))

    def __mul__(self, other):
        return record(operator.mul, (self, _operand(other, self)))

    def __rmul__(self, other):
        return record(operator.mul, (_operand(other, self), self))

    def __truediv__(self, other):
        return record(operator.truediv, (self, _operand(other, self)))

    def __rtruediv__(self, other):
        return record(operator.truediv, (_operand(other, self), self))

    def __floordiv__(self, other):
        return record(operator.floordiv, (self, _operand(other, self)))

    def __rfloordiv__(self, other):
        return record(operator.floordiv, (_operand(other, self), self))

    def __mod__(self, other):
        return record(operator.mod, (self, _operand(other, self)))

    def __rmod__(self, other):
        return record(operator.mod, (_operand(other, self), self))

    def __pow__(self, other):
        return record(operator.pow, (self, _operand(other, self)))

    def __rpow__(self, other):
        return record(operator.pow, (_operand(other, self), self))

    def __matmul__(self, other):
        return record(operator.matmul, (self, _operand(other, self)))

    def __rmatmul__(self, other):
        return record(operator.matmul, (_operand(other, self), self))

    def __and__(self, other):
        return record(operator.and_, (self, _operand(other, self)))

    def __rand__(self, other):
        return record(operator.and_, (_operand(other, self), self))

    def __or__(self, other):
        return record(operator.or_, (self, _operand(other, self)))

    def __ror__(self, other):
        return record(operator.or_, (_operand(other, self), self))

    def __xor__(self, other):
        return record(operator.xor, (self, _operand(other, self)))

    def __rxor__(self, other):
        return record(operator.xor, (_operand(other, self), self))

    def __neg__(self):
        return record(operator.neg, (self,))

    def __pos__(self):
        return record(operator.pos, (self,))

    def __abs__(self):
        return record(operator.abs, (self,))

    def __invert__(self):
        return record(operator.invert, (self,))

    def __lt__(self, other):
        return record(operator.lt, (self, _operand(other, self)))

    def __le__(self, other):
        return record(operator.le, (self, _operand(other, self)))

    def __gt__(self, other):
        return record(operator.gt, (self, _operand(other, self)))

    def __ge__(self, other):
        return record(operator.ge, (self, _operand(other, self)))

    def __eq__(self, other):
        if _tf_equality and is_operand_value(other):
            return record(operator.eq, (self, _operand(other, self)))
        return self is other

    def __ne__(self, other):
        if _tf_equality and is_operand_value(other):
            return record(operator.ne, (self, _operand(other, self)))
        return self is not other

    def __hash__(self):
        return id(self)

    def __getitem__(self, key):
        return record(getitem, (self, key))

    __iadd__ = __add__
    __isub__ = __sub__
    __imul__ = __mul__
    __itruediv__ = __truediv__
    __ifloordiv__ = __floordiv__
    __imod__ = __mod__
    __ipow__ = __pow__
    __imatmul__ = __matmul__
    __iand__ = __and__
    __ior__ = __or__
    __ixor__ = __xor__


def _operand(value, like):
    """Nested lists and tuples of numbers (`x - [[1., 2., 3.]]`) become constants of `like`'s
    dtype, as TF converts the other operand of a binary operator."""
    if isinstance(value, (list, tuple)) and not contains_symbol(value):
        return torch.as_tensor(np.asarray(value), dtype=dtypes.to_torch(like.dtype),
                               device=config.device())
    return value


def getitem(x, key):
    """`x[key]` with numpy semantics, including negative slice steps (which torch lacks)."""
    key = key if isinstance(key, tuple) else (key,)
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    dim, rest = 0, []
    for k in key:
        if k is Ellipsis:
            dim += x.ndim - consumed
        elif isinstance(k, slice) and k.step is not None and int(k.step) < 0:
            positions = range(x.shape[dim])[slice(*(None if v is None else int(v)
                                                    for v in (k.start, k.stop, k.step)))]
            start = x.shape[dim] - 1 - positions.start
            x = x.flip(dim)[(slice(None),) * dim + (slice(start, start + len(positions) *
                                                         -positions.step, -positions.step),)]
            k = slice(None)
        if k is not None and k is not Ellipsis:
            dim += 1
        rest.append(k)
    return x[tuple(rest)]


class Node:
    """One recorded call: `fn(*args, **kwargs)`, where args may hold Keras symbols."""
    __slots__ = ('fn', 'args', 'kwargs', 'inputs', 'kind', '__weakref__')

    def __init__(self, fn, args, kwargs, inputs, kind='op'):
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.inputs = inputs
        self.kind = kind

    @property
    def name(self):
        return getattr(self.fn, '__name__', type(self.fn).__name__)

    def bound_arguments(self):
        """The node's arguments by `fn`'s parameter names, defaults included."""
        arguments = inspect.signature(self.fn).bind(*self.args, **self.kwargs)
        arguments.apply_defaults()
        return arguments.arguments


class KerasTensor(SymbolicOperators):
    """A symbolic tensor: a placeholder, or the result of an op on Keras symbols.

    It has a static `shape` (a tuple of ints and `None`s), a `dtype` string, and accepts any
    new attribute (Keras sets `_keras_history`, `_uses_learning_phase`, ...).
    """
    _uses_learning_phase = False

    def __init__(self, node, path, shape, dtype, examples=None, name=None):
        self.node = node
        self.path = path
        self._static_shape = shape
        self._torch_dtype = dtype
        self._examples = examples
        self.name = name

    @property
    def shape(self):
        return self._static_shape

    @property
    def ndim(self):
        return None if self._static_shape is None else len(self._static_shape)

    @property
    def dtype(self):
        return dtypes.name(self._torch_dtype)

    @property
    def _keras_shape(self):
        return self._static_shape

    @_keras_shape.setter
    def _keras_shape(self, shape):
        # Keras stores the shape its layers compute. The inferred shape is the truth: Keras
        # only fills in dimensions inference left unknown (a `Lambda` without `output_shape`
        # makes Keras guess "same as input", which must not win).
        if shape is None:
            return
        shape = tuple(shape)
        current = self._static_shape
        if current is None:
            self._static_shape = shape
        elif len(current) == len(shape):
            self._static_shape = tuple(c if c is not None else s for c, s in zip(current, shape))

    @property
    def is_placeholder(self):
        return self.node is None

    def __bool__(self):
        raise TypeError('The truth value of the symbolic tensor %s is not known until it is '
                        'evaluated; use K.switch for a conditional, or K.eval to get a value.'
                        % self._describe())

    def __len__(self):
        if not self._static_shape or self._static_shape[0] is None:
            raise TypeError('len() of the symbolic tensor %s is unknown: its first dimension is '
                            'not static; use K.shape(x)[0].' % self._describe())
        return self._static_shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __array__(self, dtype=None, copy=None):
        raise TypeError('The symbolic tensor %s has no value yet; use K.eval(x) or K.function.'
                        % self._describe())

    def __repr__(self):
        return '<KerasTensor %s>' % self._describe()

    def _describe(self):
        origin = self.name or ('placeholder' if self.node is None else self.node.name)
        return "'%s' shape=%s dtype=%s" % (origin, self._static_shape, self.dtype)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return record(func, args, kwargs or {})


def size_value(value):
    """A size given as a Python or numpy integer or a 0-d integer tensor, as an int.

    While a program is exported, a tensor's size is read with `item()`, which
    `torchk.export` makes return the symbolic size that the shape tensor holds.

    # Raises
        TypeError: if `value` is not an integer.
    """
    if isinstance(value, torch.Tensor) and exporting():
        return value.item()
    return operator.index(value)


def is_symbol(x):
    """True for Keras symbols: placeholders, variables and op results on them."""
    return isinstance(x, SymbolicOperators)


_evaluator = None


def evaluate(symbol):
    """Computes `symbol`'s value now, as a tensor, with the evaluator that `function.py`
    installs when it is imported (`set_evaluator`): the graph, the ops and the variables sit
    below programs and never import them.

    # Raises
        RuntimeError: if `torchk.function` was not imported.
    """
    if _evaluator is None:
        raise RuntimeError('Evaluating %r needs torchk.function; import torchk.core first.'
                           % (symbol,))
    return _evaluator(symbol)


def set_evaluator(evaluator):
    """Installs `evaluator(symbol) -> tensor` as the one `evaluate` calls."""
    global _evaluator
    _evaluator = evaluator


def contains_symbol(value):
    """True if a Keras symbol is anywhere in `value` (nested lists, tuples, dicts, slices)."""
    if isinstance(value, SymbolicOperators):
        return True
    if isinstance(value, (list, tuple)):
        return any(contains_symbol(v) for v in value)
    if isinstance(value, dict):
        return any(contains_symbol(v) for v in value.values())
    if isinstance(value, slice):
        return contains_symbol((value.start, value.stop, value.step))
    return False


def _map_structure(fn, value):
    """Applies `fn` to every leaf of nested lists, tuples, dicts and slices."""
    if isinstance(value, list):
        return [_map_structure(fn, v) for v in value]
    if isinstance(value, tuple):
        return tuple(_map_structure(fn, v) for v in value)
    if isinstance(value, dict):
        return {k: _map_structure(fn, v) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(*_map_structure(fn, (value.start, value.stop, value.step)))
    return fn(value)


def _symbols_in(value):
    found = {}

    def visit(leaf):
        if isinstance(leaf, SymbolicOperators):
            found.setdefault(id(leaf), leaf)
        return leaf
    _map_structure(visit, value)
    return tuple(found.values())


def op(fn=None, *, dynamic_axes=(), on_record=None):
    """Makes `fn`, a plain function over torch tensors, a Keras backend op.

    With a Keras symbol anywhere in its arguments the op records a node and returns
    `KerasTensor`s (in the structure `fn` returns); otherwise it runs at once.

    # Arguments
        fn: the function (`@op` and `@op(dynamic_axes=...)` both work).
        dynamic_axes: for an op whose output sizes depend on the values of its inputs (not
            only on their shapes), which cannot be inferred from example runs: the axes of
            each output to leave unknown, or a function of an output's position in the
            result (a tuple of indices) returning them.
        on_record: a function called with the op's arguments (a dict by parameter name)
            each time the op records, before the node is made: an op that reads a variable
            best in a memory layout of its own lays it out there (`variables.lay_out`),
            when the graph is built, before any program holds the variable's memory.
    """
    if fn is None:
        return functools.partial(op, dynamic_axes=dynamic_axes, on_record=on_record)
    signature = inspect.signature(fn) if on_record is not None else None

    @functools.wraps(fn)
    def dispatch(*args, **kwargs):
        if contains_symbol(args) or (kwargs and contains_symbol(kwargs)):
            if on_record is not None:
                on_record(signature.bind(*args, **kwargs).arguments)
            return record(fn, args, kwargs, dynamic_axes=dynamic_axes)
        return fn(*args, **kwargs)
    return dispatch


def random_op(fn):
    """Makes `fn` an op that always records: a graph draws a new sample on every run."""
    @functools.wraps(fn)
    def always_record(*args, **kwargs):
        return record(fn, args, kwargs)
    return always_record


def _freeze_constant(value):
    """Converts numpy values in op arguments to torch constants once, at record time."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return dtypes.as_tensor(value, device=config.device())
    if isinstance(value, (np.ndarray, np.generic)):
        # 0-d arrays are hyperparameters (`K.relu(x, alpha=K.cast_to_floatx(0.3))`) or
        # scalar operands: Python numbers, which every op takes.
        return value.item()
    return value


# While a layer computes in a lower precision than its variables (a mixed precision policy,
# `torchk.mixed_precision`): the dtype its float32 variables are read as, and the casts
# recorded so far, by variable.
_variable_reads = None


@contextlib.contextmanager
def reading_variables_as(dtype):
    """Inside, ops read float32 variables as `dtype` (a torch dtype, or None for as they are):
    one recorded cast per variable, as TF's auto-cast variables read inside a layer's call.
    Gradients flow back through the casts to the float32 variables."""
    global _variable_reads
    previous = _variable_reads
    _variable_reads = None if dtype in (None, torch.float32) else (dtype, {})
    try:
        yield
    finally:
        _variable_reads = previous


def read_variable(value):
    """`value` as ops read it now: a float32 variable inside `reading_variables_as` is its
    cast to that dtype; anything else is itself."""
    global _variable_reads
    reads = _variable_reads
    if (reads is None or not isinstance(value, SymbolicOperators)
            or not isinstance(value, torch.Tensor) or value.dtype != torch.float32):
        return value
    dtype, casts = reads
    if id(value) not in casts:
        _variable_reads = None
        try:
            casts[id(value)] = (value, record(_read_as, (value, dtype)))
        finally:
            _variable_reads = reads
    return casts[id(value)][1]


def _read_as(variable, dtype):
    """A variable's value read in a lower precision (`reading_variables_as`)."""
    return variable.to(dtype)


# While a Python step is recorded (`torchk.recording`): the values written so far into
# variables, by variable id; ops recorded from then on read them in place of the variables.
_written_values = None


@contextlib.contextmanager
def reading_written_values(values):
    """Inside, ops recorded with a variable whose id is a key of the dict `values` read
    that entry instead (a value written into the variable earlier in a recorded step); the
    dict may grow meanwhile."""
    global _written_values
    previous = _written_values
    _written_values = values
    try:
        yield
    finally:
        _written_values = previous


# True while a `tf.function` records (`tf_equality`): `symbol == 0` is then elementwise, as
# TF 2's tensors compare; elsewhere (Keras' graph building) symbols compare by identity.
_tf_equality = False


def is_operand_value(value):
    """A number, array, list of numbers or eager tensor: what `==` on a symbol compares
    elementwise under `tf_equality`, and on a `tf.Variable` (symbols, variables, None and
    other objects compare by identity)."""
    if isinstance(value, (list, tuple)):
        return bool(value) and all(not isinstance(v, torch.Tensor) and is_operand_value(v)
                                   for v in value)
    return (isinstance(value, (bool, int, float, np.ndarray, np.generic))
            or isinstance(value, torch.Tensor) and not isinstance(value, SymbolicOperators))


@contextlib.contextmanager
def tf_equality():
    """Inside, `==` and `!=` between a symbol and a number, array or eager tensor record an
    elementwise comparison, as TF 2's tensors do in a `tf.function`."""
    global _tf_equality
    previous = _tf_equality
    _tf_equality = True
    try:
        yield
    finally:
        _tf_equality = previous


def _written_value(value):
    if isinstance(value, SymbolicOperators) and id(value) in _written_values:
        return _written_values[id(value)]
    return value


def record(fn, args, kwargs=None, kind='op', dynamic_axes=()):
    """Records `fn(*args, **kwargs)` as a node and returns its symbolic results
    (`dynamic_axes` as for `op`)."""
    if _written_values:
        args, kwargs = _map_structure(_written_value, (tuple(args), dict(kwargs or {})))
    if _variable_reads is not None:
        args, kwargs = _map_structure(read_variable, (tuple(args), dict(kwargs or {})))
    args = _map_structure(_freeze_constant, tuple(args))
    kwargs = _map_structure(_freeze_constant, dict(kwargs or {}))
    node = Node(fn, args, kwargs, _symbols_in((args, kwargs)), kind)
    examples = _infer_examples(node)
    return _symbolic_results(node, examples, (), dynamic_axes)


def _symbolic_results(node, examples, path, dynamic_axes):
    first, second = examples
    text = _is_host_text(first)
    if isinstance(first, torch.Tensor) or text:
        if first.ndim == second.ndim:
            unknown = dynamic_axes(path) if callable(dynamic_axes) else dynamic_axes
            unknown = {axis % first.ndim for axis in unknown} if first.ndim else set()
            shape = tuple(None if a != b or i in unknown else a
                          for i, (a, b) in enumerate(zip(first.shape, second.shape)))
            if any(first.shape[i] == second.shape[i] == 0 for i in unknown):
                # Empty examples on an unknown axis (no tokens in the empty example text)
                # would make it empty downstream: later ops draw theirs from the shape.
                examples = None
        else:
            shape = None
        return KerasTensor(node, path, shape, dtypes.STRING if text else first.dtype,
                           examples)
    if isinstance(first, (list, tuple)):
        items = [_symbolic_results(node, (a, b), path + (i,), dynamic_axes)
                 for i, (a, b) in enumerate(zip(first, second))]
        return items if isinstance(first, list) else tuple(items)
    return first


def _is_host_text(value):
    """True for an op's text result: a numpy object array (of bytes, `torchk/strings.py`)."""
    return isinstance(value, np.ndarray) and value.dtype == object


def _is_shape_like(value):
    """Small integer CPU tensors (shapes, sizes) stay real during meta inference."""
    return (value.device.type == 'cpu' and value.ndim <= 1 and value.numel() <= 16
            and not value.is_floating_point() and not value.is_complex())


def _example(value, run, meta, hints):
    """The value standing for `value` in inference run `run` (0 or 1)."""
    if isinstance(value, KerasTensor):
        if id(value) in hints:
            return _new_example(hints[id(value)], value._torch_dtype, run, meta, value)
        if value._examples is None:
            return _new_example(value._static_shape, value._torch_dtype, run, meta, value)
        value = value._examples[run]
    elif isinstance(value, SymbolicOperators):
        value = value.detach()
    if not isinstance(value, torch.Tensor):
        return value
    if meta:
        if value.device.type == 'meta' or _is_shape_like(value):
            return value
        return torch.empty(value.shape, dtype=value.dtype, device='meta')
    if value.device.type == 'meta':
        return _new_example(tuple(value.shape), value.dtype, run, meta)
    return value.cpu()


def _new_example(shape, dtype, run, meta, symbol=None):
    if shape is None:
        raise ValueError('Cannot infer the shape of an op on %s: its rank is unknown. Give the '
                         'placeholder a shape or ndim.' % symbol._describe())
    size = tuple(_FILL_SIZES[run] if d is None else d for d in shape)
    if dtype is dtypes.STRING:
        return np.full(size, b'', dtype=object)
    if meta:
        return torch.empty(size, dtype=dtype, device='meta')
    # Values differ between the two runs, so that sizes that depend on values (decoded
    # sequences, masks) come out unknown.
    if dtype.is_floating_point:
        generator = torch.Generator().manual_seed(run)
        return torch.rand(size, generator=generator).to(dtype)
    if dtype == torch.bool:
        return torch.full(size, run == 0)
    return torch.full(size, run + 1, dtype=dtype)


def _fresh_shapes(node):
    """Inputs with unknown dimensions drawn anew from their static shapes: an example built
    upstream may have sizes no single fill gives (`K.flatten` of a `(None, None)` target has
    83 * 83 elements against a batch of 83)."""
    return {id(s): s._static_shape for s in node.inputs
            if isinstance(s, KerasTensor) and s.node is not None and s._static_shape
            and None in s._static_shape}


def _unified_shapes(node):
    """Unknown dimensions filled from other inputs of the same rank, as TF merges shapes.

    A Keras target placeholder has shape `(None, None)` while the output it is compared
    with has `(None, 10)`: one fill size for every unknown dimension cannot match both.
    """
    shapes = [(s, _static_shape_of(s)) for s in node.inputs]
    hints = {}
    for symbol, shape in shapes:
        if not isinstance(symbol, KerasTensor) or shape is None or None not in shape:
            continue
        merged = list(shape)
        for other, other_shape in shapes:
            if other is symbol or other_shape is None or len(other_shape) != len(shape):
                continue
            merged = [m if m is not None else o for m, o in zip(merged, other_shape)]
        if merged != list(shape):
            hints[id(symbol)] = tuple(merged)
    return hints


def _unit_inner_shapes(node):
    """Unknown dimensions after the first filled with 1: Keras' target placeholders have
    only a rank, `(None, None)`, and sparse labels are fed as `(batch, 1)`."""
    hints = {}
    for symbol in node.inputs:
        shape = _static_shape_of(symbol)
        if isinstance(symbol, KerasTensor) and shape and None in shape[1:]:
            hints[id(symbol)] = shape[:1] + tuple(1 if d is None else d for d in shape[1:])
    return hints


def _concrete_sizes(node):
    """Sizes above 1 that the node's arguments fix: the known first dimensions (batch sizes)
    of its tensors first, then their other dimensions and the integers among its arguments
    (`noise_shape=(8, 1)`)."""
    leading, other = [], []

    def visit(leaf):
        if isinstance(leaf, (torch.Tensor, KerasTensor)):
            for axis, size in enumerate(_static_shape_of(leaf) or ()):
                (leading if axis == 0 else other).append(size)
        elif isinstance(leaf, (int, np.integer)) and not isinstance(leaf, bool):
            other.append(int(leaf))
        return leaf
    _map_structure(visit, (node.args, node.kwargs))
    return list(dict.fromkeys(d for d in leading + other if d is not None and d > 1))


def _concrete_size_shapes(node):
    """Unknown batch dimensions (then all unknown dimensions) set to each size the node's
    arguments fix, as TF unifies an unknown dimension with a known one: an RNN's
    `initial_state` made with `K.variable` has a batch of 8 where the input's is unknown."""
    symbols = [s for s in node.inputs if isinstance(s, KerasTensor) and s._static_shape
               and None in s._static_shape]
    for size in _concrete_sizes(node)[:_MAX_CONCRETE_SIZES]:
        for leading_only in (True, False):
            hints = {}
            for symbol in symbols:
                shape = symbol._static_shape
                if leading_only:
                    shape = (size if shape[0] is None else shape[0],) + shape[1:]
                else:
                    shape = tuple(size if d is None else d for d in shape)
                hints[id(symbol)] = shape
            yield hints


def _class_axis_shapes(node):
    """An input with unknown inner dimensions given the dimensions of another input of its
    rank, except one of them that is 1: Keras' target placeholder for sparse labels has only
    a rank, and the labels of a `(batch, classes, h, w)` output have shape `(batch, 1, h, w)`."""
    shapes = [(s, _static_shape_of(s)) for s in node.inputs]
    for symbol, shape in shapes:
        if not isinstance(symbol, KerasTensor) or not shape or None not in shape[1:]:
            continue
        for other, other_shape in shapes:
            if other is symbol or other_shape is None or len(other_shape) != len(shape):
                continue
            for axis in range(1, len(shape)):
                if shape[axis] is None:
                    yield {id(symbol): tuple(
                        d if d is not None else 1 if i == axis else o
                        for i, (d, o) in enumerate(zip(shape, other_shape)))}


def _static_shape_of(symbol):
    if isinstance(symbol, KerasTensor):
        return symbol._static_shape
    return tuple(symbol.shape)


def _run_examples(node, meta, hints):
    results = []
    with _inferring_on('meta' if meta else 'cpu'):
        for run in (0, 1):
            convert = functools.partial(_example, run=run, meta=meta, hints=hints)
            args = _map_structure(convert, node.args)
            kwargs = _map_structure(convert, node.kwargs)
            results.append(node.fn(*args, **kwargs))
    return results


def _attempts(node):
    """The (meta, hints) pairs `_infer_examples` tries, in order; the later strategies are
    only built when the earlier ones have failed."""
    strategies = [{}] + [h for h in (_fresh_shapes(node), _unified_shapes(node),
                                      _unit_inner_shapes(node)) if h]
    consistent = []
    for hints in strategies:
        yield True, hints
    for hints in itertools.chain(_concrete_size_shapes(node), _class_axis_shapes(node)):
        consistent.append(hints)
        yield True, hints
    for hints in strategies + consistent:
        yield False, hints


def _infer_examples(node):
    """Runs the node on example values, trying in turn: meta tensors; meta tensors drawn
    anew from the inputs' static shapes, then with unknown dimensions unified across inputs,
    then with unknown inner dimensions of 1, then with unknown dimensions set to sizes the
    arguments fix, then with unknown inner dimensions taken from another input but one of 1;
    the same on real CPU tensors. An unknown dimension is only ever made consistent with a
    known one: two known sizes that differ still fail every attempt.

    Meta tensors have no values: ops that read values (`.item()`, data-dependent sizes) or
    mix devices fail on them but work on real tensors of the same sizes. When every attempt
    fails the op itself is wrong for these inputs, and the error of the plain real run is
    raised, with a note naming the shapes.
    """
    first_real_error = None
    for meta, attempt_hints in _attempts(node):
        try:
            return _run_examples(node, meta, attempt_hints)
        except (RuntimeError, NotImplementedError, ValueError, TypeError, IndexError) as e:
            if not meta and first_real_error is None:
                first_real_error = e
    if hasattr(first_real_error, 'add_note'):
        first_real_error.add_note(
            "torchk: raised while inferring the static shape of '%s' on inputs of shapes %s "
            "(unknown dimensions are tried with sizes %d and %d)." % (
                node.name, [_static_shape_of(s) for s in node.inputs], *_FILL_SIZES))
    raise first_real_error


def placeholder_tensor(shape, dtype, name):
    """A new placeholder symbol of static `shape` (None for unknown rank); a `'string'`
    placeholder is fed text, which stays on the host (`torchk/strings.py`)."""
    dtype = dtypes.STRING if dtypes.is_string(dtype) else dtypes.to_torch(dtype)
    return KerasTensor(None, (), None if shape is None else tuple(shape), dtype, None, name)
