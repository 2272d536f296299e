"""Concrete functions: a `tf.function` (or a Keras model's call) traced for one input
signature into a graph of ATen operations (`torch.fx`), which a SavedModel saves
(`torchk.saving.saved_functions`) and torchk runs back without the Python that made it.

`trace` runs the Python once under `make_fx`, on placeholders: for the inputs (given by
`tf.TensorSpec`s; sizes are symbolic, so that the graph serves other sizes where a spec
leaves an axis unknown), and for every variable the function may read (those of the saved
object graph). Wherever an op meets a variable (found by its storage: `_Substitution`, a
torch function mode) its placeholder takes its place, so that the graph takes the variables
as inputs instead of freezing their values; `functionalize` turns the writes into variables
(`assign`) into outputs, the values to write after a run. Other tensors the Python captures
are constants of the graph. A Keras model's call is traced by `torch.export`
(`torchk.export.traced_program`, at learning phase 0) and read the same way.

A `Traced` function keeps the graph, what its inputs are (captured variables and constants,
then the arguments' tensors), which outputs update which variables, and the structures of
the arguments and of the result.
"""
import contextlib
import logging
import re
import sys

import numpy as np
import torch
from torch.func import functionalize
import torch.fx.experimental._config
from torch.fx.experimental.proxy_tensor import make_fx
from torch.overrides import TorchFunctionMode

from .. import variables
from .. import structure
from . import tracing
from .data import TensorSpec
from .dtypes import as_dtype

_EXAMPLE_SIZE = 2  # an unknown axis in the example inputs of a trace (not 0 or 1, which
# symbolic tracing would take for constants)
# The small sizes tried, each axis its own symbol, when a function fails at the example size
# (it needs an axis of a given size: the graph then has that size as a constant there), after
# the sizes the failure names and those of the variables the function may read.
_OTHER_EXAMPLE_SIZES = tuple(range(3, 17))


def spec_of(value, name=None):
    """The `tf.TensorSpec` of a tensor, array or number (TF's dtypes for Python numbers)."""
    if isinstance(value, TensorSpec):
        return value
    if isinstance(value, torch.Tensor):
        return TensorSpec(tuple(value.shape), as_dtype(value.dtype), name)
    array = np.asarray(value)
    dtype = {'float64': 'float32', 'int64': 'int32'}.get(array.dtype.name, array.dtype.name) \
        if not isinstance(value, np.ndarray) else array.dtype.name
    return TensorSpec(array.shape, as_dtype(dtype), name)


def is_tensor_like(value):
    return isinstance(value, (torch.Tensor, np.ndarray, np.generic, TensorSpec))


@contextlib.contextmanager
def _quiet_fake_tensors():
    """Within, torch does not log the traceback of an op that fails on fake tensors: a trace
    that fails is tried another way, and the first failure is raised."""
    logger = logging.getLogger('torch._subclasses.fake_tensor')
    disabled, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = disabled


def _example(spec, size=_EXAMPLE_SIZE):
    shape = () if spec.shape is None else tuple(size if d is None else d for d in spec.shape)
    return torch.ones(shape, dtype=spec.dtype.torch_dtype)


def _storage_key(tensor):
    """What identifies a real tensor's memory (a variable, or an alias of all of it), or
    None for a fake, functional or empty tensor."""
    if type(tensor) not in (torch.Tensor, torch.nn.Parameter) and not isinstance(
            tensor, variables.Variable):
        return None
    if torch._C._functorch.is_functorch_wrapped_tensor(tensor) or any(
            not isinstance(d, int) for d in tensor.shape):
        return None
    try:
        if tensor.is_meta or tensor.numel() == 0:
            return None
        return (tensor.untyped_storage().data_ptr(), tensor.storage_offset(),
                tuple(tensor.shape), tensor.stride(), tensor.dtype)
    except RuntimeError:  # a fake tensor of a trace: no memory of its own
        return None


class _Substitution(TorchFunctionMode):
    """Within, a torch function given (an alias of) a variable gets its placeholder."""

    def __init__(self, placeholders):
        super().__init__()
        self.placeholders = placeholders

    def _swap(self, value):
        if isinstance(value, torch.Tensor):
            return self.placeholders.get(_storage_key(value), value)
        if isinstance(value, (list, tuple)):
            return type(value)(self._swap(item) for item in value)
        return value

    def __torch_function__(self, func, types, args=(), kwargs=None):
        args = tuple(self._swap(arg) for arg in args)
        kwargs = {key: self._swap(value) for key, value in (kwargs or {}).items()}
        return func(*args, **kwargs)


