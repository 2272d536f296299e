"""The optimizer's state as tf.keras 2.11+ checkpoints it (`tf.train.Checkpoint`, TF-format
`save_weights`), over Keras 2.3.1's optimizer weights.

tf.keras' optimizers keep their variables in a list `_variables`: the step count first, then
the slots in the order their `build` makes them (Adam: `m` and `v` of the first variable,
then of the second, ..., then the `vhat`s with `amsgrad`), beside `_iterations` and
`_learning_rate`. Keras 2.3.1 keeps `iterations`, then one group of slots per kind (all `m`s,
then all `v`s). `tf_variables` lists Keras' weights in tf.keras' order, so that each
checkpoint key names the same value for both; an optimizer whose layout is not known here
(Adafactor) lists its weights in Keras' order, which torchk reads back and TF does not.

TF 2.0-2.10's optimizers (`tf.keras.optimizers.legacy`) name each slot by reference to its
variable's node in the object graph (`slot_variables`); `restore_slot_references` reads
those. The slots of a restored optimizer that has not made them yet get their values when it
makes them (`torchk.tf.trackable.refresh`, called by `Optimizer.get_updates`).
"""
from keras import optimizers as keras_optimizers

from ... import variables
from ...tf import trackable


def _adam(optimizer):
    return [('m', 'v')] + ([('vhat',)] if optimizer.amsgrad else [])


def _rmsprop(optimizer):
    return ([('velocity',)] + ([('momentum',)] if getattr(optimizer, 'momentum', 0) else [])
            + ([('average_gradient',)] if getattr(optimizer, 'centered', False) else []))


# Per class: the slots tf.keras' `build` makes, as loops over the variables, each making the
# slots named for one variable; and Keras 2.3.1's groups of slots after its leading weights.
_BUILD_LOOPS = {
    'SGD': lambda o: [('m',)],
    'RMSprop': _rmsprop,
    'Adagrad': lambda o: [('accumulator',)],
    'Adadelta': lambda o: [('accumulated_grad', 'accumulated_delta_var')],
    'Adam': _adam,
    'AdamW': _adam,
    'Adamax': lambda o: [('m', 'u')],
    'Nadam': lambda o: [('m', 'v')],
    'Lion': lambda o: [('m',)],
    'Ftrl': lambda o: [('accumulator', 'linear')],
}
_KERAS_GROUPS = {'Adam': ('m', 'v', 'vhat'), 'AdamW': ('m', 'v', 'vhat')}


def _layout(optimizer):
    """(leading weights, {(slot name, variable index): weight}) of a built optimizer whose
    layout is known, else None."""
    loops = _BUILD_LOOPS.get(type(optimizer).__name__)
    params = getattr(optimizer, '_torchk_slot_params', None)
    if loops is None or params is None:
        return None
    weights = list(optimizer.weights)
    leading = 2 if type(optimizer).__name__ == 'Nadam' else 1
    groups = _KERAS_GROUPS.get(type(optimizer).__name__,
                               tuple(name for loop in loops(optimizer) for name in loop))
    if len(weights) != leading + len(groups) * len(params):
        return None
    slots = {}
    for g, name in enumerate(groups):
        for i in range(len(params)):
            slots[name, i] = weights[leading + g * len(params) + i]
    return weights[:leading], slots


def tf_variables(optimizer):
    """The optimizer's `_variables` as tf.keras lists them: the step count, then the slots in
    the order tf.keras makes them (Keras' order where the layout is not known)."""
    weights = list(optimizer.weights)
    if not weights:
        return [optimizer.iterations]
    layout = _layout(optimizer)
    if layout is None:
        return [optimizer.iterations] + [w for w in weights if w is not optimizer.iterations]
    _, slots = layout
    ordered = [optimizer.iterations]
    params = optimizer._torchk_slot_params
    for loop in _BUILD_LOOPS[type(optimizer).__name__](optimizer):
        for i, param in enumerate(params):
            for name in loop:
                # tf.keras' full name of the slot, which names its variable
                slots[name, i]._torchk_checkpoint_full_name = '%s/%s/%s' % (
                    optimizer.name, name, trackable.variable_full_name(param))
                ordered.append(slots[name, i])
    return ordered


def _children(optimizer):
    # tf.keras' full names (Keras 2.3.1's are made unique per process: `iterations_1`)
    optimizer.iterations._torchk_checkpoint_full_name = 'iteration'
    optimizer.learning_rate._torchk_checkpoint_full_name = 'learning_rate'
    children = [('_variables', tf_variables(optimizer)),
                ('_iterations', optimizer.iterations),
                ('_learning_rate', optimizer.learning_rate)]
    if type(optimizer).__name__ == 'Nadam' and optimizer.weights:
        children.append(('_u_product', optimizer.weights[1]))
    return children


def _legacy_children(optimizer):
    """The names of TF 2.0-2.10's optimizers for the step count and the hyperparameters
    (`learning_rate`, `momentum`, `decay`, `beta_1`, ...), Keras 2.3.1's variables of the
    same names."""
    return [('iter', optimizer.iterations)] + [
        (name, value) for name, value in vars(optimizer).items()
        if isinstance(value, variables.Variable) and name != 'iterations']


# TF 2.0-2.10's slot names that tf.keras 2.11+ renamed, per class.
_LEGACY_SLOT_NAMES = {
    'SGD': {'momentum': 'm'},
    'RMSprop': {'rms': 'velocity', 'mg': 'average_gradient'},
    'Adadelta': {'accum_grad': 'accumulated_grad', 'accum_var': 'accumulated_delta_var'},
    'Adamax': {'v': 'u'},
}


def _slot_kind(optimizer, slot_name):
    """tf.keras 2.11+'s name of a slot that TF 2.0-2.10 names `slot_name`."""
    return _LEGACY_SLOT_NAMES.get(type(optimizer).__name__, {}).get(slot_name, slot_name)


def restore_slot_references(optimizer, node_id, restoration):
    """Restores the slots a TF 2.0-2.10 checkpoint names by reference to their variable's
    node, for the variables restored and the slots the optimizer has made."""
    layout = _layout(optimizer)
    node = restoration.graph.node(node_id)
    if layout is None or not node.slot_variables:
        return
    _, slots = layout
    index = {id(p): i for i, p in enumerate(optimizer._torchk_slot_params)}
    for reference in node.slot_variables:
        variable = restoration.objects.get(reference.original_variable_node_id)
        slot = slots.get((_slot_kind(optimizer, reference.slot_name),
                          index.get(id(variable))))
        if slot is not None:
            restoration.match(slot, reference.slot_variable_node_id)


def _loss_scale_children(optimizer):
    return [('inner_optimizer', optimizer.inner_optimizer),
            ('current_loss_scale', optimizer.loss_scale),
            ('good_steps', optimizer.dynamic_counter)]


def install():
    """Registers the optimizers' view in the object graph (`torchk.tf.trackable`)."""
    from ... import mixed_precision
    trackable.register_view(keras_optimizers.Optimizer, trackable.View(
        children=_children, aliases=_legacy_children,
        after_restore=restore_slot_references))
    trackable.register_view(mixed_precision.LossScaleOptimizer,
                            trackable.View(children=_loss_scale_children))
