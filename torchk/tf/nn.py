"""`tf.nn`: the op table's ops TF exports under `tf.nn` (see `torchk.op_table`), and the
loss scaling of custom training loops under a `tf.distribute` strategy."""
import torch

from .namespaces import module_getattr, ops_under
from .tensors import convert_to_tensor

_OPS = ops_under('nn')
globals().update(_OPS)


def _replicas(name):
    from . import distribute
    if distribute.has_strategy() and distribute.in_cross_replica_context():
        raise RuntimeError('tf.nn.%s is called in the cross-replica context (inside '
                           'strategy.scope() but not strategy.run); call it in the function '
                           'that strategy.run runs.' % name)
    return distribute.get_strategy().num_replicas_in_sync


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """The sum of a replica's per-example losses divided by the global batch size: summed
    over the replicas (as `apply_gradients` sums gradients under a strategy), the mean loss
    of the global batch.

    # Arguments
        per_example_loss: the losses of this replica's examples (at least one axis).
        sample_weight: optional weights multiplying them (broadcast).
        global_batch_size: the examples of all replicas in the step (default: this
            replica's batch times `num_replicas_in_sync`).

    # Returns
        A scalar tensor.

    # Raises
        ValueError: for a scalar `per_example_loss` or a `global_batch_size` that is not a
            positive integer.
    """
    losses = convert_to_tensor(per_example_loss)
    if losses.ndim == 0:
        raise ValueError('compute_average_loss: per_example_loss must have a batch axis (one '
                         'loss per example); got a scalar.')
    dtype = losses.dtype
    if sample_weight is not None:
        losses = (losses * convert_to_tensor(sample_weight)).to(dtype)
    if global_batch_size is None:
        global_batch_size = losses.shape[0] * _replicas('compute_average_loss')
    if isinstance(global_batch_size, torch.Tensor):
        global_batch_size = global_batch_size.item()
    if isinstance(global_batch_size, bool) or int(global_batch_size) != global_batch_size \
            or global_batch_size <= 0:
        raise ValueError('compute_average_loss: global_batch_size must be a positive integer; '
                         'got %r.' % (global_batch_size,))
    return losses.sum() / global_batch_size


def scale_regularization_loss(regularization_loss):
    """A replica's share of a regularization loss (a tensor, or a list such as
    `model.losses`): its sum divided by `num_replicas_in_sync`, so that summed over the
    replicas it counts once."""
    if isinstance(regularization_loss, (list, tuple)):
        total = sum((convert_to_tensor(loss).sum() for loss in regularization_loss),
                    convert_to_tensor(0.))
    else:
        total = convert_to_tensor(regularization_loss).sum()
    return total / _replicas('scale_regularization_loss')


__all__ = sorted(list(_OPS) + ['compute_average_loss', 'scale_regularization_loss'])
__getattr__ = module_getattr('tf.nn')
