"""Learning-phase specialisation: a pass that resolves `switch`es on the learning phase when a
program is built, so that the branch not taken is never computed.

Keras builds its layers for both phases at once: `K.in_train_phase(train, test)` records a
`select` between two branches on the learning-phase placeholder, and both branches are
recorded (BatchNormalization's batch statistics and its moving-statistics form, Dropout's
dropped and plain inputs). A program run with both branches computes both; TF runs one, as
its `cond` does. When the phase is a constant for a call (Keras feeds 0 to predict and
evaluate, 1 to train; an unfed phase is 0), this pass rewrites the graph a program is built
from:
- the learning-phase placeholder becomes a constant;
- a node computed from the phase alone (`K.cast(K.learning_phase(), 'bool')`) is computed
  once, when the program is built;
- a `select` whose condition is such a scalar constant is replaced by the branch it picks;
- every node that reads a replaced value is copied with its arguments replaced.
The recorded graph itself is never modified: Keras keeps building on it, and a `K.function`
holds one program per phase value (`function.py`). A program then walks back only from the
branch taken. Values are those of the unspecialised program, where a scalar `select` returns
the chosen branch itself.

`TORCHK_PHASE=0` (or `set_enabled(False)`) turns the pass off for programs built afterwards.
"""

import torch

from .. import config
from .. import dtypes
from .. import graph
from .. import program

_switch = config.PassSwitch('TORCHK_PHASE')
enabled = _switch.enabled
set_enabled = _switch.set_enabled


@graph.op
def select(condition, then_value, else_value):
    """`K.switch`'s op: a scalar condition picks a whole branch, a condition of rank >= 1
    selects element-wise (expanded on the right to the branches' rank)."""
    condition = dtypes.as_tensor(condition)
    then_value = dtypes.as_tensor(then_value)
    else_value = dtypes.as_tensor(else_value)
    if condition.ndim == 0 and condition.device.type != 'meta':
        return then_value if bool(condition) else else_value
    if condition.ndim == 0:
        return torch.where(condition.bool(), then_value, else_value)
    rank = max(then_value.ndim, else_value.ndim)
    if condition.ndim > rank:
        raise ValueError('switch: the condition has rank %d, more than the expressions (%d).'
                         % (condition.ndim, rank))
    condition = condition.reshape(tuple(condition.shape) + (1,) * (rank - condition.ndim))
    return torch.where(condition.bool(), then_value, else_value)


def specialise(targets, learning_phase, value, fed=()):
    """Returns `targets` computed with the learning phase fixed to `value`.

    # Arguments
        targets: symbols (or constants) a program computes: outputs, update values.
        learning_phase: the learning-phase placeholder.
        value: the phase, 0 or 1 (or a bool).
        fed: symbols fed by each call: they and their ancestors are kept as they are.

    # Returns
        A list like `targets`: each symbol that depends on the learning phase is replaced by
        a copy computed from the branches `value` selects (or by a constant); the others are
        returned unchanged.
    """
    fed = [s for s in fed if s is not learning_phase]
    nodes, _ = program.ancestors([t for t in targets if graph.is_symbol(t)],
                                 stop={id(s) for s in fed})
    rewrite = program.Rewrite(fed)
    rewrite.replace_symbol(learning_phase, torch.tensor(bool(value)))
    for node in nodes:
        if not rewrite.changed(node):
            continue
        args, kwargs = rewrite.arguments(node)
        if node.fn is select.__wrapped__ and _is_scalar_constant(args[0]):
            rewrite.replace_value(node, args[1] if bool(args[0]) else args[2])
        elif node.kind == 'op' and not graph.contains_symbol((args, kwargs)):
            rewrite.replace_value(node, node.fn(*args, **kwargs))
        else:
            rewrite.copy(node)
    return rewrite.targets(targets)


def _is_scalar_constant(value):
    if graph.is_symbol(value):
        return False
    if isinstance(value, torch.Tensor):
        return value.ndim == 0
    return isinstance(value, (bool, int))
