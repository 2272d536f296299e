"""Adam fusion: a pass that runs Keras' Adam update of each weight as one fused kernel.

Keras' `Adam.get_updates` builds, for every weight `p` with gradient `g`, moments `m`, `v`:

    m_t = beta_1 * m + (1 - beta_1) * g
    v_t = beta_2 * v + (1 - beta_2) * square(g)
    p_t = p - lr_t * m_t / (sqrt(v_t) + epsilon)

with `K.update` of `m`, `v` and `p`: a dozen element-wise passes over weight-sized memory,
twice the memory traffic of `torch.optim.Adam` and four times that of torch's fused Adam
kernel (on an Embedding(20000, 128), 25 ms against 11 and 3.6 on one CPU thread). This pass
finds these chains among the nodes that run without autograd and replaces each group of
them sharing `lr_t`, `beta_1`, `beta_2` and `epsilon` with one call of an `Update`, which
writes the three new values into the variables with `torch._fused_adam_` (one pass; the
bias correction Keras folds into `lr_t` is turned off by a step count of infinity) or,
where that kernel does not apply, with in-place torch ops. Same formula: values agree with
the unfused program to float32 rounding, not bit for bit.

The moments Keras makes with `K.zeros` are laid out in memory like their weight when the
program is built (`variables.lay_out`: a convolution kernel is laid out as the torch weight),
so that the fused kernel reads the weight and its moments in one memory order (a gradient
laid out otherwise is copied into it: the backends compute a laid-out kernel's gradient in
its layout, so none is).

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
from .. import loss_scaling
from .. import math_ops
from .. import variables

_switch = config.PassSwitch('TORCHK_ADAM_FUSION')
enabled = _switch.enabled
set_enabled = _switch.set_enabled

_SQRT = math_ops.sqrt.__wrapped__
_UNLESS_OVERFLOW = loss_scaling.unless_overflow.__wrapped__
_SQUARE = math_ops.square.__wrapped__
_FUSED_DEVICES = ('cpu', 'cuda')
_FUSED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


class Plan:
    """What the pass decided for one program.

    `groups` lists `(hyper, weights)`: `hyper` is `(lr_t, beta_1, beta_2, epsilon)` and
    `weights` a list of `(p, g, m, v)`, updated by one `Update` call. `skipped` holds the ids
    of the nodes the calls replace (not emitted); `written` the ids of the variables the
    calls update; `reads` the symbols the calls read, which must stay intact until they run.
    """

    def __init__(self):
        self.groups = []
        self.skipped = set()
        self.written = set()
        self.reads = []


def plan(first_nodes, recorded, metric_nodes, outputs, updates):
    """Finds the Adam chains of `updates` that one `Update` call may replace.

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
    # A loss-scaled step guards each update (`loss_scaling.unless_overflow`): the chains are
    # matched on the guarded values, and the guard's flag goes to the fused kernel.
    guards = {id(variable): _guard(variable, value) for variable, value in updates}
    new_values = {id(variable): guards[id(variable)][1] for variable, _ in updates}
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
    for p, guarded in updates:
        p_t = new_values[id(p)]
        chain = _match(p, p_t, new_values, updated)
        if chain is None:
            continue
        (g, m, v, lr_t, beta_1, beta_2, epsilon), nodes, m_t, v_t = chain
        written = {id(p), id(m), id(v)}
        if claimed & written or len(written) < 3 or id(g) in written:
            continue
        overflow, wrappers = guards[id(p)][0], [guards[id(w)][2] for w in (p, m, v)]
        if any(guards[id(w)][0] is not overflow for w in (m, v)):
            continue
        nodes = nodes + [w for w in wrappers if w is not None]
        if not _private(nodes, tuple(guards[id(w)][3] for w in (m, v, p)), readers,
                        recorded):
            continue
        if not _fusable_layout(p, g, m, v, lr_t, beta_1, beta_2):
            continue
        claimed.update(written)
        for moment in (m, v):
            # Keras makes the moments with `K.zeros`: laid out as their weight (a kernel
            # laid out for its convolution), one fused kernel reads all four densely.
            variables.lay_out(moment, variables.memory_order(p))
        key = (id(lr_t), _key(beta_1), _key(beta_2), epsilon, id(overflow))
        if key not in groups:
            groups[key] = ((lr_t, beta_1, beta_2, epsilon, overflow), [])
        groups[key][1].append((p, g, m, v))
        result.skipped.update(id(n) for n in nodes)
        result.written.update((id(p), id(m), id(v)))
        result.reads += [s for s in (g, lr_t, beta_1, beta_2, overflow) if graph.is_symbol(s)]
    result.groups = list(groups.values())
    _skip_dead(first_nodes, result, outputs, updates, metric_nodes)
    return result


def _guard(variable, value):
    """`(overflow, guarded value, guard node, value)` when `value` is
    `unless_overflow(overflow, guarded value, variable)`, else `(None, value, None, value)`."""
    node = _node(value, _UNLESS_OVERFLOW)
    if node is None or len(node.args) != 3 or node.args[2] is not variable:
        return None, value, None, value
    return node.args[0], node.args[1], node, value


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