@contextlib.contextmanager
def _functions_run_eagerly():
    previous = tracing.functions_run_eagerly()
    tracing.run_functions_eagerly(True)
    try:
        yield
    finally:
        tracing.run_functions_eagerly(previous)


class Traced(object):
    """A function traced for one signature.

    # Attributes
        graph: the `torch.fx.Graph`: placeholders for `captures`, then for the arguments'
            tensors; its output, the values of the updated variables (`updates`) then the
            result's tensors.
        captures: the variables and constant tensors the graph takes first, in order.
        updates: for each updated variable, its position in `captures`.
        arguments: `(args, kwargs)` as called, their tensors as `tf.TensorSpec`s.
        result: the structure of the result, its tensors as `tf.TensorSpec`s in order.
        dynamic: whether sizes were symbolic (else the graph is for the example sizes).
    """

    def __init__(self, graph, captures, updates, arguments, result, dynamic):
        self.graph = graph
        self.captures = captures
        self.updates = updates
        self.arguments = arguments
        self.result = result
        self.dynamic = dynamic


def _sizes_to_try(failures, variable_list):
    """The example sizes to try after `failures` at the example size: the numbers their
    messages name, the sizes of the variables' axes, then `_OTHER_EXAMPLE_SIZES` (each once,
    above the example size)."""
    named = [int(n) for failure in failures
             for n in re.findall(r'\b\d+\b', str(failure).split('\n')[0])]
    sizes = named + [d for v in variable_list for d in v.shape] + list(_OTHER_EXAMPLE_SIZES)
    return [s for i, s in enumerate(sizes) if s > _EXAMPLE_SIZE and s not in sizes[:i]]


def trace(python_function, args, kwargs, candidates):
    """Traces `python_function(*args, **kwargs)`.

    # Arguments
        python_function: the Python to trace.
        args, kwargs: the arguments: `tf.TensorSpec`s (or tensors, arrays) for the tensors,
            other values as they are.
        candidates: the variables the function may read (those it does are captured).

    # Returns
        A `Traced`.

    # Raises
        ValueError: if the Python cannot be traced (it needs a tensor's value).
    """
    arguments = structure.map_structure(
        lambda leaf: spec_of(leaf) if is_tensor_like(leaf) else leaf, [list(args), kwargs])
    specs = [leaf for leaf in structure.flatten(arguments) if isinstance(leaf, TensorSpec)]
    variable_list, seen = [], set()
    for variable in candidates:
        key = _storage_key(variable)
        if key is not None and key not in seen:
            seen.add(key)
            variable_list.append(variable)
    result_template = []

    def flat_function(*tensors):
        placeholders = dict(zip((_storage_key(v) for v in variable_list), tensors))
        inputs = iter(tensors[len(variable_list):])
        call = structure.map_structure(
            lambda leaf: next(inputs) if isinstance(leaf, TensorSpec) else leaf, arguments)
        with _Substitution(placeholders), _functions_run_eagerly(), tracing.capturing_for_saving():
            result = python_function(*call[0], **call[1])
        del result_template[:]
        result_template.append(result)
        return tuple(placeholders.get(_storage_key(leaf), leaf)
                     for leaf in structure.flatten(result) if isinstance(leaf, torch.Tensor))

    unknown_rank = any(spec.shape is None for spec in specs)
    unknown_axes = any(spec.shape is not None and None in tuple(spec.shape) for spec in specs)
    failures, size_list = [], [_EXAMPLE_SIZE]
    while size_list:
        size = size_list.pop(0)
        values = [v.detach().clone() for v in variable_list] + [_example(s, size)
                                                                 for s in specs]
        for mode in ('symbolic', 'real'):
            try:
                with torch.fx.experimental._config.patch(
                        use_duck_shape=size == _EXAMPLE_SIZE), _quiet_fake_tensors():
                    traced = make_fx(functionalize(flat_function, remove='mutations_and_views'),
                                     tracing_mode=mode, _allow_non_fake_inputs=True)(*values)
                return _finish(traced, variable_list, len(specs), arguments,
                               result_template[0], mode == 'symbolic', unknown_rank)
            except Exception as error:  # noqa: BLE001 (any failure: try the next way)
                if size == _EXAMPLE_SIZE:
                    failures.append(error)
        if size == _EXAMPLE_SIZE and unknown_axes:
            size_list = _sizes_to_try(failures, variable_list)
    failure = failures[-1]  # at the example size, with real tensors: the clearest
    raise ValueError('tf.function %s could not be traced for saving: %s: %s' % (
        getattr(python_function, '__name__', 'function'), type(failure).__name__,
        str(failure).split('\n')[0][:300])) from failure


