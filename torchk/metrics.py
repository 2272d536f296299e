"""Metrics that Keras 2.3.1 offers with TensorFlow only: `MeanIoU`, and `Precision` and
`Recall` with `top_k`.

Stateful Keras 2.3.1 metrics written with the backend, with tf.keras' configuration keys and
TensorFlow's numbers. `register` makes them the `keras.metrics` names (replacing 2.3.1's
TensorFlow-only classes), so `compile(metrics=[keras.metrics.MeanIoU(3)])` and saved
training configurations that name them work; `keras_compat` calls it when `keras.metrics`
is imported.
"""
import numpy as np

from keras import backend as K
from keras import metrics as keras_metrics
from keras.utils import metrics_utils

__all__ = ['MeanIoU', 'Precision', 'Recall']


def filter_top_k(x, k):
    """Keeps the `k` largest values of the last axis of `x`; the others become -1e10.

    Of equal values, the ones at lower indices are kept first, as `tf.math.top_k` orders them.

    # Arguments
        x: Tensor.
        k: Positive integer.

    # Returns
        A tensor of the shape and dtype of `x`.
    """
    positions = K.cumsum(K.ones_like(x), axis=-1)
    rows, columns = K.expand_dims(x, -1), K.expand_dims(x, -2)  # [..., i, j]: x_i, x_j
    before = K.cast(K.less(K.expand_dims(positions, -2), K.expand_dims(positions, -1)),
                    K.dtype(x))  # j < i
    greater = K.cast(K.greater(columns, rows), K.dtype(x))
    tied_before = K.cast(K.equal(columns, rows), K.dtype(x)) * before
    rank = K.sum(greater + tied_before, axis=-1)
    kept = K.cast(K.less(rank, k), K.dtype(x))
    return x * kept + metrics_utils.NEG_INF * (1 - kept)


