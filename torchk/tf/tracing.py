"""`tf.function`: a Python step recorded once per input signature and run as one program.

TF traces a `tf.function` into a graph; torchk records it into the graph `K.function`
compiles (`torchk/program.py` and its passes), so a training step written as Python (a
`GradientTape` block, `optimizer.apply_gradients`, `metric.update_state`) runs as one
straight-line program: the forward pass, autograd's backward (`GradientTape.gradient` of a
symbol is `K.gradients`), the optimizer's fused update and the metrics' updates. The facade's
`Model.fit` runs `train_step`, `test_step` and `predict_step` the same way, as tf.keras does.

TF's rules, kept:
- The Python runs when the function is first called with an input signature, on
  placeholders standing for its tensor arguments; its side effects (prints, appends to
  lists) happen then only. A call with another signature records again. A tensor's
  signature is its dtype and shape, the first axis left out (one program serves every batch
  size, as `reduce_retracing=True` does); other arguments count by value (Python numbers,
  strings) or by identity (other objects).
- Program order: what the step writes into variables (an optimizer's `apply_gradients`, a
  metric's `update_state`, batch normalization's moving statistics, `tf.Variable.assign`)
  is collected as updates, and ops recorded after a write read the written value (so
  `metric.result()` after `update_state` gives the updated result). All updates are written
  after the program has computed its outputs.
- Results are tensors, in the structure the Python returned: Python numbers, booleans and
  strings among them become tensors too (`return 0` gives an int32 scalar), as TF converts
  a function's outputs; None and other objects are returned as they are.

What cannot be recorded: Python that needs a tensor's value (`if` on a tensor, `float(t)`,
`.numpy()`; TF's autograph turns some of these into graph control flow, torchk does not), or
ops torchk cannot record. Recording then raises, and that signature of the function runs
its Python eagerly on every call from then on, after a one-time message naming the error.
`tf.config.run_functions_eagerly(True)` runs every function eagerly. So does a call made
while a `tf.GradientTape` records: TF differentiates through its traced graph, and torchk's
programs run outside autograd, so the Python runs on the tensors for the tape to see it.
"""
import contextlib
import functools
import inspect
import sys

import numpy as np
import torch

from .. import config
from .. import function as keras_function
from .. import graph
from .. import program as keras_program
from ..variables import Variable
from .. import structure
from .. import tf_dtypes

# The signatures and concrete functions of tf.functions (`function_capture`, which builds on
# this module, sets itself here when it is imported: `torchk.tf` imports it).
capture = None

_ACCEPTED = ('input_signature', 'autograph', 'jit_compile', 'reduce_retracing',
             'experimental_relax_shapes', 'experimental_compile', 'experimental_implements',
             'experimental_autograph_options', 'experimental_follow_type_hints',
             'experimental_attributes', 'name')

_recordings = []
_settings = {'eager': False}
# Functions called with (function, args, kwargs) on each call of a `tf.function` outside a
# recording (`tf.summary.trace_on` lists the functions called).
call_observers = []
_EAGER = 'eager'

_capture_depth = [0]


def capturing():
    """Whether a `tf.function` is being traced into a torch program for saving
    (`function_capture.trace`): tensors then hold no values the host could read."""
    return _capture_depth[0] > 0


@contextlib.contextmanager
def capturing_for_saving():
    """Within, `capturing()` is true."""
    _capture_depth[0] += 1
    try:
        yield
    finally:
        _capture_depth[0] -= 1


def _tape_recording():
    """Whether a `tf.GradientTape` records now (`tape.py`, which imports this module)."""
    tape = sys.modules.get('torchk.tf.tape')
    return bool(tape is not None and tape._RECORDING)


def current():
    """The `Recording` under way, or None when nothing is being recorded."""
    return _recordings[-1] if _recordings else None


def run_functions_eagerly(run_eagerly):
    """`tf.config.run_functions_eagerly`: True runs every `tf.function` (and `fit`'s steps)
    as plain Python, call by call."""
    _settings['eager'] = bool(run_eagerly)


def functions_run_eagerly():
    """Whether `tf.function`s run eagerly (`run_functions_eagerly`)."""
    return _settings['eager']