def _output_spec(node, value, unknown_rank=False):
    meta = node.meta.get('val') if isinstance(node, torch.fx.Node) else None
    tensor = meta if isinstance(meta, torch.Tensor) else value
    shape = None if unknown_rank else tuple(d if isinstance(d, int) else None
                                            for d in tensor.shape)
    return TensorSpec(shape, as_dtype(tensor.dtype))


def _finish(module, variable_list, input_count, arguments, result, dynamic, unknown_rank):
    """The `Traced` of a `make_fx` graph module: constants made inputs, writes into
    variables made outputs, unused variables dropped."""
    graph = module.graph
    placeholders = [n for n in graph.nodes if n.op == 'placeholder']
    captures = list(variable_list)
    capture_nodes = placeholders[:len(variable_list)]
    first_input = placeholders[len(variable_list)] if input_count else None
    for node in [n for n in graph.nodes if n.op == 'get_attr']:
        anchor = first_input or next(n for n in graph.nodes if n.op != 'placeholder')
        with graph.inserting_before(anchor):
            placeholder = graph.placeholder('constant_%d' % len(captures))
        node.replace_all_uses_with(placeholder)
        graph.erase_node(node)
        captures.append(getattr(module, node.target).detach())
        capture_nodes.append(placeholder)
    graph.eliminate_dead_code()  # the meta tensors of shape inference, unused copies
    position = {node: i for i, node in enumerate(capture_nodes)}
    updates, update_values = [], []
    for node in list(graph.nodes):
        if (node.op == 'call_function' and node.target is torch.ops.aten.copy_.default
                and node.args[0] in position and not node.users):
            updates.append(position[node.args[0]])
            update_values.append(node.args[1])
            graph.erase_node(node)
    output = next(n for n in graph.nodes if n.op == 'output')
    flat_outputs = list(output.args[0])
    result_leaves = iter(flat_outputs)
    template = structure.map_structure(
        lambda leaf: _output_spec(next(result_leaves), leaf, unknown_rank)
        if isinstance(leaf, torch.Tensor) else leaf, result)
    output.args = (tuple(update_values + flat_outputs),)
    for node in list(capture_nodes):
        if not node.users:
            index = capture_nodes.index(node)
            graph.erase_node(node)
            del capture_nodes[index], captures[index]
            updates = [u if u < index else u - 1 for u in updates]
    graph.lint()
    return Traced(graph, captures, updates, arguments, template, dynamic)


def trace_keras_model(model):
    """Traces a built Keras model's call (learning phase 0) with `torch.export`.

    # Returns
        A `Traced` whose arguments are the model's inputs (one tensor, or a list).

    # Raises
        ValueError: as `torchk.export.exported_program` (a subclassed model never called).
    """
    from .. import export
    from keras import backend as K
    program, weights = export.traced_program(model)
    module = program.graph_module
    graph = module.graph
    kinds = {spec.arg.name: spec for spec in program.graph_signature.input_specs}
    captures, placeholders = [], []
    for node in [n for n in graph.nodes if n.op == 'placeholder']:
        spec = kinds[node.name]
        kind = spec.kind.name
        if kind in ('PARAMETER', 'BUFFER'):
            captures.append(weights[spec.target])
        elif kind in ('CONSTANT_TENSOR', 'CUSTOM_OBJ'):
            captures.append(program.constants[spec.target].detach())
        else:
            placeholders.append(node)
    inputs = [TensorSpec(K.int_shape(x), as_dtype(K.dtype(x)), name)
              for x, name in zip(model.inputs, export.input_names(model))]
    output = next(n for n in graph.nodes if n.op == 'output')
    flat = list(output.args[0]) if isinstance(output.args[0], (list, tuple)) else [
        output.args[0]]
    output.args = (tuple(flat),)
    specs = [_output_spec(node, None) for node in flat]
    result = specs[0] if len(specs) == 1 else list(specs)
    arguments = [[inputs[0] if len(inputs) == 1 else inputs], {}]
    return Traced(graph, captures, [], arguments, result, True)