class _ConfusionMetric(keras_metrics.Metric):
    """True positives and one other confusion count per threshold, as Keras 2.3.1's
    `Precision` and `Recall` keep them (those are not subclassed: `register` replaces their
    names in `keras.metrics`, where their `super()` calls look them up)."""

    _other_count = None  # 'false_positives' or 'false_negatives'

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super(_ConfusionMetric, self).__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        default_threshold = 0.5 if top_k is None else metrics_utils.NEG_INF
        self.thresholds = metrics_utils.parse_init_thresholds(
            thresholds, default_threshold=default_threshold)
        self.true_positives = self.add_weight(
            'true_positives', shape=(len(self.thresholds),), initializer='zeros')
        setattr(self, self._other_count, self.add_weight(
            self._other_count, shape=(len(self.thresholds),), initializer='zeros'))

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self.top_k is not None:
            y_pred = filter_top_k(K.cast(y_pred, K.floatx()), self.top_k)
        if self.class_id is not None:
            # The class axis stays, of size 1, so that per-sample weights broadcast as in
            # tf.keras (Keras 2.3.1 drops it and then fails to broadcast them).
            class_slice = slice(self.class_id, self.class_id + 1)
            y_true, y_pred = y_true[..., class_slice], y_pred[..., class_slice]
        return metrics_utils.update_confusion_matrix_variables(
            {metrics_utils.ConfusionMatrix.TRUE_POSITIVES: self.true_positives,
             metrics_utils.ConfusionMatrix[self._other_count.upper()]:
                 getattr(self, self._other_count)},
            y_true, y_pred, thresholds=self.thresholds, sample_weight=sample_weight)

    def result(self):
        denominator = self.true_positives + getattr(self, self._other_count)
        result = K.switch(K.greater(denominator, 0), self.true_positives / denominator,
                          K.zeros_like(self.true_positives))
        return result[0] if len(self.thresholds) == 1 else result

    def reset_states(self):
        K.batch_set_value([(v, np.zeros((len(self.thresholds),))) for v in self.weights])

    def get_config(self):
        config = {'thresholds': self.init_thresholds, 'top_k': self.top_k,
                  'class_id': self.class_id}
        base_config = super(_ConfusionMetric, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


class Precision(_ConfusionMetric):
    """Precision, as Keras 2.3.1's `Precision`, with `top_k` on every backend.

    `true_positives / (true_positives + false_positives)`, accumulated over batches.

    # Arguments
        thresholds: float or list of floats in [0, 1]: a prediction above one is positive
            (default 0.5, or no threshold with `top_k`); a list gives one result each.
        top_k: int: only the `top_k` largest predictions of each sample count as positive.
        class_id: int: the class whose precision is computed.
        name: string name of the metric.
        dtype: data type of the result.
    """

    _other_count = 'false_positives'


class Recall(_ConfusionMetric):
    """Recall, as Keras 2.3.1's `Recall`, with `top_k` on every backend.

    `true_positives / (true_positives + false_negatives)`, accumulated over batches.

    # Arguments
        thresholds: float or list of floats in [0, 1]: a prediction above one is positive
            (default 0.5, or no threshold with `top_k`); a list gives one result each.
        top_k: int: only the `top_k` largest predictions of each sample count as positive.
        class_id: int: the class whose recall is computed.
        name: string name of the metric.
        dtype: data type of the result.
    """

    _other_count = 'false_negatives'


class MeanIoU(keras_metrics.Metric):
    """Mean intersection-over-union, as `tf.keras.metrics.MeanIoU`.

    A `num_classes` x `num_classes` confusion matrix (rows: true class, columns: predicted
    class) accumulates the weighted samples; the result is the mean over classes that
    occur, in labels or predictions, of `tp / (tp + fp + fn)`.

    # Arguments
        num_classes: the number of classes.
        name: string name of the metric.
        dtype: data type of the result.
        ignore_class: class id whose true labels are left out (`None`: none).
        sparse_y_true: whether the labels are class ids (else one-hot / scores on `axis`).
        sparse_y_pred: whether the predictions are class ids (else scores on `axis`).
        axis: the class axis of non-sparse labels and predictions.
    """

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super(MeanIoU, self).__init__(name=name, dtype=dtype)
        self.num_classes = num_classes
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis
        self.total_cm = self.add_weight('total_confusion_matrix',
                                        shape=(num_classes, num_classes),
                                        initializer='zeros')

    def update_state(self, y_true, y_pred, sample_weight=None):
        if not self.sparse_y_true:
            y_true = K.argmax(y_true, axis=self.axis)
        if not self.sparse_y_pred:
            y_pred = K.argmax(y_pred, axis=self.axis)
        y_true = K.cast(K.reshape(K.cast(y_true, self.dtype), (-1,)), 'int64')
        y_pred = K.cast(K.reshape(K.cast(y_pred, self.dtype), (-1,)), 'int64')
        if sample_weight is None:
            weights = K.ones_like(y_true, dtype=self.dtype)
        else:
            weights = K.reshape(K.cast(sample_weight, self.dtype), (-1,))
            weights = weights * K.ones_like(y_true, dtype=self.dtype)
        if self.ignore_class is not None:
            kept = K.not_equal(y_true, self.ignore_class)
            weights = weights * K.cast(kept, self.dtype)
            y_true = y_true * K.cast(kept, 'int64')
        true = K.one_hot(y_true, self.num_classes) * K.expand_dims(weights, -1)
        predicted = K.one_hot(y_pred, self.num_classes)
        return K.update_add(self.total_cm, K.dot(K.transpose(true), predicted))

    def result(self):
        predicted_counts = K.sum(self.total_cm, axis=0)
        true_counts = K.sum(self.total_cm, axis=1)
        true_positives = K.sum(self.total_cm * K.eye(self.num_classes, dtype=self.dtype),
                               axis=1)
        denominator = predicted_counts + true_counts - true_positives
        occurring = K.cast(K.not_equal(denominator, 0), self.dtype)
        iou = true_positives / K.maximum(denominator, K.epsilon()) * occurring
        return K.sum(iou) / K.maximum(K.sum(occurring), 1.)

    def reset_states(self):
        K.set_value(self.total_cm, np.zeros((self.num_classes, self.num_classes)))

    def get_config(self):
        config = {'num_classes': self.num_classes, 'ignore_class': self.ignore_class,
                  'sparse_y_true': self.sparse_y_true, 'sparse_y_pred': self.sparse_y_pred,
                  'axis': self.axis}
        base_config = super(MeanIoU, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


def register(keras_metrics_module):
    """Makes every metric of this module a name of `keras_metrics_module` (`keras.metrics`)."""
    for name in __all__:
        setattr(keras_metrics_module, name, globals()[name])
