"""Zeros: a pass that makes zeros built by arithmetic one `torch.zeros` of the final shape.

Keras' recurrent layers build their initial states from the input's shape with tensor ops,
`K.tile(K.expand_dims(K.sum(K.zeros_like(inputs), axis=(1, 2))), [1, units])`: four kernels
(one over the whole input) for a tensor known to be zeros. This pass follows, in a copy of the
graph, a `K.zeros_like(x)` through `K.sum`, `K.expand_dims` and `K.tile` (with static
repeats), and replaces the result each reader sees with one node that makes zeros of the
shape those ops give `x`'s shape when the program runs: the same values (zeros carry no
gradient). `TORCHK_ZEROS=0` (or `set_enabled(False)`) turns the pass off for programs built
afterwards.
"""
import torch

from .. import array_ops
from .. import config
from .. import graph
from .. import math_ops
from .. import program

_switch = config.PassSwitch('TORCHK_ZEROS')
enabled = _switch.enabled
set_enabled = _switch.set_enabled

_ZEROS_LIKE = array_ops.zeros_like.__wrapped__
_SUM = math_ops.sum.__wrapped__
_EXPAND_DIMS = array_ops.expand_dims.__wrapped__
_TILE = array_ops.tile.__wrapped__


def zeros_of_shape(x, steps, dtype):
    """Zeros of `dtype` on `x`'s device, of the shape that `steps` make of `x`'s shape.

    # Arguments
        x: a tensor.
        steps: a tuple of `('sum', axes, keepdims)`, `('expand_dims', axis)` and
            `('tile', repeats)`, applied in order.
        dtype: a torch dtype.
    """
    shape = list(x.shape)
    for step in steps:
        if step[0] == 'sum':
            axes = range(len(shape)) if step[1] is None else (
                [step[1]] if isinstance(step[1], int) else step[1])
            axes = {a % len(shape) for a in axes}
            shape = [1 if i in axes else d for i, d in enumerate(shape)
                     if step[2] or i not in axes]
        elif step[0] == 'expand_dims':
            shape.insert(step[1] % (len(shape) + 1), 1)
        else:
            repeats = list(step[1])
            repeats = [1] * (len(shape) - len(repeats)) + repeats
            shape = [d * r for d, r in zip(shape, repeats)]
    return torch.zeros(shape, dtype=dtype, device=x.device)


def rewrite(targets, fed=()):
    """Returns `targets` computed with the zeros of the module doc made at once.

    # Arguments
        targets: symbols (or constants) a program computes: outputs, update values.
        fed: symbols fed by each call: they and their ancestors are kept as they are.

    # Returns
        A list like `targets`.
    """
    if not enabled():
        return list(targets)
    nodes, _ = program.ancestors([t for t in targets if graph.is_symbol(t)],
                                 stop={id(s) for s in fed})
    results = program.single_results(nodes, targets)
    rewritten = program.Rewrite(fed)
    known = {}
    for node in nodes:
        found = _zeros(node, known, results.get(id(node)))
        if found is None:
            rewritten.copy(node)
            continue
        known[id(node)] = found
        source, steps, dtype = found
        source = rewritten.symbol(source)
        rewritten.replace_node(node, graph.Node(zeros_of_shape, (source, steps, dtype), {},
                                                graph._symbols_in((source,))))
    return rewritten.targets(targets)


def _zeros(node, known, result):
    """`(source, steps, dtype)` when `node`'s result is known zeros, else None."""
    if result is None or node.kind != 'op' or not node.args:
        return None
    if node.fn is _ZEROS_LIKE:
        source = node.args[0]
        return (source, (), result._torch_dtype) if isinstance(source, graph.KerasTensor) \
            else None
    first = node.args[0]
    if not (isinstance(first, graph.KerasTensor) and first.path == ()
            and first.node is not None and id(first.node) in known):
        return None
    source, steps, dtype = known[id(first.node)]
    bound = dict(zip(_PARAMETERS.get(node.fn, ()), node.args[1:]), **node.kwargs)
    if node.fn is _SUM:
        axis = bound.get('axis')
        if not (axis is None or isinstance(axis, int) or (
                isinstance(axis, (list, tuple)) and all(isinstance(a, int) for a in axis))):
            return None
        step = ('sum', axis, bool(bound.get('keepdims', False)))
    elif node.fn is _EXPAND_DIMS:
        axis = bound.get('axis', -1)
        if not isinstance(axis, int):
            return None
        step = ('expand_dims', axis)
    elif node.fn is _TILE:
        repeats = bound.get('n')
        repeats = [repeats] if isinstance(repeats, int) else repeats
        if not (isinstance(repeats, (list, tuple))
                and all(type(r) is int for r in repeats)):
            return None
        step = ('tile', tuple(repeats))
    else:
        return None
    if result._torch_dtype is not dtype:
        return None
    return source, steps + (step,), dtype


_PARAMETERS = {_SUM: ('axis', 'keepdims'), _EXPAND_DIMS: ('axis',), _TILE: ('n',)}
