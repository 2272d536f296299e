"""The ops of dynamic loss scaling (`mixed_precision.LossScaleOptimizer`), on the device.

A loss-scaled step divides the gradients by the scale, skips the update when one of them holds
an inf or a NaN, and moves the scale. Each is a graph op here whose overflow flag stays a
device tensor, as torch's `GradScaler` keeps it: the step never reads it back.
- `unscale_gradients`: one `torch._amp_foreach_non_finite_check_and_unscale_` pass over all
  the gradients, which divides them by the scale and sets the flag;
- `unless_overflow`: an update's new value, or the variable's current value on overflow
  (`torch.where` on the flag; the Adam fusion pass hands the flag to `torch._fused_adam_`
  instead, which then skips the whole update itself);
- `next_loss_scale`: tf.keras' rule for the scale and its counter of finite steps
  (`torch._amp_update_scale_`, one kernel).
"""
import torch

from .graph import inferring, op


@op
def unscale_gradients(loss_scale, gradients):
    """Divides `gradients` by `loss_scale` and flags any non-finite value.

    The gradients are the fresh results of the step's `K.gradients`, which only this op
    reads: they are divided in place.

    # Arguments
        loss_scale: 0-d float32 tensor.
        gradients: list of floating tensors.

    # Returns
        `(overflow, *unscaled gradients)`: `overflow` is a 0-d float32 tensor, 1 if a
        gradient holds an inf or a NaN, else 0.
    """
    gradients = list(gradients)
    overflow = torch.zeros((), dtype=torch.float32, device=loss_scale.device)
    if inferring():
        return (overflow, *gradients)
    inverse = torch.reciprocal(loss_scale.to(torch.float32))
    by_device = {}
    for gradient in gradients:
        by_device.setdefault(gradient.device, []).append(gradient)
    for device, group in by_device.items():
        found = overflow if device == overflow.device else torch.zeros_like(overflow,
                                                                           device=device)
        torch._amp_foreach_non_finite_check_and_unscale_(group, found, inverse.to(device))
        if found is not overflow:
            overflow = torch.maximum(overflow, found.to(overflow.device))
    return (overflow, *gradients)


@op
def unless_overflow(overflow, value, variable):
    """`value`, or `variable` where `overflow` (from `unscale_gradients`) is set."""
    return torch.where(overflow.to(torch.bool), variable, value)


@op
def next_loss_scale(overflow, loss_scale, counter, growth_steps):
    """tf.keras' dynamic loss scale after a step, by torch's `_amp_update_scale_`.

    A finite step counts one more; after `growth_steps` of them in a row the scale doubles
    (if the double is finite) and the count restarts. A step that overflowed halves the
    scale (never below 1) and restarts the count.

    # Returns
        `(new scale, new count)`, of the dtypes of `loss_scale` and `counter`.
    """
    scale = loss_scale.to(torch.float32, copy=True)
    count = counter.to(torch.int32, copy=True)
    if not inferring():
        torch._amp_update_scale_(scale, count, overflow, 2., 0.5, int(growth_steps))
        scale.clamp_(min=1.)
    return scale.to(loss_scale.dtype), count.to(counter.dtype)