def run(module, captures, inputs, updates):
    """Runs a traced graph (`module`, a `GraphModule` of `Traced.graph`) on `captures` and
    the arguments' tensors `inputs`; writes the updated variables.

    # Returns
        The result's tensors, in order.
    """
    outputs = module(*captures, *inputs)
    with torch.no_grad():
        for index, value in zip(updates, outputs[:len(updates)]):
            captures[index].copy_(value.detach())
    given = {id(c) for c in captures} | {id(x) for x in inputs}
    return [t.clone() if id(t) in given else t for t in outputs[len(updates):]]


class _Object(object):
    """An object argument of a remembered call, by identity."""

    def __init__(self, obj):
        self.id = id(obj)
        self.type = type(obj).__name__

    def __repr__(self):
        return '<%s object>' % self.type


def call_template(args, kwargs):
    """`[args, kwargs]` of a call with tensors and arrays as `TensorSpec`s, Python values as
    they are and other objects by identity (`tracing.Function` remembers its calls so)."""
    def leaf(value):
        if isinstance(value, (torch.Tensor, np.ndarray, np.generic)):
            return spec_of(value)
        if value is None or isinstance(value, (bool, int, float, str, bytes, TensorSpec)):
            return value
        return _Object(value)
    return structure.map_structure(leaf, [list(args), dict(kwargs)])


def arguments_of(template, instance):
    """`(args, kwargs)` of a remembered call on `instance` (the instance left out), or None
    if it was not on it or holds other objects."""
    args, kwargs = template
    if instance is not None:
        if not args or not isinstance(args[0], _Object) or args[0].id != id(instance):
            return None
        args = args[1:]
    if any(isinstance(leaf, _Object) for leaf in structure.flatten([args, kwargs])):
        return None
    return tuple(args), dict(kwargs)


def _named(arguments, python_function, bound):
    """`arguments` with each `TensorSpec` named after its parameter (`x`, `x_1`, ...), as
    TF names a concrete function's inputs."""
    import inspect
    try:
        names = list(inspect.signature(python_function).parameters)[1 if bound else 0:]
    except (TypeError, ValueError):
        names = []
    args, kwargs = arguments
    taken = set()

    def name_all(value, base):
        counter = [0]

        def one(leaf):
            if not isinstance(leaf, TensorSpec):
                return leaf
            name = leaf.name or (base if not counter[0] else '%s_%d' % (base, counter[0]))
            counter[0] += 1
            while name in taken:
                name += '_'
            taken.add(name)
            return TensorSpec(leaf.shape, leaf.dtype, name)
        return structure.map_structure(one, value)
    named_args = [name_all(value, names[i] if i < len(names) else 'args_%d' % i)
                  for i, value in enumerate(args)]
    return [named_args, {key: name_all(value, key) for key, value in kwargs.items()}]


