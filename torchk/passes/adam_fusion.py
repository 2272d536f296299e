"""Adam fusion: a pass that runs Keras' Adam update of each weight as one fused kernel.

Keras' `Adam.get_updates` builds, for every weight `p` with gradient `g`, moments `m`, `v`:

    m_t = beta_1 * m + (1 - beta_1) * g
    v_t = beta_2 * v + (1 - beta_2) * square(g)
    p_t = p - lr_t * m_t / (sqrt(v_t) + epsilon)

with `K.update` of `m`, `v` and `p`: a dozen element-wise passes over weight-sized memory,
twice the memory traffic of `torch.optim.Adam` and four times that of torch's fused Adam
kernel (on an Embedding(20000, 128), 25 ms against 11 and 3.6 on one CPU thread). This pass
finds these chains among the nodes that run without autograd and replaces each group of
them sharing `lr_t`, `beta_1`, `beta_2` and `epsilon` with one call of `apply`, which
writes the three new values into the variables with `torch._fused_adam_` (one pass; the
bias correction Keras folds into `lr_t` is turned off by a step count of infinity) or,
where that kernel does not apply, with in-place torch ops. Same formula: values agree with
the unfused program to float32 rounding, not bit for bit.

The moments Keras makes with `K.zeros` are laid out in memory like their weight when the
program is built (`variables.lay_out`: a convolution kernel is laid out as the torch weight),
so the four tensors of a weight share one memory order and the fused kernel reads them as
contiguous views of it, the gradient included, without a copy.

A chain is replaced only when nothing else reads its intermediate values, its new values
are read by nothing but their updates, and the three variables are updated by nothing else
(`amsgrad`, weight constraints or any other arithmetic leave it as it is). The call runs
after every other node computed before the updates; the outputs and update values computed
before it keep their pre-update values (`program.py` copies those sharing a variable's memory).
`TORCHK_ADAM_FUSION=0` (or `set_enabled(False)`) turns the pass off for programs built
afterwards.
"""
import operator

import torch

from .. import config
from .. import graph
from .. import math_ops
from .. import variables

_switch = config.PassSwitch('TORCHK_ADAM_FUSION')
enabled = _switch.enabled
set_enabled = _switch.set_enabled

_SQRT = math_ops.sqrt.__wrapped__
_SQUARE = math_ops.square.__wrapped__
_FUSED_DEVICES = ('cpu', 'cuda')
_FUSED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


class Plan:
    """What the pass decided for one program.

    `groups` lists `(hyper, weights)`: `hyper` is `(lr_t, beta_1, beta_2, epsilon)` and
    `weights` a list of `(p, g, m, v)`, updated by one `apply` call. `skipped` holds the ids
    of the nodes the calls replace (not emitted); `written` the ids of the variables the
    calls update; `reads` the symbols the calls read, which must stay intact until they run.
    """

    def __init__(self):
        self.groups = []
        self.skipped = set()
        self.written = set()
        self.reads = []


def plan(first_nodes, recorded, metric_nodes, outputs, updates):
    """Finds the Adam chains of `updates` that one `apply` call may replace.

    # Arguments
        first_nodes: nodes computed before the updates, in topological order.
        recorded: ids of the nodes that run with autograd recording (never replaced).
        metric_nodes: nodes of the outputs computed after the updates.
        outputs: the outputs computed before the updates.
        updates: unique (variable, new value) pairs.

    # Returns
        A `Plan` (empty when the pass is off).
    """
    result = Plan()
    if not enabled():
        return result
    new_values = {id(variable): value for variable, value in updates}
    updated = {id(variable): variable for variable, _ in updates}
    # reads of each node's results: by nodes, as outputs, as update values
    readers = {}
    read = [i for node in list(first_nodes) + list(metric_nodes) for i in node.inputs]
    for item in read + list(outputs) + [value for _, value in updates]:
        key = _node_id(item)
        if key is not None:
            readers[key] = readers.get(key, 0) + 1
    groups = {}
    claimed = set()
    for p, p_t in updates:
        chain = _match(p, p_t, new_values, updated)
        if chain is None:
            continue
        (g, m, v, lr_t, beta_1, beta_2, epsilon), nodes, m_t, v_t = chain
        written = {id(p), id(m), id(v)}
        if claimed & written or len(written) < 3 or id(g) in written:
            continue
        if not _private(nodes, (m_t, v_t, p_t), readers, recorded):
            continue
        if not _fusable_layout(p, g, m, v, lr_t, beta_1, beta_2):
            continue
        claimed.update(written)
        for moment in (m, v):
            # Keras makes the moments with `K.zeros`: laid out as their weight (a kernel
            # laid out for its convolution), one fused kernel reads all four densely.
            variables.lay_out(moment, variables.memory_order(p))
        key = (id(lr_t), _key(beta_1), _key(beta_2), epsilon)
        if key not in groups:
            groups[key] = ((lr_t, beta_1, beta_2, epsilon), [])
        groups[key][1].append((p, g, m, v))
        result.skipped.update(id(n) for n in nodes)
        result.written.update((id(p), id(m), id(v)))
        result.reads += [s for s in (g, lr_t, beta_1, beta_2) if graph.is_symbol(s)]
    result.groups = list(groups.values())
    _skip_dead(first_nodes, result, outputs, updates, metric_nodes)
    return result


