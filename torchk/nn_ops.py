"""Activations, losses and normalization: the Keras 2 `nn` ops over torch tensors.

Each op takes torch tensors, numpy arrays or Python numbers and returns torch tensors; `@op`
makes it record lazily when an argument is a Keras placeholder or variable. Semantics follow
Keras 2.3.1 on TensorFlow (`keras/backend/tensorflow_backend.py`); where TF and the Theano or
numpy backends differ, the docstring says which one is followed.
"""
import functools
import inspect
import math
import numbers

import numpy as np
import torch
import torch.nn.functional as F

from . import config, dtypes, graph, validation
from .graph import op, target_device
from .math_ops import _axes, _axis

__all__ = [
    'relu', 'elu', 'softmax', 'softplus', 'softsign', 'sigmoid', 'hard_sigmoid', 'tanh',
    'categorical_crossentropy', 'sparse_categorical_crossentropy', 'binary_crossentropy',
    'l2_normalize', 'in_top_k', 'batch_normalization', 'normalize_batch_in_training',
]

# tf.nn.l2_normalize's own default epsilon, which Keras' TF backend keeps (it passes none).
_L2_EPSILON = 1e-12


def _tensor(x, name, like=None):
    """Returns `x` as a torch tensor.

    Tensors pass through. numpy arrays and numpy scalars keep their dtype; Python numbers and
    lists become tensors of numpy's dtype for them, except that floats take floatx. New
    tensors go on `like`'s device, else on the target device.

    # Raises
        TypeError: if `x` holds no numbers.
    """
    if isinstance(x, torch.Tensor):
        return x
    from_numpy = isinstance(x, (np.ndarray, np.generic))
    array = x if from_numpy else np.asarray(x)
    if array.dtype.kind not in 'biuf':
        raise TypeError('`%s` must be a tensor, a numpy array or a number, got %r.' % (name, x))
    dtype = None
    if not from_numpy and array.dtype == np.float64:
        dtype = dtypes.to_torch(config.floatx())
    device = like.device if like is not None else target_device()
    return dtypes.as_tensor(array, dtype=dtype, device=device)


def _scalar(value, name):
    """Returns a hyperparameter given as a Python number or a 0-d numpy array as a float."""
    if isinstance(value, numbers.Real) or (isinstance(value, (np.ndarray, np.generic))
                                           and value.ndim == 0 and value.dtype.kind in 'biuf'):
        return float(value)
    raise TypeError('`%s` must be a Python number or a 0-d numpy array, got %r.' % (name, value))


def _same_shape(target, output):
    """Raises ValueError unless `target` and `output` have one shape, as TF requires."""
    if target.shape != output.shape:
        raise ValueError('`target` and `output` must have the same shape, got %s and %s.'
                         % (tuple(target.shape), tuple(output.shape)))


@op
def relu(x, alpha=0., max_value=None, threshold=0.):
    """Rectified linear unit.

    With default values, it returns element-wise `max(x, 0)`. Otherwise, as in TF,
    `f(x) = p - alpha * max(threshold - x, 0)` where `p` is `x` for `x > threshold`, else 0,
    then clipped to `[0, max_value]` when `max_value` is given. That is `max_value` for
    `x >= max_value`, `x` for `threshold < x < max_value` and `alpha * (x - threshold)` for
    `x <= threshold`; without `max_value`, a negative `threshold` lets `threshold < x < 0`
    through unchanged (the numpy backend clips it to 0). Gradients are TF's: with
    `max_value=6` and no threshold (TF's `relu6`) they pass where `0 < x < 6`, with another
    `max_value` where `threshold < x <= max_value`.

    # Arguments
        x: A tensor or variable.
        alpha: A scalar (number or 0-d array), slope of the negative section (default `0.`).
        max_value: A scalar or None. Saturation threshold.
        threshold: A scalar. Threshold value for the thresholded activation.

    # Returns
        A tensor of the shape and dtype of `x`.

    # Raises
        TypeError: if `alpha`, `max_value` or `threshold` is not a scalar.
    """
    x = _tensor(x, 'x')
    alpha = _scalar(alpha, 'alpha')
    threshold = _scalar(threshold, 'threshold')
    if max_value is not None:
        max_value = _scalar(max_value, 'max_value')
    if threshold == 0. and max_value is None:
        return torch.relu(x) if alpha == 0. else F.leaky_relu(x, alpha)
    if threshold == 0. and max_value == 6. and x.is_floating_point():
        # TF's relu6, whose gradient passes where 0 < x < 6: hardtanh's fused backward.
        positive = F.hardtanh(x, 0., 6.)
    else:
        # TF's relu then clip_by_value: the gradient passes where 0 < x <= max_value.
        positive = torch.relu(x) if threshold == 0. else torch.where(x > threshold, x, 0.)
        if max_value is not None:
            positive = torch.clamp(positive, 0., max_value)
    if alpha == 0.:
        return positive
    return positive - alpha * torch.relu(threshold - x)