class ConcreteFunction(object):
    """A `tf.function` for one input signature (`get_concrete_function`): callable, with
    `structured_input_signature` and `structured_outputs`; what `tf.saved_model.save` saves
    (traced by `trace`).

    # Arguments
        function: the `tracing.Function`.
        instance: the object of a method, or None.
        args, kwargs: the signature: `TensorSpec`s (or tensors) and Python values.
    """

    def __init__(self, function, instance, args, kwargs):
        self.function = function
        self.instance = instance
        from ..strings import StringTensor

        def leaf_spec(leaf):
            if isinstance(leaf, StringTensor):
                return TensorSpec(tuple(leaf.shape), as_dtype('string'))
            return spec_of(leaf) if is_tensor_like(leaf) else leaf
        arguments = structure.map_structure(leaf_spec, [list(args), dict(kwargs)])
        self.arguments = _named(arguments, function.python_function, instance is not None)

    @property
    def name(self):
        return self.function._name

    @property
    def python_function(self):
        if self.instance is None:
            return self.function.python_function
        return lambda *args, **kwargs: self.function.python_function(self.instance, *args,
                                                                     **kwargs)

    @property
    def structured_input_signature(self):
        return tuple(self.arguments[0]), dict(self.arguments[1])

    @property
    def structured_outputs(self):
        """The result's structure, its tensors as `TensorSpec`s."""
        return self.traced().result

    def traced(self, candidates=None):
        """The `Traced` function, capturing `candidates` (default: the variables of the
        instance's object graph); traced once per set of candidates and signature (kept by
        the instance, or the `tf.function`)."""
        if candidates is None:
            from . import trackable
            objects = trackable.graph_nodes(self.instance)[0] if self.instance else []
            candidates = [o for o in objects if isinstance(o, variables.Variable)]
        key = (id(self.function), repr(self.arguments), tuple(id(v) for v in candidates))
        owner = self.instance if hasattr(self.instance, '__dict__') else self.function
        cache = owner.__dict__.setdefault('_torchk_traced', {})
        if key not in cache:
            cache[key] = trace(self.python_function, self.arguments[0], self.arguments[1],
                               candidates)
        return cache[key]

    def __call__(self, *args, **kwargs):
        if self.instance is None:
            args, kwargs = self._bind(args, kwargs)
            return self.function(*args, **kwargs)
        return self.function(self.instance, *args, **kwargs)

    def _bind(self, args, kwargs):
        """`(args, kwargs)` of a call checked against this signature, as TF binds a concrete
        function's inputs: the Python values it was made with filled in where not given.

        # Raises
            TypeError: for another Python value than the signature's, or an argument it
                does not have.
            InvalidArgumentError: for a tensor of another dtype than its `TensorSpec`'s.
        """
        import inspect
        from .op_errors import InvalidArgumentError
        try:
            signature = inspect.signature(self.function.python_function)
            expected = signature.bind(*self.arguments[0], **self.arguments[1]).arguments
            given = signature.bind_partial(*args, **kwargs).arguments
        except (TypeError, ValueError) as error:
            raise TypeError('ConcreteFunction %s: the call does not match its signature %s '
                            '(%s).' % (self.name, self.pretty_printed_signature(False), error))
        for name, value in given.items():
            spec = expected.get(name)
            if isinstance(spec, TensorSpec):
                dtype = getattr(value, 'dtype', None)
                if dtype is not None and str(as_dtype(dtype)) != str(spec.dtype):
                    raise InvalidArgumentError(
                        'ConcreteFunction %s: input %r was expected to be a %s tensor but is '
                        'a %s tensor.' % (self.name, name, spec.dtype, as_dtype(dtype)))
            elif not structure.flatten(spec) or any(
                    isinstance(leaf, TensorSpec) for leaf in structure.flatten(spec)):
                continue
            elif isinstance(value, torch.Tensor) or (value is not spec and value != spec):
                raise TypeError('ConcreteFunction %s was made with %s=%r; got %r.'
                                % (self.name, name, spec, value))
        filled = dict(expected)
        filled.update(given)
        bound = inspect.BoundArguments(signature, filled)
        return bound.args, bound.kwargs

    def _outputs(self):
        """The result's structure as `tracing.signature_text` shows it: that of a call with
        these arguments, else the traced `structured_outputs`."""
        if self.instance is None:
            for template, outputs in self.function._outputs.values():
                try:
                    if template == [list(self.arguments[0]), dict(self.arguments[1])]:
                        return outputs
                except (TypeError, ValueError, RuntimeError):
                    continue
        return self.structured_outputs

    def pretty_printed_signature(self, verbose=True):
        """The signature as TF prints it: input parameters, output type and captures
        (verbose), or `(a: ...) -> ...`."""
        python_function = self.function.python_function
        if self.instance is not None:
            python_function = python_function.__get__(self.instance)
        return tracing.signature_text(python_function, self.arguments, self._outputs(),
                                      verbose)

    @property
    def graph(self):
        """Not provided: TF's graph of a function (`as_graph_def`, `get_operations`)."""
        raise AttributeError('ConcreteFunction.graph: TF\'s graph of a function (GraphDef, '
                             'operations) is not provided by torchk, which records torchk '
                             'programs, not TF graphs.')

    @property
    def function_type(self):
        """The signature; printed as TF prints a `FunctionType`: `(a: ...) -> ...`."""
        return _Text(self.pretty_printed_signature(verbose=False))

    def __str__(self):
        return 'ConcreteFunction ' + self.pretty_printed_signature()

    def __repr__(self):
        return '<ConcreteFunction %s%s>' % (self.name, self.structured_input_signature)


class _Text(object):
    """An object printed as its text."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text

    __repr__ = __str__


tracing.capture = sys.modules[__name__]
