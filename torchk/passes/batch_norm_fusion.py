"""Batch-norm fusion: a pass that runs Keras' `BatchNormalization` training step as one torch
`batch_norm` call, which also moves the moving statistics.

Keras 2 (2.2.5 and 2.3.1; the tf.keras facade's layer is Keras 2.3.1's) records, for a
`BatchNormalization` called in training:

    normed, mean, variance = K.normalize_batch_in_training(x, gamma, beta, axes, epsilon)
    n = K.cast(K.prod([K.shape(x)[axis] for axis in axes]), K.dtype(x))
    variance *= n / (n - (1.0 + epsilon))
    K.moving_average_update(moving_mean, mean, momentum)
    K.moving_average_update(moving_variance, variance, momentum)

each update being `moving - (moving - value) * (1 - momentum)`: besides the kernel, copies of
the batch statistics, the sample-size arithmetic, six ops and two copies for the updates.
This pass replaces, in the graph a program is built from, the `normalize_batch_in_training`
node and both updates with one node of `nn_ops.normalize_batch_with_moving_statistics`:
torch's kernel normalizes by the batch and moves the statistics in place, with torch's
momentum `1 - momentum`. The updates leave the program's update list.

Numbers: the normalized tensor and every gradient are the same computation as unfused; the
moving mean agrees to float32 rounding. The moving variance moves towards the batch variance
corrected by Bessel's `n / (n - 1)`, as torch and tf.keras 2's fused batch norm do, where
Keras 2.3.1 multiplies the variance `normalize_batch_in_training` returns by
`n / (n - 1 - epsilon)`. That variance is the population variance, except for 4-D inputs
reduced over `[0, 1, 2]` (channels-last images), where it is already the sample variance
(TF's fused kernel's, which Keras 2.3.1 on TF then corrects a second time). So the batch
term of the moving variance is the unfused one times `(n - 1 - epsilon) / n` for those 4-D
inputs, a relative difference of `(1 + epsilon) / n` (6.4e-4 for MobileNetV2's 7x7 layers at
a batch of 32), and times `(n - 1 - epsilon) / (n - 1)` for the others, `epsilon / (n - 1)`
(below float32's rounding, 2**-24, once `n > epsilon * 2**24 + 1`). Each moving variance,
an average of these terms, differs from the unfused one by at most the same relative amount.

A layer's step is fused only when the program reads nothing else of it: not the moving
statistics (their inference branch is gone once the learning phase is fixed, `phase.py`;
with the phase unresolved it is read, and the step is left as it is), not the batch mean or
variance or their corrected and updated values, and the moving statistics are updated by
nothing else. The normalization must not be recomputed after the updates (an output
flagged `_is_metric` computed from it), the moving statistics and the parameters must hold
one value per channel, all in `x`'s floating dtype or (a mixed precision layer's: a float16
or bfloat16 `x`) all float32, and `n` must be the sample size of `x` over the reduction axes as
Keras computes it. The kernel updates the statistics while the program computes its outputs:
nothing else reads them, so the outputs are still those of the state before the call.

`TORCHK_BN_FUSION=0` (or `set_enabled(False)`) turns the pass off for programs built
afterwards.
"""
import math
import operator

import torch

from .. import array_ops
from .. import config
from .. import graph
from .. import math_ops
from .. import nn_ops
from .. import program
from ..variables import Variable

_switch = config.PassSwitch('TORCHK_BN_FUSION')
enabled = _switch.enabled
set_enabled = _switch.set_enabled

_NORMALIZE = nn_ops.normalize_batch_in_training.__wrapped__
_PROD = math_ops.prod.__wrapped__
_CAST = math_ops.cast.__wrapped__
_DIMENSION = array_ops._dimension.__wrapped__
_OUTPUT = 'output'


