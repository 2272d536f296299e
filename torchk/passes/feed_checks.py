"""Feed checks: a pass that checks fed indices where they are fed, on the host.

`K.gather` checks that its indices lie in `[0, len(reference))` before the kernel reads
them (an out-of-range index would crash a CPU kernel or leave a device-side assert), which
reads two numbers back from the device: on a GPU, a synchronisation in every training step of
an `Embedding` model. Keras' `Embedding` gathers rows at indices that are the fed batch
itself (cast to int32). This pass finds, in a copy of the graph, each `gather` whose indices
are a fed input (or an integer cast of one), has it gather without the check, and returns
the check to make on the value fed at that position instead (`check`), before it is
converted: a numpy array is checked on the host, with no device read. A float feed cast to
integers is checked as the cast truncates it. `TORCHK_FEED_CHECKS=0` (or
`set_enabled(False)`) turns the pass off for programs built afterwards.
"""
import numpy as np
import torch

from .. import array_ops
from .. import config
from .. import graph
from .. import math_ops
from .. import program
from .. import validation

_switch = config.PassSwitch('TORCHK_FEED_CHECKS')
enabled = _switch.enabled
set_enabled = _switch.set_enabled

_GATHER = array_ops.gather.__wrapped__
_CAST = math_ops.cast.__wrapped__


class IndexCheck:
    """The check of the indices fed at `position`: each must lie in `[0, size)`."""
    __slots__ = ('position', 'size')

    def __init__(self, position, size):
        self.position = position
        self.size = size

    def __call__(self, value):
        """Checks the fed `value` (before conversion).

        # Raises
            ValueError: naming `gather`, the valid range and the first bad index.
        """
        if isinstance(value, torch.Tensor):
            if not (value.is_floating_point() or value.is_complex()) and value.numel():
                validation.check_index_range('gather', 'indices', value, self.size)
            elif value.numel():
                validation.check_index_range('gather', 'indices',
                                             value.detach().trunc().to(torch.int64), self.size)
            return
        array = np.asarray(value)
        if array.size == 0 or array.dtype.kind not in 'biuf':
            return
        low, high = array.min(), array.max()
        # an integer cast truncates floats toward zero: (-1, size) becomes [0, size)
        low_ok = low > -1 if array.dtype.kind == 'f' else low >= 0
        if not (low_ok and high < self.size):
            bad = high if low_ok else low
            bad = int(np.trunc(bad)) if np.isfinite(bad) else bad
            validation.fail('gather', 'indices must lie in [0, %d), got %s.' % (self.size, bad))


def hoist(targets, inputs):
    """Returns `(targets, checks)`: `targets` computed with the gathers of fed indices
    unchecked, and the `IndexCheck`s of the feeds (see the module doc).

    # Arguments
        targets: symbols (or constants) a program computes: outputs, update values.
        inputs: the symbols each call feeds, in order.
    """
    if not enabled():
        return list(targets), []
    positions = {id(s): i for i, s in enumerate(inputs)}
    nodes, _ = program.ancestors([t for t in targets if graph.is_symbol(t)],
                                 stop=set(positions))
    rewrite = program.Rewrite(inputs)
    checks = {}
    for node in nodes:
        found = _fed_indices(node, positions)
        if found is None:
            rewrite.copy(node)
            continue
        position, size = found
        if checks.get(position, size) != size:
            rewrite.copy(node)
            continue
        checks[position] = size
        args = tuple(rewrite.symbol(a) for a in node.args)
        rewrite.replace_node(node, graph.Node(array_ops._gather_checked, args, {},
                                              graph._symbols_in(args)))
    return rewrite.targets(targets), [IndexCheck(p, n) for p, n in checks.items()]


def _fed_indices(node, positions):
    """`(feed position, size)` when `node` gathers rows of a reference of static length
    `size` at a fed input or an integer cast of one, else None."""
    if node.fn is not _GATHER or node.kind != 'op' or len(node.args) != 2 or node.kwargs:
        return None
    reference, indices = node.args
    shape = reference._static_shape if isinstance(reference, graph.KerasTensor) \
        else getattr(reference, 'shape', None)
    if not shape or shape[0] is None:
        return None
    if (isinstance(indices, graph.KerasTensor) and indices.node is not None
            and indices.node.fn is _CAST and indices.path == ()
            and not indices._torch_dtype.is_floating_point
            and indices._torch_dtype is not torch.bool):
        indices = indices.node.args[0]
    if id(indices) not in positions or not isinstance(indices, graph.KerasTensor):
        return None
    return positions[id(indices)], int(shape[0])