class Recording:
    """The state of one recording of a Python step.

    # Attributes
        inputs: the placeholders standing for the step's tensor arguments.
        layer_losses: by layer id, the losses (`add_loss`, regularizers) of the layer's last
            call in the step, for `Layer.losses`.
    """

    def __init__(self, inputs):
        self.inputs = list(inputs)
        self.layer_losses = {}
        self._values = {}
        self._variables = {}

    def write(self, updates):
        """Records writes: `(variable, value)` pairs (Keras' updates, nested lists of them).
        Ops recorded from now on read `value` for `variable`."""
        for variable, value in keras_function.flatten_updates(updates):
            self._variables[id(variable)] = variable
            self._values[id(variable)] = value

    def read(self, variable):
        """The value `variable` holds at this point of the step."""
        return self._values.get(id(variable), variable)

    def written(self, symbols, replacements=()):
        """`symbols` (a list, of a graph built outside the step) computed with the values
        written so far in place of the variables, and the `(symbol, value)` pairs of
        `replacements` in place of other symbols (placeholders)."""
        replacements = [(self._variables[key], value) for key, value in self._values.items()
                        ] + list(replacements)
        if not replacements:
            return list(symbols)
        return keras_program.substitute(symbols, replacements)

    def updates(self):
        """The `(variable, value)` updates of the step: each variable's last value."""
        return [(self._variables[key], value) for key, value in self._values.items()]

    @contextlib.contextmanager
    def active(self):
        """Within, this recording is `current()` and ops read the written values."""
        _recordings.append(self)
        try:
            with graph.reading_written_values(self._values), graph.tf_equality():
                yield self
        finally:
            _recordings.pop()


def _is_value(leaf):
    """True for the arguments a placeholder stands for: tensors, arrays, numpy scalars."""
    return (isinstance(leaf, (np.ndarray, np.generic)) or isinstance(leaf, torch.Tensor)
            and not graph.is_symbol(leaf))


def _dtype_name(leaf):
    if isinstance(leaf, torch.Tensor):
        return str(leaf.dtype).replace('torch.', '')
    return config.floatx() if leaf.dtype == np.float64 else leaf.dtype.name


class TraceType:
    """`tf.types.experimental.TraceType`: what an object's `__tf_tracing_type__(context)`
    returns to choose its signature's program. Calls whose trace types are equal (`__eq__`
    and `__hash__`) share one; subclasses define those (TF's `is_subtype_of`,
    `most_specific_common_supertype` and `placeholder_value` are accepted, unused: the
    object itself is passed to the Python)."""

    def is_subtype_of(self, other):
        raise NotImplementedError

    def most_specific_common_supertype(self, others):
        raise NotImplementedError

    def placeholder_value(self, placeholder_context=None):
        raise NotImplementedError


def _key(leaf):
    tracing_type = getattr(type(leaf), '__tf_tracing_type__', None)
    if tracing_type is not None:
        return ('traced', tracing_type(leaf, None))
    if _is_value(leaf):
        return ('tensor', tuple(leaf.shape[1:]), leaf.ndim, _dtype_name(leaf))
    if leaf is None or isinstance(leaf, (bool, int, float, str, bytes)):
        return ('value', type(leaf).__name__, leaf)
    return ('object', id(leaf))


def _flat(args, kwargs):
    """The leaves of a call's arguments (keyword arguments by sorted name)."""
    return structure.flatten(list(args)) + structure.flatten(
        [kwargs[name] for name in sorted(kwargs)])


def _signature(args, kwargs):
    """A hashable key of a call: its structure and each leaf's `_key`."""
    def shape_of(value):
        if isinstance(value, dict):
            return ('dict', tuple((k, shape_of(value[k])) for k in sorted(value)))
        if isinstance(value, (list, tuple)):
            return (type(value).__name__, tuple(shape_of(v) for v in value))
        return _key(value)
    return (shape_of(list(args)), tuple(sorted((k, shape_of(v)) for k, v in kwargs.items())))


def _positional(python_function, instance, args, kwargs):
    """`(args, kwargs)` with the keyword arguments that `python_function` (a method of
    `instance`, if not None) takes by position moved into `args`, as TF's concrete functions
    canonicalize them."""
    try:
        parameters = list(inspect.signature(python_function).parameters.values())
    except (TypeError, ValueError):
        return args, kwargs
    parameters = parameters[1 if instance is not None else 0:]
    args, kwargs = list(args), dict(kwargs)
    for parameter in parameters[len(args):]:
        if parameter.kind != parameter.POSITIONAL_OR_KEYWORD or parameter.name not in kwargs:
            break
        args.append(kwargs.pop(parameter.name))
    return tuple(args), kwargs