def fuse(outputs, updates, metric_flags, fed=()):
    """Returns the outputs and updates of a program with Keras' batch-norm training steps
    fused (see the module doc).

    # Arguments
        outputs: the program's outputs (symbols or constants).
        updates: its (variable, new value) pairs.
        metric_flags: for each output, True if it is computed after the updates.
        fed: symbols fed by each call: they and their ancestors are kept as they are.

    # Returns
        `(outputs, updates)`: the outputs, rewritten; the unique updates
        (`program.unique_updates`), rewritten, without those of the moving statistics the
        fused steps update.
    """
    updates = program.unique_updates(updates)
    if not enabled():
        return list(outputs), updates
    stop = {id(s) for s in fed}
    targets = list(outputs) + [value for _, value in updates]
    nodes, _ = program.ancestors([t for t in targets if graph.is_symbol(t)], stop=stop)
    if not any(node.fn is _NORMALIZE for node in nodes):
        return list(outputs), updates
    metric_nodes, _ = program.ancestors(
        [o for o, m in zip(outputs, metric_flags) if m and graph.is_symbol(o)], stop=stop)
    readers = _readers(nodes, outputs, updates)
    new_values = {id(variable): value for variable, value in updates}
    after_updates = {id(node) for node in metric_nodes}
    steps = {}
    for node in nodes:
        if node.fn is _NORMALIZE and id(node) not in after_updates:
            step = _match(node, readers, new_values)
            if step is not None:
                steps[id(node)] = step
    if not steps:
        return list(outputs), updates
    rewrite = program.Rewrite(fed)
    replaced = set()
    for step in steps.values():
        replaced.update(id(n) for n in step.nodes)
    for node in nodes:
        if id(node) in steps:
            rewrite.replace_value(node, (steps[id(node)].fused(rewrite), None, None))
        elif id(node) not in replaced:
            rewrite.copy(node)
    fused_variables = {id(v) for step in steps.values() for v in step.variables}
    return (rewrite.targets(outputs),
            [(v, rewrite.symbol(value)) for v, value in updates
             if id(v) not in fused_variables])


class _Step:
    """One layer's training step that the pass fuses: the `normalize_batch_in_training`
    node's arguments, the moving statistics, torch's momentum, and the nodes that the fused
    node replaces."""

    def __init__(self, arguments, variables, momentum, nodes):
        self.arguments = arguments
        self.variables = variables
        self.momentum = momentum
        self.nodes = nodes

    def fused(self, rewrite):
        """The symbol of the fused node computing the normalized tensor."""
        x, gamma, beta = (rewrite.symbol(self.arguments[k]) for k in ('x', 'gamma', 'beta'))
        args = (x, gamma, beta) + tuple(self.variables) + (self.arguments['reduction_axes'],)
        kwargs = {'momentum': self.momentum, 'epsilon': self.arguments['epsilon']}
        node = graph.Node(nn_ops.normalize_batch_with_moving_statistics, args, kwargs,
                          graph._symbols_in((args, kwargs)))
        return graph.KerasTensor(node, (), x._static_shape, x._torch_dtype)


def _key(item):
    """What identifies a value a node reads: a node's result by (node, path), a leaf by
    itself."""
    node = getattr(item, 'node', None) if isinstance(item, graph.KerasTensor) else None
    return (id(item),) if node is None else (id(node), item.path)


def _readers(nodes, outputs, updates):
    """`{key: [reader, ...]}`: the nodes reading each value, `_OUTPUT` for each output that
    is it, and the updated variable for an update value."""
    readers = {}
    for node in nodes:
        for item in node.inputs:
            readers.setdefault(_key(item), []).append(node)
    for output in outputs:
        if graph.is_symbol(output):
            readers.setdefault(_key(output), []).append(_OUTPUT)
    for variable, value in updates:
        if graph.is_symbol(value):
            readers.setdefault(_key(value), []).append(variable)
    return readers


def _match(node, readers, new_values):
    """The `_Step` of a `normalize_batch_in_training` node, or None when its results and
    the moving statistics are not used as the module doc requires."""
    arguments = node.bound_arguments()
    x, epsilon, axes = arguments['x'], arguments['epsilon'], arguments['reduction_axes']
    if (not isinstance(x, graph.KerasTensor) or x._static_shape is None
            or not x._torch_dtype.is_floating_point or type(epsilon) is not float
            or not isinstance(axes, (list, tuple))):
        return None
    shape = x._static_shape
    if not all(type(a) is int and -len(shape) <= a < len(shape) for a in axes):
        return None
    axes = sorted({a % len(shape) for a in axes})
    kept = [shape[i] for i in range(len(shape)) if i not in axes]
    if len(axes) == len(shape) or None in kept:
        return None
    mean = _moving_average(readers, (id(node), (1,)), new_values)
    corrected = _only_reader(readers, (id(node), (2,)))
    if mean is None or not _is_corrected_variance(corrected, node, x, axes, epsilon):
        return None
    variance = _moving_average(readers, (id(corrected), ()), new_values)
    if variance is None or mean[1] != variance[1] or mean[0] is variance[0]:
        return None
    variables = (mean[0], variance[0])
    parameters = [arguments['gamma'], arguments['beta']]
    given = {_dtype(v) for v in list(variables) + parameters if v is not None}
    if given != {nn_ops.statistics_dtype(x._torch_dtype, given)}:
        return None
    if any(v.numel() != math.prod(kept) or not v.is_contiguous() for v in variables):
        return None
    return _Step(arguments, variables, mean[1], mean[2] + variance[2] + [corrected])


def _dtype(value):
    return value._torch_dtype if isinstance(value, graph.KerasTensor) else value.dtype


def _only_reader(readers, key):
    """The one reader of the value `key`, or None."""
    found = readers.get(key, [])
    return found[0] if len(found) == 1 else None


