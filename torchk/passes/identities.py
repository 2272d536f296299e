"""Identities: a pass that drops ops whose result is their input.

Keras' training graph multiplies each output's loss by its weight and takes the mean of the
total, `K.mean(1.0 * loss)`, and casts tensors to the dtype they already have: each is a
kernel forward and one backward on a GPU (the cast is free, but still a node a program runs).
This pass replaces, in a copy of the graph, the result of
- `x * 1` and `1 * x`,
- `K.mean(x)` of a 0-d `x` over all (or no given) axes,
- `K.cast(x, dtype)` to `x`'s own dtype,
with `x` when `x` is a symbol of the result's static shape and dtype, and the result of
`K.mean(x, axis)` over axes of static size 1 (a loss' mean over the last axis of a
`(batch, 1)` output) with the view `torch.squeeze(x, axis)`: the same values, the same
gradients. `TORCHK_IDENTITIES=0` (or `set_enabled(False)`) turns the pass off for programs
built afterwards.
"""
import operator

import torch

from .. import config
from .. import graph
from .. import math_ops
from .. import program

_switch = config.PassSwitch('TORCHK_IDENTITIES')
enabled = _switch.enabled
set_enabled = _switch.set_enabled

_MEAN = math_ops.mean.__wrapped__
_CAST = math_ops.cast.__wrapped__


def simplify(targets, fed=()):
    """Returns `targets` computed without the identity ops of the module doc.

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
    rewrite = program.Rewrite(fed)
    for node in nodes:
        result = results.get(id(node))
        source = _identity_input(node, result)
        squeezed = None if source is not None else _mean_of_unit_axes(node, result)
        if source is not None:
            rewrite.replace_value(node, rewrite.symbol(source))
        elif squeezed is not None:
            x = rewrite.symbol(node.args[0])
            rewrite.replace_node(node, graph.Node(torch.squeeze, (x, squeezed), {},
                                                  graph._symbols_in((x,))))
        else:
            rewrite.copy(node)
    return rewrite.targets(targets)


def _mean_of_unit_axes(node, result):
    """The axes (a tuple) when `node` is `K.mean(x, axis)` of a floating `x` over axes of
    static size 1, without `keepdims`; else None."""
    if result is None or node.fn is not _MEAN or node.kind != 'op':
        return None
    bound = dict(zip(('x', 'axis', 'keepdims'), node.args), **node.kwargs)
    x, axis = bound.get('x'), bound.get('axis')
    if not isinstance(x, graph.KerasTensor) or bound.get('keepdims', False):
        return None
    shape = _shape(x)
    axes = [axis] if isinstance(axis, int) else axis
    if (shape is None or not isinstance(axes, (list, tuple)) or not axes
            or not all(type(a) is int and -len(shape) <= a < len(shape) for a in axes)):
        return None
    axes = tuple(sorted({a % len(shape) for a in axes}))
    if any(shape[a] != 1 for a in axes) or not x._torch_dtype.is_floating_point:
        return None
    if x._torch_dtype is not result._torch_dtype:
        return None
    return axes


def _identity_input(node, result):
    """The input `node` returns unchanged (see the module doc), or None."""
    if result is None or node.kind != 'op':
        return None
    source = None
    if node.fn is operator.mul and len(node.args) == 2 and not node.kwargs:
        a, b = node.args
        source = b if _is_one(a) else a if _is_one(b) else None
    elif node.fn is _MEAN and node.args and len(node.args) + len(node.kwargs) <= 2:
        axis = node.args[1] if len(node.args) > 1 else node.kwargs.get('axis')
        if axis in (None, (), []) and not node.kwargs.get('keepdims', False):
            source = node.args[0]
            if not isinstance(source, graph.KerasTensor) or _shape(source) != ():
                return None
    elif node.fn is _CAST and len(node.args) == 2 and not node.kwargs:
        source = node.args[0]
    if not isinstance(source, graph.KerasTensor):
        return None
    if _shape(source) != _shape(result) or source._torch_dtype is not result._torch_dtype:
        return None
    return source


def _is_one(value):
    return type(value) in (int, float) and value == 1


def _shape(symbol):
    shape = symbol._static_shape
    return None if shape is None else tuple(shape)