def _as_tensors(result):
    """`result` with its Python numbers, booleans and strings as tensors (TF's dtypes: int32,
    float32, bool, string), as a `tf.function` returns them."""
    def leaf(value):
        if isinstance(value, (bool, int, float, str, bytes)):
            return tf_dtypes.value_to_tensor(value)
        return value
    return structure.map_structure(leaf, result)


def _output_spec(value):
    """A leaf of a call or its result as `signature_text` shows it: a tensor's
    `TensorSpec`."""
    from ..strings import StringTensor
    if isinstance(value, StringTensor):
        return capture.TensorSpec(tuple(value.shape), 'string')
    return capture.spec_of(value) if isinstance(value, torch.Tensor) else value


def _spec_text(value):
    if isinstance(value, capture.TensorSpec):
        shape = ('<unknown>' if value.shape is None
                 else str(tuple(value.shape)) if not isinstance(value.shape, tuple)
                 else str(value.shape))
        return 'TensorSpec(shape=%s, dtype=tf.%s, name=None)' % (shape, value.dtype)
    if isinstance(value, (list, tuple)):
        texts = [_spec_text(item) for item in value]
        return ('(%s,)' % texts[0] if isinstance(value, tuple) and len(texts) == 1
                else ('(%s)' if isinstance(value, tuple) else '[%s]') % ', '.join(texts))
    if isinstance(value, dict):
        return '{%s}' % ', '.join('%r: %s' % (k, _spec_text(v)) for k, v in value.items())
    if value is None:
        return 'None'
    return 'Literal[%r]' % (value,)


