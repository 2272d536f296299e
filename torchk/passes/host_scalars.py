"""Host scalars: a pass that computes a program's scalar bookkeeping in Python, on the host.

Keras graphs are full of scalar arithmetic that never touches a batch of data: sizes read
from shapes (`K.size(losses)` for a mean, `K.prod([K.shape(x)[i] ...])` for batch
normalization's sample-size correction), optimizer scalars (Adam's `t = iterations + 1`,
`lr_t = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)`), the iteration counter's update. Run as
torch ops, each is a kernel on a 0-d tensor (and, for shapes, a CPU tensor made per call):
on a GPU every one is a launch, and a value the host needs back is a synchronisation. This
pass plans those nodes to run as Python arithmetic instead:
- a tensor's shape or size is a Python int (tensors know their shapes on the host);
- a 0-d variable is read with `variables.host_scalar`, which reads the device only when the
  variable's version counter moved (a `set_value`, a callback); the pass writes its new value
  with `fill_` and remembers it, so Adam's iteration counter is never read back;
- `+ - * / ** //`, `cast`, `pow`, `sqrt`, `exp`, `log`, `square`, `maximum`, `minimum`,
  `prod` of such values are computed in Python (float64) and rounded to the node's dtype, so
  a float32 node holds the float32 value (exact for `+ - * /` and `sqrt`, within an ulp of
  torch's float32 `pow`, `exp`, `log`).
A node is computed on the host only if everything it reads is, and every reader of its value
takes a Python number where it took a 0-d tensor without changing its result's dtype: a
host node, a Python operator with a floating tensor operand, Adam's fused update (its
learning rate), or the update of a 0-d variable. Variables that gradients flow to are never
read on the host (only shapes are, inside the autograd part of a program), and a program
captured as a CUDA graph reads no variable on the host (its replays would see the values of
the capture).

`TORCHK_HOST_SCALARS=0` (or `set_enabled(False)`) turns the pass off for programs built
afterwards.
"""
import math
import operator
import struct

import torch

from .. import array_ops
from .. import config
from .. import graph
from .. import math_ops
from .. import variables

_switch = config.PassSwitch('TORCHK_HOST_SCALARS')
enabled = _switch.enabled
set_enabled = _switch.set_enabled

# dtypes a host value may have: Python numbers hold them exactly
_HOST_DTYPES = (torch.float32, torch.float64, torch.int8, torch.int16, torch.int32,
                torch.int64, torch.uint8, torch.bool)
# Python operators whose other operand may be a tensor: the host value is then a weak scalar
_TENSOR_OPERATORS = (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow)


def _sqrt(x):
    return math.sqrt(x) if x >= 0 else math.nan


def _exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _log(x):
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


def _pow(x, a):
    result = x ** a
    return math.nan if isinstance(result, complex) else result


def _extremum(pick):
    def extremum(x, y):
        if x != x or y != y:
            return math.nan
        return pick(x, y)
    return extremum


def _prod(x, axis=None, keepdims=False):
    return math.prod(x)


# The host form of each op (nodes hold the plain functions that `@op` wraps). Arguments that
# are host values arrive as Python numbers (tuples of ints for shapes).
_HOST = {
    array_ops._shape.__wrapped__: lambda x: tuple(x.shape),
    array_ops._size.__wrapped__: lambda x: math.prod(x.shape),
    array_ops._dimension.__wrapped__: lambda x, axis: x.shape[axis],
    graph.getitem: lambda x, key: x[key],
    math_ops.cast.__wrapped__: lambda x, dtype: x,
    math_ops.pow.__wrapped__: _pow,
    math_ops.sqrt.__wrapped__: _sqrt,
    math_ops.exp.__wrapped__: _exp,
    math_ops.log.__wrapped__: _log,
    math_ops.square.__wrapped__: lambda x: x * x,
    math_ops.maximum.__wrapped__: _extremum(max),
    math_ops.minimum.__wrapped__: _extremum(min),
    math_ops.prod.__wrapped__: _prod,
    operator.add: operator.add, operator.sub: operator.sub, operator.mul: operator.mul,
    operator.truediv: operator.truediv, operator.floordiv: operator.floordiv,
    operator.pow: _pow, operator.neg: operator.neg,
}
# Ops that read only their tensor argument's shape: any tensor may be their input.
_SHAPE_READERS = (array_ops._shape.__wrapped__, array_ops._size.__wrapped__,
                  array_ops._dimension.__wrapped__)