def _fused(p, g, m, v):
    """True if `torch._fused_adam_` computes this weight's update: it reads the tensors'
    memory element by element in one order, so they must be dense with the same strides
    (the gradient is made so by `_dense_like`)."""
    return (p.device.type in _FUSED_DEVICES and p.dtype in _FUSED_DTYPES and
            _dense(p) and
            all(x.device == p.device and x.dtype == p.dtype for x in (g, m, v)) and
            _same_strides(m, p) and _same_strides(v, p))


def _same_strides(x, y):
    """True if `x` and `y` (of one shape) lay their elements out alike (the stride of an
    axis of size 1 does not matter)."""
    return all(a == b for size, a, b in zip(x.shape, x.stride(), y.stride()) if size != 1)


def _dense(x):
    """True if `x`'s elements fill its memory without gaps or overlaps, in any axis order."""
    expected = 1
    for stride, size in sorted((t, s) for s, t in zip(x.shape, x.stride()) if s != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _dense_like(g, p):
    """`g` laid out in memory as `p` is."""
    return torch.empty_like(p).copy_(g)


class Update:
    """One program's call site of the fused update: `Update()(params, grads, ...)` writes
    Keras' Adam update of every weight into `params`, `ms` and `vs`.

    Nothing is read back from the device: `lr_t` goes to the fused kernel as a tensor, and
    `beta_1`, `beta_2` (Keras' optimizer variables) are read only when they change
    (`variables.host_scalar`). Which weights the fused kernel takes depends on their layout
    and their gradients' strides, which a program keeps from call to call: it is decided
    again only when a gradient's strides change.

    # Arguments (of a call)
        params, grads, ms, vs: lists of tensors: the weights, their gradients, first and
            second moments.
        lr_t: the bias-corrected learning rate, `lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)`,
            a 0-d tensor or a number.
        beta_1, beta_2: the moments' decay rates (numbers or one-element variables);
            epsilon: float.
        overflow: None, or a loss-scaled step's 0-d float32 flag: where it is set, nothing
            is written (the fused kernel reads it on the device).
    """

    def __init__(self):
        self._strides = None
        self._plan = None

    def __call__(self, params, grads, ms, vs, lr_t, beta_1, beta_2, epsilon, overflow=None):
        beta_1, beta_2 = variables.host_scalar(beta_1), variables.host_scalar(beta_2)
        strides = [g.stride() for g in grads]
        if strides != self._strides:
            self._strides, self._plan = strides, _plan_update(params, grads, ms, vs)
        groups, copied, unfused = self._plan
        for i in copied:
            grads[i] = _dense_like(grads[i], params[i])
        for device, indices in groups:
            torch._fused_adam_(
                [params[i] for i in indices], [grads[i] for i in indices],
                [ms[i] for i in indices], [vs[i] for i in indices], [],
                [_infinite_step(device)] * len(indices), lr=_learning_rate(lr_t, device),
                beta1=beta_1, beta2=beta_2, weight_decay=0., eps=epsilon, amsgrad=False,
                maximize=False, found_inf=overflow)
            # the fused kernel leaves version counters alone; readers of the weights
            # (folded inference weights, to_torch's caches) see a write through them
            torch.autograd.graph.increment_version(
                [t for i in indices for t in (params[i], ms[i], vs[i])])
        for i in unfused:
            _unfused_update(params[i], grads[i], ms[i], vs[i], lr_t, beta_1, beta_2, epsilon,
                            overflow)


def _plan_update(params, grads, ms, vs):
    """`(groups, copied, unfused)`: the fused kernel's calls as `(device, weight indices)`,
    the gradients to lay out as their weights first, and the weights updated op by op."""
    fused = [i for i, weight in enumerate(zip(params, grads, ms, vs)) if _fused(*weight)]
    by_device = {}
    for i in fused:
        by_device.setdefault(params[i].device, []).append(i)
    copied = [i for i in fused if not _same_strides(grads[i], params[i])]
    unfused = sorted(set(range(len(params))) - set(fused))
    return list(by_device.items()), copied, unfused


def _unfused_update(p, g, m, v, lr_t, beta_1, beta_2, epsilon, overflow):
    # Python operators of variables record graph ops: this computes on aliases
    p, m, v = (t.as_subclass(torch.Tensor) for t in (p, m, v))
    m_t = m * beta_1 + g * (1. - beta_1)
    v_t = v * beta_2 + g.square() * (1. - beta_2)
    p_t = p - m_t * lr_t / (v_t.sqrt() + epsilon)
    for target, value in ((m, m_t), (v, v_t), (p, p_t)):
        target.copy_(value if overflow is None else
                     torch.where(overflow.to(torch.bool), target, value))


def _learning_rate(lr_t, device):
    """`lr_t` as `torch._fused_adam_` takes it: a number, or a float32 tensor of `lr_t`'s
    value on `device` (the kernel reads it on the device: no host read)."""
    if not isinstance(lr_t, torch.Tensor):
        return float(lr_t)
    if lr_t.device != device or lr_t.dtype != torch.float32:
        lr_t = lr_t.to(device, torch.float32)
    return lr_t.reshape(())