def signature_text(python_function, template, outputs, verbose=True):
    """A concrete function's signature as TF prints it (`pretty_printed_signature`).

    # Arguments
        python_function: the function, for its parameters' names and kinds.
        template: `[args, kwargs]` of the call, tensors as `TensorSpec`s.
        outputs: the result, tensors as `TensorSpec`s.
        verbose: TF's long form (parameters, output type, captures) or its one line.
    """
    import inspect
    args, kwargs = template
    try:
        parameters = list(inspect.signature(python_function).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    given = []
    for i, value in enumerate(args):
        parameter = parameters[i] if i < len(parameters) else None
        given.append((parameter.name if parameter else 'args_%d' % i,
                      parameter.kind.name if parameter else 'VAR_POSITIONAL', value))
    kinds = {p.name: p.kind.name for p in parameters}
    given += [(name, kinds.get(name, 'KEYWORD_ONLY'), kwargs[name]) for name in kwargs]
    if not verbose:
        return '(%s) -> %s' % (', '.join('%s: %s' % (name, _spec_text(value))
                                         for name, _, value in given), _spec_text(outputs))
    lines = ['Input Parameters:']
    lines += ['  %s (%s): %s' % (name, kind, _spec_text(value)) for name, kind, value in given]
    lines += ['Output Type:', '  ' + _spec_text(outputs), 'Captures:', '  None']
    return '\n'.join(lines)


class _Program:
    """A step recorded for one signature: `K.function` of its placeholders, its outputs and
    the updates it wrote.

    # Arguments
        recording: the finished `Recording`.
        result: what the Python returned (a structure of symbols, tensors, Python values).
        name: for messages.
    """

    def __init__(self, recording, result, name):
        self.result = result
        leaves = structure.flatten(result)
        self.positions = [i for i, leaf in enumerate(leaves) if graph.is_symbol(leaf)]
        outputs = [recording.read(leaves[i]) if isinstance(leaves[i], Variable) else leaves[i]
                   for i in self.positions]
        self.leaves = leaves
        self.function = keras_function.Function(recording.inputs, outputs,
                                                updates=recording.updates(), name=name,
                                                recorded=True)

    def __call__(self, values):
        computed = self.function(values)
        leaves = list(self.leaves)
        for position, value in zip(self.positions, computed):
            leaves[position] = value
        return structure.pack_as(self.result, leaves)


class Function:
    """A Python function called as `tf.function` calls it (see the module docstring).

    # Arguments
        python_function: the function as written.
        input_signature: `tf.TensorSpec`s of its tensor arguments, or None.
        name: for messages (default: the function's name).

    # Attributes
        python_function: the function as written.
        input_signature: the `input_signature` it was declared with, or None.
    """

    def __init__(self, python_function, input_signature=None, name=None):
        self.python_function = python_function
        self.input_signature = input_signature
        self._name = name or getattr(python_function, '__name__', 'function')
        self._programs = {}
        self._calls = {}
        self._outputs = {}
        self._told = False
        functools.update_wrapper(self, python_function)

    def __call__(self, *args, **kwargs):
        if current() is not None:
            # Called by a step being recorded, its ops join that recording.
            return self.python_function(*args, **kwargs)
        if self.input_signature is not None:
            self._check_signature(args, kwargs)
        key = _signature(args, kwargs)
        self._remember(key, args, kwargs)
        for observe in list(call_observers):
            observe(self, args, kwargs)
        if _settings['eager']:
            return self.python_function(*args, **kwargs)
        result = _as_tensors(self._run(key, args, kwargs))
        if key not in self._outputs:
            self._outputs[key] = (
                structure.map_structure(_output_spec, [list(args), dict(kwargs)]),
                structure.map_structure(_output_spec, result))
        return result

    def _check_signature(self, args, kwargs):
        """Raises TypeError, as TF does, for a tensor argument whose dtype or shape the
        `input_signature` does not accept."""
        specs = structure.flatten(list(self.input_signature))
        values = [leaf for leaf in _flat(args, kwargs) if _is_value(leaf)]
        for spec, value in zip(specs, values):
            shape = None if spec.shape is None else tuple(spec.shape)
            fits = shape is None or (len(shape) == value.ndim and all(
                d is None or d == n for d, n in zip(shape, value.shape)))
            if not fits or _dtype_name(value) != spec.dtype.name:
                raise TypeError('tf.function %s: an argument of dtype %s and shape %s does not '
                                'match its input_signature %r.' % (
                                    self._name, _dtype_name(value), tuple(value.shape), spec))

    def _run(self, key, args, kwargs):
        if _tape_recording():
            return self.python_function(*args, **kwargs)
        program = self._programs.get(key)
        if program is None:
            program = self._programs[key] = self._record(args, kwargs)
        if program is _EAGER:
            return self.python_function(*args, **kwargs)
        return program([np.asarray(leaf) if isinstance(leaf, np.generic) else leaf
                        for leaf in _flat(args, kwargs) if _is_value(leaf)])

    def pretty_printed_concrete_signatures(self, verbose=True):
        """The signatures called so far, as TF prints them: each one's input parameters
        (with their kind), output type and captures (verbose) or `(a: ...) -> ...`."""
        texts = []
        for template, outputs in self._outputs.values():
            texts.append(signature_text(self.python_function, template, outputs, verbose))
        return '\n\n'.join(texts)

    def _placeholders(self, args, kwargs):
        """`(args, kwargs)` with a placeholder for each tensor or array, and the
        placeholders in order."""
        specs = (structure.flatten(list(self.input_signature))
                 if self.input_signature is not None else None)
        made = []

        def symbol(leaf):
            if not _is_value(leaf):
                return leaf
            if specs is not None and len(made) < len(specs):
                spec = specs[len(made)]
                shape, dtype = spec.shape, spec.dtype.name
            else:
                shape = (None,) + tuple(leaf.shape[1:]) if leaf.ndim else ()
                dtype = _dtype_name(leaf)
            made.append(keras_function.placeholder(shape=shape, dtype=dtype))
            return made[-1]
        flat = [symbol(leaf) for leaf in _flat(args, kwargs)]
        names = sorted(kwargs)
        count = len(structure.flatten(list(args)))
        symbolic_args = structure.pack_as(list(args), flat[:count])
        rest = flat[count:]
        symbolic_kwargs = {}
        for name in names:
            size = len(structure.flatten(kwargs[name]))
            symbolic_kwargs[name] = structure.pack_as(kwargs[name], rest[:size])
            rest = rest[size:]
        return symbolic_args, symbolic_kwargs, made

    def _record(self, args, kwargs):
        symbolic_args, symbolic_kwargs, placeholders = self._placeholders(args, kwargs)
        try:
            with Recording(placeholders).active() as recording:
                result = self.python_function(*symbolic_args, **symbolic_kwargs)
            return _Program(recording, result, self._name)
        except Exception as error:  # noqa: BLE001 (any failure: the Python runs eagerly)
            if not self._told:
                self._told = True
                print('torchk: tf.function %s runs eagerly, call by call: its Python could '
                      'not be recorded as a program (%s: %s).'
                      % (self._name, type(error).__name__, str(error).split('\n')[0][:300]),
                      file=sys.stderr)
            return _EAGER

    def _remember(self, key, args, kwargs):
        """Keeps the signature of a call (tensors as `TensorSpec`s, other objects by id),
        for the concrete functions a SavedModel saves."""
        if key not in self._calls:
            self._calls[key] = capture.call_template(args, kwargs)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        return BoundFunction(self, instance)

    def concrete_function(self, instance, args, kwargs):
        """The `ConcreteFunction` of `args` and `kwargs` (`TensorSpec`s or values; none:
        `input_signature`, else the last signature called), on `instance` for a method.

        # Raises
            ValueError: if no signature is given nor known.
        """
        if not args and not kwargs:
            if self.input_signature is not None:
                args = tuple(self.input_signature)
            else:
                calls = self.concrete_arguments(instance)
                if not calls:
                    raise ValueError('tf.function %s: get_concrete_function() needs the input '
                                     'signature (TensorSpecs), as the function has none and '
                                     'was never called.' % self._name)
                args, kwargs = calls[-1]
        else:
            # As in TF, a signature asked for is saved with the function, as calls are, its
            # arguments named by keyword taken by position where they can be.
            args, kwargs = _positional(self.python_function, instance, args, kwargs)
            bound = ((instance,) if instance is not None else ()) + tuple(args)
            template = capture.call_template(bound, kwargs)
            self._calls.setdefault(('concrete', repr(template)), template)
        return capture.ConcreteFunction(self, instance, args, kwargs)

    def get_concrete_function(self, *args, **kwargs):
        """The `ConcreteFunction` of one signature (see `concrete_function`)."""
        return self.concrete_function(None, args, kwargs)

    def concrete_arguments(self, instance=None):
        """`[(args, kwargs)]` of the signatures called so far (on `instance`, for a method:
        the instance left out), tensors as `TensorSpec`s; those holding other objects than
        the instance are left out (a SavedModel could not call them)."""
        found = []
        for template in self._calls.values():
            arguments = capture.arguments_of(template, instance)
            if arguments is not None:
                found.append(arguments)
        return found


class BoundFunction(object):
    """A `tf.function` method of an instance (`instance.method`), as TF binds them: callable,
    with `get_concrete_function`."""

    def __init__(self, function, instance):
        self.function = function
        self.instance = instance
        functools.update_wrapper(self, function.python_function)

    def __call__(self, *args, **kwargs):
        return self.function(self.instance, *args, **kwargs)

    @property
    def python_function(self):
        return functools.partial(self.function.python_function, self.instance)

    @property
    def input_signature(self):
        return self.function.input_signature

    def get_concrete_function(self, *args, **kwargs):
        """The `ConcreteFunction` of one signature, on this instance."""
        return self.function.concrete_function(self.instance, args, kwargs)


def function(func=None, **options):
    """Decorator (with or without arguments) making `func` a `Function`.

    # Arguments
        func: the Python function.
        **options: TF's `tf.function` arguments (`input_signature`, `jit_compile`,
            `reduce_retracing`, `autograph`, `experimental_relax_shapes`, ...), accepted and
            unused except `input_signature` (the placeholders' shapes and dtypes) and `name`.

    # Returns
        A `Function`, or a decorator returning one when `func` is None.

    # Raises
        TypeError: for an argument `tf.function` does not have.
    """
    unknown = sorted(set(options) - set(_ACCEPTED))
    if unknown:
        raise TypeError('tf.function got unexpected arguments %s; accepted: %s.'
                        % (', '.join(unknown), ', '.join(_ACCEPTED)))
    if func is None:
        return functools.partial(function, **options)
    return Function(func, options.get('input_signature'), options.get('name'))