def _key(value):
    return id(value) if graph.is_symbol(value) or isinstance(value, torch.Tensor) else value


def _node(symbol, fn):
    """The node computing `symbol` with `fn` (without keywords), as its only result, or None."""
    node = getattr(symbol, 'node', None) if isinstance(symbol, graph.KerasTensor) else None
    if node is None or symbol.path != () or node.fn is not fn or node.kwargs:
        return None
    return node


def _scaled(symbol, fn, scalar=None):
    """`(scalar, other, node)` when `symbol` is `fn(scalar, other)` or `fn(other, scalar)`
    with a 0-d (or Python number) `scalar`, `scalar` given or found; else None."""
    node = _node(symbol, fn)
    if node is None or len(node.args) != 2:
        return None
    a, b = node.args
    for s, other in ((a, b), (b, a)):
        if (s is scalar) if scalar is not None else _is_scalar(s):
            return s, other, node
    return None


def _is_scalar(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    if graph.is_symbol(value) or isinstance(value, torch.Tensor):
        shape = value._static_shape if isinstance(value, graph.KerasTensor) else value.shape
        return shape is not None and tuple(shape) == ()
    return False


def _moment(symbol, moment):
    """`(beta, gradient term, nodes)` when `symbol` is `beta * moment + (1 - beta) * term`."""
    node = _node(symbol, operator.add)
    if node is None or len(node.args) != 2:
        return None
    for first, second in (node.args, node.args[::-1]):
        decayed = _scaled(first, operator.mul)
        if decayed is None or decayed[1] is not moment:
            continue
        beta = decayed[0]
        step = _scaled(second, operator.mul)
        if step is None:
            continue
        complement = _node(step[0], operator.sub)
        if complement is None or complement.args[0] != 1. or complement.args[1] is not beta:
            continue
        return beta, step[1], [node, decayed[2], step[2]]
    return None


def _match(p, p_t, new_values, updated):
    """`((g, m, v, lr_t, beta_1, beta_2, epsilon), nodes, m_t, v_t)` when `p_t` is Keras'
    Adam step of `p` from moments `m`, `v` that are themselves updated to `m_t`, `v_t`;
    `nodes` are the chain's nodes. Else None."""
    top = _node(p_t, operator.sub)
    if top is None or top.args[0] is not p:
        return None
    ratio = _node(top.args[1], operator.truediv)
    if ratio is None:
        return None
    step = _scaled(ratio.args[0], operator.mul)
    denominator = _node(ratio.args[1], operator.add)
    if step is None or denominator is None:
        return None
    lr_t, m_t, step_node = step
    root, epsilon = denominator.args
    root_node = _node(root, _SQRT)
    if root_node is None or type(epsilon) is not float or len(root_node.args) != 1:
        return None
    v_t = root_node.args[0]
    m_found = _moment_of(m_t, new_values, updated)
    v_found = _moment_of(v_t, new_values, updated)
    if m_found is None or v_found is None:
        return None
    (m, (beta_1, g, m_nodes)), (v, (beta_2, squared, v_nodes)) = m_found, v_found
    square_node = _node(squared, _SQUARE)
    if square_node is None or len(square_node.args) != 1 or square_node.args[0] is not g:
        return None
    nodes = [top, ratio, step_node, denominator, root_node, square_node] + m_nodes + v_nodes
    return (g, m, v, lr_t, beta_1, beta_2, epsilon), nodes, m_t, v_t


def _moment_of(value, new_values, updated):
    """`(moment variable, _moment(...))` for the variable whose update value is `value`."""
    for key, new in new_values.items():
        if new is value:
            found = _moment(value, updated[key])
            return None if found is None else (updated[key], found)
    return None


def _private(nodes, new_values, readers, recorded):
    """True if the chain's nodes run without autograd and their results are read by nothing
    but the chain, the new values `(m_t, v_t, p_t)` also by their own update once."""
    if {id(n) for n in nodes} & recorded:
        return False
    internal = {}
    for node in nodes:
        for item in node.inputs:
            key = _node_id(item)
            internal[key] = internal.get(key, 0) + 1
    updated = {id(value.node) for value in new_values}
    return all(readers.get(id(node), 0) == internal.get(id(node), 0) + (id(node) in updated)
               for node in nodes)


def _node_id(symbol):
    node = getattr(symbol, 'node', None) if isinstance(symbol, graph.KerasTensor) else None
    return None if node is None else id(node)


def _static(value):
    """(shape, dtype) of a symbol or tensor."""
    if isinstance(value, graph.KerasTensor):
        return value._static_shape, value._torch_dtype
    return tuple(value.shape), value.dtype


def _fusable_layout(p, g, m, v, lr_t, beta_1, beta_2):
    """True if `p`, `g`, `m`, `v` have one static shape and floating dtype, and the
    hyper-parameters are scalars."""
    shape, dtype = _static(p)
    if shape is None or None in shape or dtype not in _FUSED_DTYPES:
        return False
    if any(tuple(_static(x)[0] or ()) != tuple(shape) or _static(x)[1] != dtype
           for x in (g, m, v)):
        return False
    return all(_is_scalar(x) for x in (lr_t, beta_1, beta_2))


def _skip_dead(first_nodes, result, outputs, updates, metric_nodes):
    """Adds to `result.skipped` the nodes only skipped nodes read (`1 - beta_1`, ...)."""
    readers = {}
    for node in first_nodes:
        for item in node.inputs:
            key = _node_id(item)
            if key is not None:
                readers.setdefault(key, []).append(id(node))
    kept = list(outputs) + [value for _, value in updates] + result.reads
    kept += [item for node in metric_nodes for item in node.inputs]
    protected = {_node_id(item) for item in kept}
    for node in reversed(first_nodes):
        if id(node) in result.skipped or id(node) in protected:
            continue
        found = readers.get(id(node))
        if found and all(r in result.skipped for r in found):
            result.skipped.add(id(node))


_INFINITE_STEPS = {}


def _infinite_step(device):
    """A step count of infinity on `device`: torch's Adam then corrects no bias (Keras'
    `lr_t` already holds the correction)."""
    if device not in _INFINITE_STEPS:
        _INFINITE_STEPS[device] = torch.tensor(float('inf'), device=device)
    return _INFINITE_STEPS[device]


def _dense(p, g, m, v):
    """The four tensors viewed in the order of `p`'s memory, the gradient copied into that
    order if it is not in it: contiguous views of a weight and moments laid out otherwise
    than their shape (a convolution kernel's, `variables.lay_out`); as they are when the
    moments are laid out otherwise than the weight (the in-place fallback reads any)."""
    order = variables.memory_order(p)
    if order == sorted(order):
        return p, g.contiguous(), m, v
    views = [x.permute(order) for x in (p, m, v)]
    if not all(x.is_contiguous() for x in views):
        return p, g, m, v
    return views[0], g.permute(order).contiguous(), views[1], views[2]


def _fused(p, g, m, v):
    """True if `torch._fused_adam_` computes this weight's update (it reads memory densely)."""
    return (p.device.type in _FUSED_DEVICES and p.dtype in _FUSED_DTYPES and
            all(x.is_contiguous() and x.device == p.device and x.dtype == p.dtype
                for x in (p, g, m, v)))


def apply(params, grads, ms, vs, lr_t, beta_1, beta_2, epsilon):
    """Writes Keras' Adam update of every weight into `params`, `ms` and `vs`.

    # Arguments
        params, grads, ms, vs: lists of tensors: the weights, their gradients, first and
            second moments.
        lr_t: the bias-corrected learning rate, `lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)`.
        beta_1, beta_2: the moments' decay rates; epsilon: float.
    """
    lr_t, beta_1, beta_2 = (float(x) for x in (lr_t, beta_1, beta_2))
    weights = [_dense(*weight) for weight in zip(params, grads, ms, vs)]
    fused = [i for i, weight in enumerate(weights) if _fused(*weight)]
    by_device = {}
    for i in fused:
        by_device.setdefault(params[i].device, []).append(i)
    for device, indices in by_device.items():
        p, g, m, v = ([weights[i][k] for i in indices] for k in range(4))
        torch._fused_adam_(p, g, m, v, [], [_infinite_step(device)] * len(indices), lr=lr_t,
                           beta1=beta_1, beta2=beta_2, weight_decay=0., eps=epsilon,
                           amsgrad=False, maximize=False)
        # the fused kernel leaves version counters alone; readers of the weights (folded
        # inference weights, to_torch's caches) see a write through them
        torch.autograd.graph.increment_version(p + m + v)
    for i in sorted(set(range(len(params))) - set(fused)):
        p, g, m, v = weights[i]
        m.mul_(beta_1).add_(g * (1. - beta_1))
        v.mul_(beta_2).add_(g.square().mul_(1. - beta_2))
        p.sub_(m * lr_t / v.sqrt().add_(epsilon))