_FLOAT32 = struct.Struct('f')


def _round(value, dtype):
    """`value` (a Python number) as a value of `dtype` holds it."""
    if dtype is torch.float32:
        try:
            return _FLOAT32.unpack(_FLOAT32.pack(value))[0]
        except OverflowError:
            return math.copysign(math.inf, value)
    if dtype is torch.bool:
        return bool(value)
    return float(value) if dtype.is_floating_point else int(value)


class _HostCall:
    """The host form of one node: `impl(*args)` rounded to the node's dtype; with
    `constants`, the small CPU tensors among its arguments (sizes known when the graph was
    built, `K.shape`'s static part) are read as Python numbers first."""
    __slots__ = ('impl', 'dtype', 'constants', '__name__')

    def __init__(self, impl, dtype, constants=False):
        self.impl = impl
        self.dtype = dtype
        self.constants = constants
        self.__name__ = 'host_' + getattr(impl, '__name__', 'op')

    def __call__(self, *args, **kwargs):
        if self.constants:
            args, kwargs = _numbers(args), _numbers(kwargs)
        value = self.impl(*args, **kwargs)
        return value if self.dtype is None else _round(value, self.dtype)


class Plan:
    """What the pass decided for one program.

    `calls` maps the id of each node computed on the host to its `_HostCall`; `variables`
    maps the ids of the variables host nodes read to the variables.
    """

    def __init__(self):
        self.calls = {}
        self.variables = {}

    def hosted(self, symbol):
        """True if `symbol`'s value is a host value in the program."""
        node = getattr(symbol, 'node', None) if isinstance(symbol, graph.KerasTensor) else None
        return node is not None and id(node) in self.calls


def _is_variable(symbol):
    return graph.is_symbol(symbol) and not isinstance(symbol, graph.KerasTensor)


def _result(node, readers):
    """The node's single result symbol (None for tuple results and unread nodes)."""
    for item in readers.get(id(node), ()):
        if item.path == ():
            return item
    return None


def _leaves(value):
    found = []
    graph._map_structure(found.append, value)
    return found


def plan(nodes, recorded, outputs, updates, scalar_reads, variables_on_host=True):
    """Plans the nodes of a program computed on the host (see the module doc).

    # Arguments
        nodes: the nodes the program emits, in topological order.
        recorded: ids of the nodes that run with autograd recording.
        outputs: the symbols the program returns (read as tensors).
        updates: (variable, new value) pairs the program writes.
        scalar_reads: symbols read where a Python number does as well as a 0-d tensor
            (Adam's learning rate).
        variables_on_host: whether 0-d variables may be read on the host.

    # Returns
        A `Plan` (empty when the pass is off).
    """
    result = Plan()
    if not enabled():
        return result
    symbols = {}
    readers = {}
    for node in nodes:
        for item in node.inputs:
            if isinstance(item, graph.KerasTensor) and item.node is not None:
                symbols.setdefault(id(item.node), []).append(item)
                readers.setdefault(id(item), []).append(node)
    for value in list(outputs) + [v for _, v in updates] + list(scalar_reads):
        if isinstance(value, graph.KerasTensor) and value.node is not None:
            symbols.setdefault(id(value.node), []).append(value)
    candidates = {}
    for node in nodes:
        call = _candidate(node, symbols, candidates, recorded, variables_on_host)
        if call is not None:
            candidates[id(node)] = (node, call)
    unread_as_tensor = {id(v) for _, v in updates if _fills(_variable_of(v, updates))}
    unread_as_tensor.update(id(s) for s in scalar_reads)
    output_ids = {id(o) for o in outputs}

    def updated_on_device(hosted):
        return {id(v) for v, value in updates if not _hosted_symbol(value, hosted)}
    changed = True
    while changed:
        changed = False
        for key, (node, _) in list(candidates.items()):
            symbol = _result(node, symbols)
            if (symbol is None or id(symbol) in output_ids
                    or any(not _takes_host_value(r, symbol, candidates)
                           for r in readers.get(id(symbol), ()))
                    or any(isinstance(i, graph.KerasTensor) and i.node is not None
                           and id(i.node) not in candidates and node.fn not in _SHAPE_READERS
                           for i in node.inputs)):
                del candidates[key]
                changed = True
            elif any(u is symbol for _, u in updates) and id(symbol) not in unread_as_tensor:
                del candidates[key]
                changed = True
            elif any(_is_variable(v) and id(v) in updated_on_device(candidates)
                     for v in node.inputs):
                # its host value would be read back after each device write
                del candidates[key]
                changed = True
    result.calls = {key: call for key, (_, call) in candidates.items()}
    result.variables = {id(v): v for node, _ in candidates.values()
                        for v in node.inputs if _is_variable(v)
                        and node.fn not in _SHAPE_READERS}
    return result