def _binary(node, fn):
    """`node`'s two arguments when it is `fn(a, b)` without keywords, else None."""
    if not isinstance(node, graph.Node) or node.fn is not fn or node.kwargs \
            or len(node.args) != 2:
        return None
    return node.args


def _moving_average(readers, key, new_values):
    """`(variable, torch's momentum, nodes)` when the value `key` is read only by
    `variable - (variable - value) * decay`, a Keras variable's update (its only one), and
    the variable is read by nothing else; else None."""
    difference = _only_reader(readers, key)
    args = _binary(difference, operator.sub)
    if args is None or not isinstance(args[0], Variable) or _key(args[1]) != key:
        return None
    variable = args[0]
    scaled = _only_reader(readers, (id(difference), ()))
    args = _binary(scaled, operator.mul)
    if args is None or _key(args[0]) != (id(difference), ()) or type(args[1]) is not float \
            or not 0. < args[1] <= 1.:
        return None
    decay = args[1]
    moved = _only_reader(readers, (id(scaled), ()))
    args = _binary(moved, operator.sub)
    if args is None or args[0] is not variable or _key(args[1]) != (id(scaled), ()):
        return None
    new_value = new_values.get(id(variable))
    if (new_value is None or _key(new_value) != (id(moved), ())
            or readers.get((id(moved), ())) != [variable]):
        return None
    if sorted(map(id, readers.get((id(variable),), []))) != sorted(map(id, (difference,
                                                                            moved))):
        return None
    return variable, decay, [difference, scaled, moved]


def _is_corrected_variance(node, normalize, x, axes, epsilon):
    """True if `node` is `variance * (n / (n - (1 + epsilon)))`, `variance` the batch
    variance of `normalize` and `n` the sample size of `x` over `axes`."""
    args = _binary(node, operator.mul)
    if args is None:
        return False
    variance = (id(normalize), (2,))
    ratio = args[1] if _key(args[0]) == variance else args[0] \
        if _key(args[1]) == variance else None
    if ratio is None:
        return False
    if not graph.is_symbol(ratio):
        return _is_constant_ratio(ratio, x, axes, epsilon)
    args = _binary(ratio.node, operator.truediv) if ratio.path == () else None
    if args is None:
        return False
    size, denominator = args
    args = _binary(getattr(denominator, 'node', None), operator.sub) \
        if isinstance(denominator, graph.KerasTensor) and denominator.path == () else None
    return (args is not None and args[0] is size and type(args[1]) is float
            and args[1] == 1. + epsilon and _is_sample_size(size, x, axes))


def _is_constant_ratio(ratio, x, axes, epsilon):
    """True if the constant `ratio` is `n / (n - (1 + epsilon))` as Keras computes it for a
    static sample size `n` of `x` over `axes`."""
    sizes = [x._static_shape[a] for a in axes]
    if None in sizes or not isinstance(ratio, torch.Tensor) or ratio.ndim:
        return False
    n = torch.tensor(math.prod(sizes), dtype=torch.int64).to(ratio.dtype)
    return bool(torch.equal(ratio, n / (n - (1. + epsilon))))


def _is_sample_size(size, x, axes):
    """True if `size` is `K.cast(K.prod([K.shape(x)[a] for a in axes]), float dtype)`: a
    product of `x`'s dimensions over `axes`, each read when the graph runs or a constant of
    a static dimension (`K.shape`)."""
    while isinstance(size, graph.KerasTensor) and size.node is not None \
            and size.node.fn is _CAST and size.path == ():
        size = size.node.args[0]
    node = getattr(size, 'node', None) if isinstance(size, graph.KerasTensor) else None
    if node is None or node.fn is not _PROD or size.path != () or len(node.args) != 1 \
            or node.kwargs or not isinstance(node.args[0], (list, tuple)):
        return False
    read, constant = [], 1
    for item in node.args[0]:
        inner = getattr(item, 'node', None) if isinstance(item, graph.KerasTensor) else None
        if inner is not None and inner.fn is _DIMENSION and item.path == () \
                and inner.args[0] is x and type(inner.args[1]) is int and not inner.kwargs:
            read.append(inner.args[1])
        elif isinstance(item, (int, torch.Tensor)) and not graph.is_symbol(item) \
                and not isinstance(item, bool) and _is_integer(item):
            constant *= int(item)
        else:
            return False
    if len(set(read)) != len(read) or not set(read) <= set(axes):
        return False
    rest = [x._static_shape[a] for a in axes if a not in read]
    return None not in rest and math.prod(rest) == constant


def _is_integer(value):
    return not isinstance(value, torch.Tensor) or (value.ndim == 0 and not (
        value.is_floating_point() or value.is_complex() or value.dtype == torch.bool))
