"""Update fusion: a pass that lets a program's arithmetic write into memory it already owns.

Keras' optimizers build, for every weight, a chain of element-wise arithmetic out of place
(`m_t = beta_1 * m + (1 - beta_1) * g`, ...) that ends in `K.update`. Run as written, each op
allocates a fresh weight-sized tensor and the update copies the last one into the variable.
This pass plans two rewrites of the arithmetic (`+`, `-`, `*`, `/` with a tensor operand of
the result's static shape and dtype) among the nodes that run without autograd:
- an op whose operand is a dead intermediate (a new tensor that no later line reads, and
  not an output) writes its result into that operand (`torch.mul(v3, 0.5, out=v3)`);
- the op computing a variable's new value writes it straight into the variable, when it runs
  after every gradient and nothing after it reads the variable or a possible view of it; the
  outputs that could share the variable's memory are copied just before (the contract of
  `program.py`: outputs see the values before the updates).
Values are exactly those of the unfused program: the same torch kernels run in the same
order, only their destinations change.

Batching the per-weight chains into `torch._foreach_*` calls did not pay on the CPU
(Keras' Adam over an MLP's weights: slower out of place, equal in place): CPU foreach
kernels loop over the tensors one by one, so only Python dispatch is saved, which is small
next to the passes over memory.
`TORCHK_FUSION=0` (or `set_enabled(False)`) turns the pass off for programs built afterwards.
"""
import operator

import torch

from .. import config
from .. import graph
from .. import math_ops
from .. import program

# Python operators on plain tensors are these torch functions; their `out=` forms.
_INTO = {operator.add: torch.add, operator.sub: torch.sub, operator.mul: torch.mul,
         operator.truediv: torch.div}
_COMMUTATIVE = (operator.add, operator.mul)
# Ops whose result is always a new tensor: its memory may be reused once dead. Nodes hold
# the plain function an `@op` wraps.
_FRESH = set(_INTO) | {op.__wrapped__ for op in (
    math_ops.square, math_ops.sqrt, math_ops.abs, math_ops.maximum, math_ops.minimum,
    math_ops.exp, math_ops.log, math_ops.pow)}
GRADIENTS = 'gradients'
_switch = config.PassSwitch('TORCHK_FUSION')
enabled = _switch.enabled
set_enabled = _switch.set_enabled


class Plan:
    """What the pass decided for one program.

    `into` maps a node id to `(torch function, args, destination)`: the node is emitted as
    `torch_function(*args, out=destination)`, the destination being a dead intermediate or
    a variable. `written` holds the ids of the variables written that way: their update is
    done when the node has run.
    """

    def __init__(self):
        self.into = {}
        self.written = set()

    def writes_variable(self, node):
        """True if `node` writes a variable's new value into it."""
        found = self.into.get(id(node))
        return found is not None and id(found[2]) in self.written


def plan(first_nodes, recorded, metric_nodes, outputs, updates, numbers=lambda symbol: False):
    """Plans the rewrites of the nodes computed before the updates (see the module doc).

    # Arguments
        first_nodes: nodes computed before the updates, in topological order.
        recorded: ids of the nodes that run with autograd recording (never rewritten); they
            are emitted before the others.
        metric_nodes: nodes of the outputs computed after the updates.
        outputs: the outputs computed before the updates.
        updates: unique (variable, new value) pairs.
        numbers: tells the symbols whose values are Python numbers in the program (the host
            scalars pass); an op with one as its first operand keeps its form.

    # Returns
        A `Plan` (empty when the pass is off).
    """
    result = Plan()
    if not enabled():
        return result
    order = [n for n in first_nodes if id(n) in recorded]
    order += [n for n in first_nodes if id(n) not in recorded]
    symbols = program.single_results(order + list(metric_nodes),
                                     list(outputs) + [v for _, v in updates])
    last_read = {}
    for i, node in enumerate(order):
        for item in node.inputs:
            last_read[id(item)] = i
    kept = {id(o) for o in outputs} | {id(v) for _, v in updates}
    kept.update(id(item) for node in metric_nodes for item in node.inputs)
    writes = _direct_writes(order, symbols, last_read, outputs, updates, recorded, numbers)
    owned = set()
    for i, node in enumerate(order):
        result_symbol = symbols.get(id(node))
        if id(node) in recorded or result_symbol is None:
            continue
        call = _into_form(node, result_symbol, numbers)
        if call is not None and id(node) in writes:
            variable = writes[id(node)]
            result.into[id(node)] = call + (variable,)
            result.written.add(id(variable))
            continue
        if call is not None:
            dead = [a for a in call[1] if id(a) in owned and last_read.get(id(a)) == i
                    and id(a) not in kept and _same_layout(a, result_symbol)]
            if dead:
                result.into[id(node)] = call + (dead[0],)
        if node.fn in _FRESH:
            owned.add(id(result_symbol))
        else:
            # a result that may be one of its inputs (`switch` on a scalar returns the branch
            # taken) keeps that input's memory alive past its last direct read
            owned.difference_update(id(item) for item in node.inputs)
    return result