@op
def elu(x, alpha=1.):
    """Exponential linear unit: `x` for `x > 0`, else `alpha * (exp(x) - 1)`.

    # Arguments
        x: A tensor or variable to compute the activation function for.
        alpha: A scalar (number or 0-d array), slope of the negative section.

    # Returns
        A tensor of the shape and dtype of `x`.

    # Raises
        TypeError: if `alpha` is not a scalar.
    """
    x = _tensor(x, 'x')
    alpha = _scalar(alpha, 'alpha')
    # TF's arithmetic, for the same float32 results: `exp(x) - 1` (not expm1), then `alpha *`
    # as a separate rounding step (Keras' `selu` multiplies by `scale` after that).
    # The clamp keeps exp finite where it is not used, so that gradients there stay 0.
    res = torch.where(x > 0, x, torch.exp(torch.clamp(x, max=0)) - 1)
    return res if alpha == 1 else torch.where(x > 0, res, alpha * res)


@op
def softmax(x, axis=-1):
    """Softmax of a tensor.

    # Arguments
        x: A tensor or variable.
        axis: The dimension softmax would be performed on.
            The default is -1 which indicates the last dimension.

    # Returns
        A tensor of the shape and dtype of `x`.

    # Raises
        TypeError, ValueError: if `axis` is not an axis of `x`.
    """
    x = _tensor(x, 'x')
    return torch.softmax(x, _axis(axis, x.ndim))


@op
def softplus(x):
    """Softplus of a tensor: `log(1 + exp(x))`.

    Computed as TF does, for the same results: `x` above a threshold (`-log(eps) - 2` of the
    dtype), `exp(x)` below its negative, else `log(exp(x) + 1)`.

    # Arguments
        x: A tensor or variable.

    # Returns
        A tensor.
    """
    x = _tensor(x, 'x')
    threshold = math.log(torch.finfo(x.dtype).eps) + 2.
    exp = torch.exp(torch.clamp(x, max=-threshold))
    return torch.where(x > -threshold, x, torch.where(x < threshold, exp, torch.log(exp + 1)))


@op
def softsign(x):
    """Softsign of a tensor: `x / (1 + |x|)`.

    # Arguments
        x: A tensor or variable.

    # Returns
        A tensor.
    """
    return F.softsign(_tensor(x, 'x'))


@op
def sigmoid(x):
    """Element-wise sigmoid.

    # Arguments
        x: A tensor or variable.

    # Returns
        A tensor.
    """
    return torch.sigmoid(_tensor(x, 'x'))


@op
def hard_sigmoid(x):
    """Segment-wise linear approximation of sigmoid.

    Faster than sigmoid. Returns `0.` if `x < -2.5`, `1.` if `x > 2.5`, and `0.2 * x + 0.5`
    in between (torch's `hardsigmoid` has slope 1/6 instead).

    # Arguments
        x: A tensor or variable.

    # Returns
        A tensor.
    """
    return torch.clamp(_tensor(x, 'x') * 0.2 + 0.5, 0., 1.)


@op
def tanh(x):
    """Element-wise tanh.

    # Arguments
        x: A tensor or variable.

    # Returns
        A tensor.
    """
    return torch.tanh(_tensor(x, 'x'))


