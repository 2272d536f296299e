"""Losses of tf.keras 2 that Keras 2.3.1 lacks: the focal cross-entropies (Lin et al., 2017)
and the `CosineSimilarity` class, with tf.keras' configuration keys and numbers.

`register` makes them (with `huber`, and tf.keras' other names of Keras 2.3.1's loss
functions: `kl_divergence`, `log_cosh`) names of `keras.losses`, where `compile` and saved training
configurations find them; its override (`torchk.overrides`) calls it when `keras.losses` is
imported.
"""
from keras import backend as K
from keras import losses as keras_losses
from keras.utils import losses_utils

__all__ = ['BinaryFocalCrossentropy', 'CategoricalFocalCrossentropy', 'CosineSimilarity',
           'binary_focal_crossentropy', 'categorical_focal_crossentropy', 'huber']
# tf.keras' names of Keras 2.3.1's functions.
ALIASES = {'kl_divergence': 'kullback_leibler_divergence', 'log_cosh': 'logcosh'}


def binary_focal_crossentropy_elements(target, output, apply_class_balancing=False,
                                       alpha=0.25, gamma=2.0, from_logits=False):
    """Element-wise focal binary cross-entropy: the cross-entropy times `(1 - p_t) **
    gamma`, `p_t` the probability given to the true label; with class balancing, times
    `alpha` for positives and `1 - alpha` for negatives (tf.keras'
    `backend.binary_focal_crossentropy`)."""
    probabilities = K.sigmoid(output) if from_logits else output
    p_t = target * probabilities + (1 - target) * (1 - probabilities)
    focal = K.pow(1.0 - p_t, gamma) * K.binary_crossentropy(target, output,
                                                            from_logits=from_logits)
    if apply_class_balancing:
        focal = (target * alpha + (1 - target) * (1 - alpha)) * focal
    return focal


def categorical_focal_crossentropy_elements(target, output, alpha=0.25, gamma=2.0,
                                            from_logits=False, axis=-1):
    """Per-sample focal categorical cross-entropy: `sum(alpha * (1 - p) ** gamma * -target *
    log(p))` over `axis`, `p` the predicted distribution normalized and clipped to
    `[epsilon, 1 - epsilon]` (tf.keras' `backend.categorical_focal_crossentropy`)."""
    if from_logits:
        output = K.softmax(output, axis=axis)
    output = output / K.sum(output, axis=axis, keepdims=True)
    output = K.clip(output, K.epsilon(), 1.0 - K.epsilon())
    focal = alpha * K.pow(1.0 - output, gamma) * (-target * K.log(output))
    return K.sum(focal, axis=axis)


def huber(y_true, y_pred, delta=1.0):
    """tf.keras' `huber`: Keras' element-wise `huber_loss`, averaged over the last axis."""
    return K.mean(keras_losses.huber_loss(y_true, y_pred, delta=delta), axis=-1)


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25,
                              gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1):
    """The mean over `axis` of the focal binary cross-entropy, labels smoothed towards 0.5
    by `label_smoothing`."""
    y_true = K.cast(y_true, K.dtype(y_pred))
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return K.mean(binary_focal_crossentropy_elements(
        y_true, y_pred, apply_class_balancing, alpha, gamma, from_logits), axis=axis)


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False,
                                   label_smoothing=0.0, axis=-1):
    """The focal categorical cross-entropy of one-hot labels, smoothed towards uniform by
    `label_smoothing`."""
    y_true = K.cast(y_true, K.dtype(y_pred))
    if label_smoothing:
        classes = K.cast(K.shape(y_true)[-1], K.dtype(y_pred))
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    return categorical_focal_crossentropy_elements(y_true, y_pred, alpha, gamma, from_logits,
                                                   axis)


class BinaryFocalCrossentropy(keras_losses.LossFunctionWrapper):
    """Focal binary cross-entropy (tf.keras 2.10+).

    # Arguments
        apply_class_balancing: weight positives by `alpha`, negatives by `1 - alpha`.
        alpha: the class balancing weight of positives.
        gamma: the focusing exponent (0: plain cross-entropy).
        from_logits: whether predictions are logits.
        label_smoothing: float in [0, 1]: labels move that far towards 0.5.
        axis: the axis averaged over.
        reduction, name: as other Keras losses.
    """

    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
                 label_smoothing=0.0, axis=-1,
                 reduction=losses_utils.Reduction.SUM_OVER_BATCH_SIZE,
                 name='binary_focal_crossentropy'):
        super(BinaryFocalCrossentropy, self).__init__(
            binary_focal_crossentropy, reduction=reduction, name=name,
            apply_class_balancing=apply_class_balancing, alpha=alpha, gamma=gamma,
            from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


class CategoricalFocalCrossentropy(keras_losses.LossFunctionWrapper):
    """Focal categorical cross-entropy of one-hot labels (tf.keras 2.13+).

    # Arguments
        alpha: the weight of every class.
        gamma: the focusing exponent (0: `alpha` times the plain cross-entropy).
        from_logits: whether predictions are logits.
        label_smoothing: float in [0, 1]: labels move that far towards uniform.
        axis: the class axis.
        reduction, name: as other Keras losses.
    """

    def __init__(self, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                 axis=-1, reduction=losses_utils.Reduction.SUM_OVER_BATCH_SIZE,
                 name='categorical_focal_crossentropy'):
        super(CategoricalFocalCrossentropy, self).__init__(
            categorical_focal_crossentropy, reduction=reduction, name=name, alpha=alpha, gamma=gamma,
            from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


class CosineSimilarity(keras_losses.LossFunctionWrapper):
    """The negated cosine similarity of labels and predictions along `axis` (-1 for the
    same direction, 1 for opposite ones), as Keras' `cosine_similarity`."""

    def __init__(self, axis=-1, reduction=losses_utils.Reduction.SUM_OVER_BATCH_SIZE,
                 name='cosine_similarity'):
        super(CosineSimilarity, self).__init__(keras_losses.cosine_similarity,
                                               reduction=reduction, name=name, axis=axis)


def register(keras_losses_module):
    """Makes this module's losses, and `ALIASES`, names of `keras_losses_module`."""
    for name in __all__:
        setattr(keras_losses_module, name, globals()[name])
    for alias, name in ALIASES.items():
        setattr(keras_losses_module, alias, getattr(keras_losses_module, name))
