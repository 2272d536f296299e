"""A model file's optimizer state (tf.keras' slot variables) as the weights of Keras 2.3.1's
optimizer: `OPTIMIZER_SLOTS` names tf.keras' slots of each Keras optimizer weight group.
"""
import warnings

import numpy as np

# Keras 2.3.1's optimizer weights after `iterations`: groups of one slot per trainable weight,
# with the names tf.keras gives that slot (legacy optimizers, then v2 optimizers), by the
# optimizer's configuration (torchk.keras' RMSprop adds `momentum` and `centered` slots).
_ADAM_SLOTS = (('m',), ('v',), ('vhat', 'velocity_hat'))
OPTIMIZER_SLOTS = {
    'SGD': lambda config: (('momentum', 'm'),),
    'RMSprop': lambda config: (('rms', 'velocity'),) + (
        (('momentum',),) if config.get('momentum') else ()) + (
        (('mg', 'average_gradient'),) if config.get('centered') else ()),
    'Adagrad': lambda config: (('accumulator',),),
    'Adadelta': lambda config: (('accum_grad', 'accumulated_grad'),
                                ('accum_var', 'accumulated_delta_var')),
    'Adam': lambda config: _ADAM_SLOTS,
    'AdamW': lambda config: _ADAM_SLOTS,
    'Adamax': lambda config: (('m',), ('v', 'u')),
}
_ITERATION_NAMES = ('iter', 'iteration', 'iterations')


def optimizer_state(optimizer, names, values, trainable_weights):
    """Keras 2.3.1 optimizer weights from the optimizer weights tf.keras saved.

    tf.keras names each slot `<optimizer>/<weight>/<slot>` (legacy optimizers) or
    `<optimizer>/<slot>/<weight>` (v2), in its own order; Keras 2.3.1 keeps `iterations`,
    then one list per slot kind. Slots are matched to the model's trainable weights by the
    weight's name where every name matches, else by order.

    # Returns
        The list for `optimizer.set_weights`; None when the optimizer never ran (there is
        no state); or a string saying why the state does not map.
    """
    class_name = type(optimizer).__name__
    if class_name not in OPTIMIZER_SLOTS:
        return 'Keras 2.3.1 keeps %s\'s state in another form' % class_name
    groups = OPTIMIZER_SLOTS[class_name](optimizer.get_config())
    iterations = None
    slots = {}
    for name, value in zip(names, values):
        parts = name.split(':')[0].split('/')
        if parts[-1] in _ITERATION_NAMES:
            iterations = value
            continue
        if len(parts) < 3:
            continue  # hyper-parameter variables of legacy optimizers: the config has them
        known = {s for group in groups for s in group}
        if parts[1] in known:
            slot, weight = parts[1], '/'.join(parts[2:])
        elif parts[-1] in known:
            slot, weight = parts[-1], '/'.join(parts[1:-1])
        elif parts[0] in known:  # a LossScaleOptimizerV3's inner slots (tf.keras 2.11+)
            slot, weight = parts[0], '/'.join(parts[1:])
        else:
            return 'the file has the optimizer slot %r, unknown to Keras 2.3.1\'s %s' % (
                name, class_name)
        slots.setdefault(slot, []).append((weight, value))
    if not slots and (iterations is None or not np.any(iterations)):
        return None  # compiled, never trained: a fresh optimizer is the saved one
    if iterations is None:
        return 'the file has no iteration count'
    state = [np.asarray(iterations).astype('int64')]
    for group in groups:
        saved = next((slots[s] for s in group if s in slots), None)
        if saved is None:
            if group[0] == 'vhat' and not optimizer.amsgrad:
                state.extend(np.zeros((1,), 'float32') for _ in trainable_weights)
                continue
            return 'the file has no %r slots' % group[0]
        ordered = _in_model_order(saved, trainable_weights)
        if len(ordered) != len(trainable_weights):
            return 'the file has %d %r slots for %d trainable weights' % (
                len(ordered), group[0], len(trainable_weights))
        state.extend(ordered)
    return state


# A tf.keras LossScaleOptimizer's variables (their last name part): torchk's
# `LossScaleOptimizer` attribute that takes each.
LOSS_SCALE_VARIABLES = {'current_loss_scale': 'loss_scale', 'good_steps': 'dynamic_counter'}


def restore_optimizer_state(model, names, values):
    """Sets a compiled model's optimizer state from a saved one (tf.keras slot `names`, numpy
    `values`) where it maps onto the Keras optimizer; otherwise warns that training starts
    with a fresh optimizer. A `torchk.mixed_precision.LossScaleOptimizer` (compiled under
    `mixed_float16`) gets the state into its inner optimizer, and the saved loss scale and
    count of finite steps where the file has them."""
    from .. import mixed_precision
    from keras import backend as K
    model._make_train_function()
    optimizer = model.optimizer
    if isinstance(optimizer, mixed_precision.LossScaleOptimizer):
        for name, value in zip(names, values):
            attribute = LOSS_SCALE_VARIABLES.get(name.split(':')[0].split('/')[-1])
            if attribute is not None:
                K.set_value(getattr(optimizer, attribute), value)
        optimizer = optimizer.inner_optimizer
    state = optimizer_state(optimizer, names, values, model._collected_trainable_weights)
    if state is None:
        return
    if isinstance(state, str):
        warnings.warn('The saved optimizer state was not restored (%s): the model starts '
                      'training with a fresh optimizer.' % state)
        return
    if optimizer.weights and optimizer.weights[0] is not optimizer.iterations:
        # Keras 2.2's RMSprop, Adagrad and Adadelta keep no iteration count in their weights
        K.set_value(optimizer.iterations, state[0])
        state = state[1:]
    try:
        optimizer.set_weights(state)
    except ValueError as e:
        warnings.warn('The saved optimizer state does not fit the model (%s): the model '
                      'starts training with a fresh optimizer.' % e)


def _in_model_order(saved, trainable_weights):
    by_name = dict(saved)
    names = [w.name.split(':')[0] for w in trainable_weights]
    if len(by_name) == len(saved) and set(by_name) == set(names):
        return [by_name[n] for n in names]
    return [value for _, value in saved]