def _variable_of(value, updates):
    for variable, new in updates:
        if new is value:
            return variable
    return None


def _fills(variable):
    """True if a host value can be written into `variable` with `fill_`."""
    return (variable is not None and tuple(variable.shape) == ()
            and variable.dtype in _HOST_DTYPES)


def _candidate(node, symbols, candidates, recorded, variables_on_host):
    """The `_HostCall` of `node` if it may run on the host given its inputs, else None."""
    impl = _HOST.get(node.fn)
    if impl is None or node.kind != 'op':
        return None
    result = _result(node, symbols)
    if result is None or result._static_shape is None:
        return None
    shape = tuple(result._static_shape)
    if node.fn is array_ops._shape.__wrapped__:
        dtype = None
    elif shape != () or result._torch_dtype not in _HOST_DTYPES:
        return None
    else:
        dtype = result._torch_dtype
    if node.fn is graph.getitem:
        source, key = node.args
        if not isinstance(key, (int, slice)) or not _hosted_symbol(source, candidates):
            return None
        dtype = None if shape else torch.int64
    elif node.fn is math_ops.prod.__wrapped__:
        if node.kwargs or len(node.args) != 1 or not isinstance(node.args[0], (list, tuple)):
            return None
    constants = False
    for leaf in _leaves((node.args, node.kwargs)):
        if _is_small_constant(leaf):
            constants = True
            continue
        if graph.is_symbol(leaf):
            if node.fn in _SHAPE_READERS or _hosted_symbol(leaf, candidates):
                continue
            if (variables_on_host and _is_variable(leaf) and id(node) not in recorded
                    and tuple(leaf.shape) == () and leaf.dtype in _HOST_DTYPES):
                continue
            return None
        if not (leaf is None or isinstance(leaf, (bool, int, float, str, slice))):
            return None
    return _HostCall(impl, dtype, constants)


def _numbers(value):
    """`value` with its tensors as Python numbers (a 1-D tensor as a tuple)."""
    if isinstance(value, torch.Tensor):
        return tuple(value.tolist()) if value.ndim else value.item()
    if isinstance(value, (list, tuple)):
        return type(value)(_numbers(v) for v in value)
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    return value


def _is_small_constant(value):
    """True for a tensor that is not a symbol, on the CPU, of a few host-typed elements: it
    reads as numbers without a device read."""
    return (isinstance(value, torch.Tensor) and not graph.is_symbol(value)
            and value.device.type == 'cpu' and value.ndim <= 1 and value.numel() <= 8
            and value.dtype in _HOST_DTYPES)


def _hosted_symbol(symbol, candidates):
    return (isinstance(symbol, graph.KerasTensor) and symbol.node is not None
            and id(symbol.node) in candidates)


def _category(dtype):
    return 0 if dtype is torch.bool else 1 if not dtype.is_floating_point else 2


def _takes_host_value(reader, symbol, candidates):
    """True if `reader` computes the same with `symbol` as a Python number."""
    if id(reader) in candidates:
        return True
    if reader.fn not in _TENSOR_OPERATORS or reader.kwargs or len(reader.args) != 2:
        return False
    other = reader.args[1] if reader.args[0] is symbol else reader.args[0]
    if other is symbol or not graph.is_symbol(other) or _hosted_symbol(other, candidates):
        return False
    other_dtype = other._torch_dtype if isinstance(other, graph.KerasTensor) else other.dtype
    # a Python number is a weak scalar, like a 0-d tensor of a category no higher
    return (other_dtype.is_floating_point and symbol._torch_dtype is not torch.bool
            and _category(symbol._torch_dtype) <= _category(other_dtype))


def fill(variable, value):
    """Writes the host value `value` into the 0-d `variable` and remembers it, so that the
    next host read does not go to the device."""
    variable.fill_(value)
    variables.remember_host_scalar(variable, _round(value, variable.dtype))