def _logits_of(output, activation, axis=None):
    """The input of `activation` when `output` is its recorded result (over `axis`, for a
    softmax), else None."""
    node = output.node if isinstance(output, graph.KerasTensor) else None
    if node is None or output.path != () or node.fn is not activation.__wrapped__:
        return None
    if axis is not None:
        bound = dict(zip(('x', 'axis'), node.args), **node.kwargs)
        ndim = output.ndim
        if ndim is None or not isinstance(axis, int) or not isinstance(bound.get('axis', -1), int):
            return None
        if axis % ndim != bound.get('axis', -1) % ndim:
            return None
    return node.args[0] if node.args else node.kwargs['x']


def _from_logits_of(activation):
    """tf.keras' rule for a loss of probabilities (`from_logits=False`) recorded on the
    result of `activation` (a `softmax` over the loss' axis, a `sigmoid`): the loss is
    computed from the activation's input, as logits, unclipped (tf.keras' backend reads
    `output.op.inputs[0]` when `output.op.type` is `'Softmax'` or `'Sigmoid'`; Keras
    2.3.1's TF backend delegates to it). It is one log-softmax (or one
    `binary_cross_entropy_with_logits`) kernel forward and backward, where the clipped
    formula takes six; results differ from it only where a probability is within
    `epsilon` of 0 or 1. Eager tensors keep the formula of probabilities, as in TF."""
    def decorate(loss_op):
        names = tuple(inspect.signature(loss_op).parameters)

        @functools.wraps(loss_op)
        def loss(*args, **kwargs):
            bound = dict(zip(names, args), **kwargs)
            if not bound.get('from_logits', False):
                axis = bound.get('axis', -1) if 'axis' in names else None
                logits = _logits_of(bound['output'], activation, axis)
                if logits is not None:
                    bound.update(output=logits, from_logits=True)
                    return loss_op(**bound)
            return loss_op(*args, **kwargs)
        return loss
    return decorate