def _into_form(node, result_symbol, numbers):
    """`(torch function, args)` computing `node` with an `out=` argument, or None."""
    into = _INTO.get(node.fn)
    if into is None or node.kwargs or len(node.args) != 2:
        return None
    args = node.args
    if not _tensor_symbol(args[0], numbers) and node.fn in _COMMUTATIVE:
        args = (args[1], args[0])
    shape = result_symbol._static_shape
    if not _tensor_symbol(args[0], numbers) or shape is None or None in shape:
        return None
    return into, args


def _tensor_symbol(value, numbers):
    return graph.is_symbol(value) and not numbers(value)


def _layout(value):
    if isinstance(value, graph.KerasTensor):
        return value._static_shape, value._torch_dtype
    return tuple(value.shape), value.dtype


def _same_layout(value, result_symbol):
    """True if `value` (a symbol) has exactly the static shape and dtype of the result."""
    shape, dtype = _layout(value)
    return (shape is not None and tuple(shape) == tuple(result_symbol._static_shape)
            and dtype == result_symbol._torch_dtype)


def _direct_writes(order, symbols, last_read, outputs, updates, recorded, numbers):
    """`{node id: variable}` for the updates whose last op may write into the variable."""
    after_gradients = max((i for i, n in enumerate(order) if n.kind == GRADIENTS), default=-1)
    position = {id(n): i for i, n in enumerate(order)}
    read_until = {}
    for i, node in enumerate(order):
        for item in node.inputs:
            if isinstance(item, graph.KerasTensor) and item.node is not None:
                read_until[id(item.node)] = i
    values = [v for _, v in updates]
    value_ids = [id(v) for v in values]
    read_at_end = {id(o) for o in outputs} | {id(v) for v in values if not isinstance(
        v, graph.KerasTensor)}
    writes = {}
    for variable, value in updates:
        node = getattr(value, 'node', None)
        i = position.get(id(node), -1)
        if (node is None or id(node) in recorded or i <= after_gradients
                or symbols.get(id(node)) is not value or id(value) in read_at_end
                or value_ids.count(id(value)) > 1 or id(variable) in read_at_end
                or _into_form(node, value, numbers) is None or not _same_layout(variable, value)
                or last_read.get(id(variable), -1) > i):
            continue
        aliases = _aliases(order, variable)
        if any(_node_id(item) in aliases for item in node.inputs):
            continue
        if any(read_until.get(a, -1) > i for a in aliases):
            continue
        # Outputs computed before the write are copied if they share its memory; later
        # ones and other updates' values must not be views of the variable.
        if any(_node_id(v) in aliases for v in values) or any(
                _node_id(o) in aliases and position[_node_id(o)] >= i for o in outputs):
            continue
        writes[id(node)] = variable
    return writes


def _node_id(symbol):
    node = getattr(symbol, 'node', None)
    return id(node) if isinstance(symbol, graph.KerasTensor) and node is not None else None


def _aliases(order, variable):
    """Ids of the nodes whose results may share `variable`'s memory: ops not known to
    return new tensors, computed from the variable or from such a result."""
    aliases = set()
    for node in order:
        if node.fn in _FRESH or node.kind == GRADIENTS:
            continue
        if any(item is variable or _node_id(item) in aliases for item in node.inputs):
            aliases.add(id(node))
    return aliases