@_from_logits_of(softmax)
@op
def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Categorical crossentropy between an output tensor and a target tensor.

    Probabilities are first scaled to sum to 1 over `axis`, then clipped to
    `[epsilon, 1 - epsilon]` (as the Theano and numpy backends and TF on a non-softmax output
    do). Logits go through an exact log-softmax, unclipped, as in TF.

    # Arguments
        target: A tensor of the same shape as `output`.
        output: A tensor resulting from a softmax
            (unless `from_logits` is True, in which
            case `output` is expected to be the logits).
        from_logits: Boolean, whether `output` is the
            result of a softmax, or is a tensor of logits.
        axis: Int specifying the channels axis. `axis=-1`
            corresponds to data format `channels_last`,
            and `axis=1` corresponds to data format
            `channels_first`.

    # Returns
        The loss, of the shape of `output` without `axis`, in `output`'s dtype.

    # Raises
        ValueError: if `axis` is not an axis of `output`, or if `target` and `output`
            have different shapes.
    """
    output = _tensor(output, 'output')
    target = _tensor(target, 'target', like=output).to(output.dtype)
    _same_shape(target, output)
    axis = _axis(axis, output.ndim)
    if from_logits:
        return -torch.sum(target * torch.log_softmax(output, axis), axis)
    output = output / torch.sum(output, axis, keepdim=True)
    epsilon = config.epsilon()
    output = torch.clamp(output, epsilon, 1. - epsilon)
    return -torch.sum(target * torch.log(output), axis)


@_from_logits_of(softmax)
@op
def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Categorical crossentropy with integer targets.

    As in TF, probabilities are clipped to `[epsilon, 1 - epsilon]` and their log is taken as
    logits (which renormalizes them over `axis`). The targets are flattened and cast to
    int64, so `(batch, 1)` float targets work.

    # Arguments
        target: An integer (or integer-valued float) tensor holding one class index per
            prediction: shape `output.shape` without `axis`, or any shape with that many
            elements, such as `(batch, 1)`.
        output: A tensor resulting from a softmax
            (unless `from_logits` is True, in which
            case `output` is expected to be the logits).
        from_logits: Boolean, whether `output` is the
            result of a softmax, or is a tensor of logits.
        axis: Int specifying the channels axis. `axis=-1`
            corresponds to data format `channels_last`,
            and `axis=1` corresponds to data format
            `channels_first`.

    # Returns
        The loss, of the shape of `output` without `axis`, in `output`'s dtype.

    # Raises
        ValueError: if `axis` is not an axis of `output`, if `target` does not hold one
            class index per prediction, or (CPU) holds one outside `[0, classes)`.
    """
    output = _tensor(output, 'output')
    target = _tensor(target, 'target', like=output)
    axis = _axis(axis, output.ndim)
    if not from_logits:
        epsilon = config.epsilon()
        output = torch.log(torch.clamp(output, epsilon, 1. - epsilon))
    logits = torch.movedim(output, axis, -1)
    batch_shape = logits.shape[:-1]
    if target.numel() != batch_shape.numel():
        raise ValueError('`target` of shape %s must hold one class index per prediction: '
                         '%d values for `output` of shape %s with classes on axis %d.'
                         % (tuple(target.shape), batch_shape.numel(), tuple(output.shape), axis))
    labels = target.reshape(-1).to(torch.int64)
    validation.check_index_range('sparse_categorical_crossentropy', 'target', labels,
                                 logits.shape[-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels, reduction='none')
    return loss.reshape(batch_shape)


@_from_logits_of(sigmoid)
@op
def binary_crossentropy(target, output, from_logits=False):
    """Binary crossentropy between an output tensor and a target tensor.

    Probabilities are clipped to `[epsilon, 1 - epsilon]`, then
    `-(target * log(output) + (1 - target) * log(1 - output))`, which is TF's
    `sigmoid_cross_entropy_with_logits` of `log(output / (1 - output))` computed directly.
    Logits use the stable `max(z, 0) - z * target + log(1 + exp(-|z|))`, unclipped.

    # Arguments
        target: A tensor with the same shape as `output`.
        output: A tensor.
        from_logits: Whether `output` is expected to be a logits tensor.
            By default, we consider that `output`
            encodes a probability distribution.

    # Returns
        A tensor of the shape and dtype of `output`.

    # Raises
        ValueError: if `target` and `output` have different shapes.
    """
    output = _tensor(output, 'output')
    target = _tensor(target, 'target', like=output).to(output.dtype)
    _same_shape(target, output)
    if from_logits:
        return F.binary_cross_entropy_with_logits(output, target, reduction='none')
    epsilon = config.epsilon()
    output = torch.clamp(output, epsilon, 1. - epsilon)
    return -(target * torch.log(output) + (1. - target) * torch.log1p(-output))


@op
def l2_normalize(x, axis=None):
    """Normalizes a tensor wrt the L2 norm alongside the specified axis.

    Returns `x / sqrt(max(sum(x ** 2, axis), 1e-12))`: like TF, whose `l2_normalize` uses its
    own epsilon of 1e-12 rather than `K.epsilon()` (which Theano uses).

    # Arguments
        x: Tensor or variable.
        axis: axis along which to perform normalization: an int, a list or tuple of ints,
            or None for all axes.

    # Returns
        A tensor of the shape and dtype of `x`.

    # Raises
        TypeError, ValueError: if `axis` names no axis of `x`, or one twice.
    """
    x = _tensor(x, 'x')
    dims = tuple(range(x.ndim)) if axis is None else _axes(axis, x.ndim, 'axis')
    square_sum = torch.sum(x * x, dim=dims, keepdim=True)
    return x * torch.rsqrt(torch.clamp_min(square_sum, _L2_EPSILON))


@op
def in_top_k(predictions, targets, k):
    """Returns whether the `targets` are in the top `k` `predictions`.

    As in TF, ties count in the target's favour: `output[i]` is True when fewer than `k`
    classes have a prediction strictly greater than `predictions[i, targets[i]]`. A target
    out of range, or a row holding a non-finite prediction, gives False.

    # Arguments
        predictions: A tensor of shape `(batch_size, classes)` and type `float32`.
        targets: A 1D tensor of length `batch_size` and type `int32` or `int64`.
        k: An `int`, number of top elements to consider.

    # Returns
        A 1D tensor of length `batch_size` and type `bool`.
        `output[i]` is `True` if `predictions[i, targets[i]]` is within top-`k`
        values of `predictions[i]`.

    # Raises
        TypeError: if `k` is not an int.
        ValueError: if the shapes are not `(batch_size, classes)` and `(batch_size,)`.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError('`k` must be an int, got %r.' % (k,))
    predictions = _tensor(predictions, 'predictions')
    targets = _tensor(targets, 'targets', like=predictions)
    if predictions.ndim != 2:
        raise ValueError('`predictions` must have shape (batch_size, classes), got %s.'
                         % (tuple(predictions.shape),))
    if targets.shape != predictions.shape[:1]:
        raise ValueError('`targets` must have shape (%d,) to match `predictions` of shape %s, '
                         'got %s.' % (predictions.shape[0], tuple(predictions.shape),
                                      tuple(targets.shape)))
    classes = predictions.shape[1]
    targets = targets.to(torch.int64)
    in_range = (targets >= 0) & (targets < classes)
    target_predictions = torch.gather(predictions, 1, targets.clamp(0, classes - 1)[:, None])
    greater = torch.sum(predictions > target_predictions, dim=1)
    return in_range & torch.isfinite(predictions).all(dim=1) & (greater < k)


def _parameter(value, name, x, axis):
    """Returns a batch-norm statistic or parameter as a tensor that broadcasts against `x`.

    A 1-D value is laid along `axis` (as TF's fused kernel does for 4-D inputs); any other
    value broadcasts as it is.
    """
    value = _tensor(value, name, like=x)
    if value.ndim == 1 and x.ndim > 1:
        shape = [1] * x.ndim
        shape[axis] = value.shape[0]
        if value.shape[0] != x.shape[axis]:
            raise ValueError('`%s` has %d entries but axis %d of `x` (shape %s) has %d.'
                             % (name, value.shape[0], axis, tuple(x.shape), x.shape[axis]))
        return value.reshape(shape)
    try:
        fits = torch.broadcast_shapes(value.shape, x.shape) == x.shape
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError('`%s` of shape %s does not broadcast to `x` of shape %s.'
                         % (name, tuple(value.shape), tuple(x.shape)))
    return value


def _normalize(x, mean, var, beta, gamma, epsilon):
    """`(x - mean) / sqrt(var + epsilon) * gamma + beta`, skipping a None gamma or beta."""
    scale = torch.rsqrt(var + epsilon)
    if gamma is not None:
        scale = scale * gamma
    normed = (x - mean) * scale
    return normed if beta is None else normed + beta


def _channels_second(x, kept):
    """Lays `x` out as torch's batch-norm kernels take it: `(batch, channels, ...)`, statistics
    per channel over the other axes, with `kept` (the axes not reduced) as the channels.

    Returns the laid-out tensor and a function that takes a result of its shape back to the
    shape of `x`. No copy is made for the layouts Keras uses: channels first (axis 1) as it
    is; a 4-D or 5-D `x` with channels last as a channels-first view (torch's channels_last
    NCHW or NCDHW for a contiguous `x`), which the CPU kernels handle natively; other trailing
    channels as a 2-D view `(rest, channels)`; a contiguous block of kept axes as
    `(before, kept, after)`.
    """
    ndim = x.ndim
    if kept == [1]:
        return x, lambda y: y
    if kept == [ndim - 1] and ndim in (4, 5):
        moved = x.movedim(-1, 1)
        if x.is_contiguous() or moved.is_contiguous():
            return moved, lambda y: y.movedim(1, -1)
    shape = x.shape
    if kept == list(range(kept[0], kept[-1] + 1)):
        before, after = math.prod(shape[:kept[0]]), math.prod(shape[kept[-1] + 1:])
        channels = math.prod(shape[kept[0]:kept[-1] + 1])
        laid = x.reshape((before, channels) if after == 1 else (before, channels, after))
        return laid, lambda y: y.reshape(shape)
    order = [i for i in range(ndim) if i not in kept] + kept
    moved = x.permute(order)
    laid = moved.reshape(-1, math.prod(shape[i] for i in kept))
    inverse = [order.index(i) for i in range(ndim)]
    return laid, lambda y: y.reshape(moved.shape).permute(inverse)


def statistics_dtype(x_dtype, given):
    """The dtype of the statistics and parameters torch's batch-norm kernels take with an
    input of `x_dtype`: float32 for a float16 or bfloat16 input given only float32 ones
    (`given`: their dtypes; a mixed precision layer's variables: the kernels compute in
    float32 and return the input's dtype), else `x_dtype`."""
    given = list(given)
    if x_dtype in dtypes.HALF_PRECISION and given and all(d == torch.float32 for d in given):
        return torch.float32
    return x_dtype


def _statistics_dtype(x, values):
    """`statistics_dtype` for the tensor `x` and the tensors `values` (None where absent)."""
    return statistics_dtype(x.dtype, [v.dtype for v in values if v is not None])


def _channel_vector(value, x, axis, dtype):
    """`value` as a 1-D tensor of the channels on `axis`, if it holds exactly one value per
    channel laid along `axis` (1-D, or shaped `(1, .., channels, .., 1)`) of `dtype`; else
    None."""
    channels = x.shape[axis]
    if (value.dtype != dtype or value.numel() != channels
            or (value.ndim != 1 and (value.ndim != x.ndim or value.shape[axis] != channels))):
        return None
    return value.reshape(channels)


@op
def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):
    """Applies batch normalization on x given mean, var, beta and gamma.

    I.e. returns:
    `output = (x - mean) / sqrt(var + epsilon) * gamma + beta`

    Per-channel statistics and parameters run as one fused kernel (torch's batch norm over
    fixed statistics), unless gradients must flow to `mean` or `var`; others broadcast
    element-wise.

    # Arguments
        x: Input tensor or variable.
        mean: Mean of batch.
        var: Variance of batch.
        beta: Tensor with which to center the input, or None.
        gamma: Tensor by which to scale the input, or None.
        axis: Integer, the axis that should be normalized.
            (typically the features axis). 1-D `mean`, `var`, `beta` and `gamma` are laid
            along it; others must broadcast against `x` as they are.
        epsilon: Fuzz factor.

    # Returns
        A tensor of the shape of `x`.

    # Raises
        ValueError: if `axis` is not an axis of `x`, or a statistic or parameter does not
            fit `x`.
    """
    x = _tensor(x, 'x')
    axis = _axis(axis, x.ndim)
    mean = _parameter(mean, 'mean', x, axis)
    var = _parameter(var, 'var', x, axis)
    beta = None if beta is None else _parameter(beta, 'beta', x, axis)
    gamma = None if gamma is None else _parameter(gamma, 'gamma', x, axis)
    statistics = (mean, var, beta, gamma)
    dtype = _statistics_dtype(x, statistics)
    if x.ndim > 1 and not (torch.is_grad_enabled() and (_differentiated(mean)
                                                        or _differentiated(var))):
        vectors = [None if v is None else _channel_vector(v, x, axis, dtype)
                   for v in statistics]
        if all(v is not None for v, given in zip(vectors, statistics) if given is not None):
            laid, restore = _channels_second(x, [axis])
            mean, var, beta, gamma = vectors
            return restore(torch.batch_norm(laid, gamma, beta, mean, var, False, 0., epsilon,
                                            False))
    normed = _normalize(x, mean, var, beta, gamma, epsilon)
    return normed if dtype == x.dtype else normed.to(x.dtype)  # as the kernel returns it


def _differentiated(tensor):
    """Whether a gradient may be taken with respect to `tensor`: it requires grad, or
    `torch.func` (grad, vmap) wraps it, whose wrappers hide that from `requires_grad`."""
    return tensor.requires_grad or torch._C._functorch.is_functorch_wrapped_tensor(tensor)


class _BatchMoments(torch.autograd.Function):
    """The per-channel mean and biased variance of `x` (batch, channels, ...), given as the
    batch-norm kernel computed them; the backward is their formulas'."""

    @staticmethod
    def forward(ctx, x, mean, var):
        ctx.save_for_backward(x)
        return mean.clone(), var.clone()

    @staticmethod
    def backward(ctx, grad_mean, grad_var):
        x, = ctx.saved_tensors
        count = x.numel() // x.shape[1]
        shape = (1, -1) + (1,) * (x.ndim - 2)
        centered = x - torch.mean(x, [0] + list(range(2, x.ndim)), keepdim=True)
        return ((grad_mean.reshape(shape) + 2. * centered * grad_var.reshape(shape)) / count,
                None, None)


# torch's channels-last batch-norm training kernels on CPUs vectorize over the channels; with
# fewer than 16 they run 4-7x slower than on a channels-first copy (MobileNetV2's 8-channel
# layers: 5.7 ms against 0.85 ms forward and backward), which then pays for the copies.
_CHANNELS_LAST_MIN_CHANNELS = 16


def _then_contiguous(restore):
    return lambda y: restore(y).contiguous()


@op
def normalize_batch_in_training(x, gamma, beta, reduction_axes, epsilon=1e-3):
    """Computes mean and std for batch then apply batch_normalization on batch.

    One pass of torch's native batch-norm kernel computes the statistics and the normalized
    tensor; its backward is torch's too.

    # Arguments
        x: Input tensor or variable.
        gamma: Tensor by which to scale the input, or None. It holds one value per
            position of the axes that are not reduced (e.g. shape `(channels,)`).
        beta: Tensor with which to center the input, or None; shaped like `gamma`.
        reduction_axes: iterable of integers,
            axes over which to normalize.
        epsilon: Fuzz factor.

    # Returns
        A tuple length of 3, `(normalized_tensor, mean, variance)`. `mean` and `variance`
        have the shape of `x` without `reduction_axes`. `variance` is the population
        variance, except for 4-D inputs reduced over axes `[0, 1, 2]`: there, as TF's fused
        kernel does, the sample variance (`n / (n - 1)` times it); the normalization always
        uses the population variance.

    # Raises
        ValueError: if `reduction_axes` is empty or names an axis `x` lacks, or if `gamma`
            or `beta` does not hold one value per position of the other axes.
    """
    x = _tensor(x, 'x')
    laid, restore, parameters, stats_shape, axes = _batch_norm_layout(x, gamma, beta,
                                                                      reduction_axes)
    channels = math.prod(stats_shape)
    # The kernel writes the batch mean and the unbiased variance into running statistics
    # given a momentum of 1; the zeros keep `0 * running` from reading garbage.
    # The backward reads them, so the biased variance is a new tensor.
    dtype = _statistics_dtype(x, parameters)
    mean = torch.zeros(channels, dtype=dtype, device=x.device)
    unbiased = torch.zeros(channels, dtype=dtype, device=x.device)
    normed = torch.batch_norm(laid, parameters[0], parameters[1], mean, unbiased, True, 1.,
                              epsilon, False)
    count = laid.numel() // max(channels, 1)
    var = unbiased * ((count - 1) / count) if count > 1 else torch.zeros_like(unbiased)
    mean, var = _BatchMoments.apply(laid, mean, var)
    if x.ndim == 4 and sorted(axes) == [0, 1, 2]:
        # TF's fused kernel, which channels_last images take, returns the sample variance.
        var = var * (count / max(count - 1, 1))
    return restore(normed), mean.reshape(stats_shape), var.reshape(stats_shape)


def _batch_norm_layout(x, gamma, beta, reduction_axes):
    """What torch's batch-norm kernel takes for `normalize_batch_in_training`'s arguments.

    Returns `(laid, restore, parameters, stats_shape, axes)`: `x` laid out as
    `(batch, channels, ...)` (`_channels_second`), the function taking a result back to the
    layout of `x`, `[gamma, beta]` as 1-D tensors (None where absent) of `x`'s dtype, or
    float32 for a float16 or bfloat16 `x` given float32 ones (`_statistics_dtype`), the
    statistics' shape, and the reduction axes.

    # Raises
        ValueError: as `normalize_batch_in_training`.
    """
    axes = _axes(reduction_axes, x.ndim, 'reduction_axes')
    if not axes:
        raise ValueError('`reduction_axes` must name at least one axis of `x`.')
    kept = [i for i in range(x.ndim) if i not in axes]
    stats_shape = tuple(x.shape[i] for i in kept)
    channels = math.prod(stats_shape)
    parameters = []
    for value, name in ((gamma, 'gamma'), (beta, 'beta')):
        if value is not None:
            value = _tensor(value, name, like=x)
            if value.numel() != channels:
                raise ValueError('`%s` of shape %s must hold %d values, one per position of '
                                 'the axes of `x` (shape %s) outside reduction_axes %s.'
                                 % (name, tuple(value.shape), channels, tuple(x.shape),
                                    axes))
            if value.shape != (channels,):
                value = value.reshape(channels)
        parameters.append(value)
    dtype = _statistics_dtype(x, parameters)
    parameters = [None if p is None else p.to(dtype) for p in parameters]
    if not kept:
        laid, restore = x.reshape(1, 1, -1), lambda y: y.reshape(x.shape)
    else:
        laid, restore = _channels_second(x, kept)
        if (laid.device.type == 'cpu' and channels < _CHANNELS_LAST_MIN_CHANNELS
                and not laid.is_contiguous()):
            laid, restore = laid.contiguous(), _then_contiguous(restore)
    if laid.is_cuda and parameters[0] is None and parameters[1] is not None:
        # cuDNN's backward without a scale returns an empty gradient for the offset
        # (BatchNormalization(scale=False), InceptionV3's): a scale of ones is the same op.
        parameters[0] = torch.ones(channels, dtype=dtype, device=x.device)
    return laid, restore, parameters, stats_shape, axes


def normalize_batch_with_moving_statistics(x, gamma, beta, moving_mean, moving_variance,
                                           reduction_axes, momentum, epsilon=1e-3):
    """`normalize_batch_in_training`'s normalized tensor, whose batch statistics also move
    the moving statistics, in place, in the same pass of torch's batch-norm kernel
    (`passes/batch_norm_fusion.py` runs Keras' `BatchNormalization` training step with it).

    `moving <- moving * (1 - momentum) + batch * momentum`, with the batch mean, and the
    batch variance corrected by Bessel's `n / (n - 1)` (`n`: the values per channel), as
    torch and tf.keras 2 do. With fewer than 2 values per channel the variance moves
    towards 0 (Keras' correction of a zero variance), where torch's kernel divides by 0.

    # Arguments
        x, gamma, beta, reduction_axes, epsilon: as for `normalize_batch_in_training`.
        moving_mean, moving_variance: contiguous tensors of the parameters' dtype
            (`_batch_norm_layout`) holding one value per position of the axes not reduced;
            written in place.
        momentum: the weight of the batch statistics (torch's momentum: 1 - Keras').

    # Returns
        The normalized tensor, of the shape of `x`.

    # Raises
        ValueError: as `normalize_batch_in_training`.
    """
    x = _tensor(x, 'x')
    laid, restore, parameters, stats_shape, _ = _batch_norm_layout(x, gamma, beta,
                                                                   reduction_axes)
    channels = math.prod(stats_shape)
    running = [value.detach() for value in (moving_mean, moving_variance)]
    running = [value if value.shape == (channels,) else value.view(channels)
               for value in running]
    if laid.numel() >= 2 * channels:
        return restore(torch.batch_norm(laid, *parameters, *running, True, momentum, epsilon,
                                        False))
    normed = torch.batch_norm(laid, *parameters, None, None, True, 0., epsilon, False)
    with torch.no_grad():
        mean = laid.detach().transpose(0, 1).reshape(channels, -1).mean(1)
        running[0].lerp_(mean, momentum)
        running[1].mul_(1. - momentum)
    return restore(normed)
