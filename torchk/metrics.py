"""Metrics that Keras 2.3.1 offers with TensorFlow only or lacks: the IoU family (`MeanIoU`,
`IoU`, `BinaryIoU`, `OneHotIoU`, `OneHotMeanIoU`), `Precision` and `Recall` with `top_k`,
`PrecisionAtRecall` and `RecallAtPrecision`.

Stateful Keras 2.3.1 metrics written with the backend, with tf.keras' configuration keys and
TensorFlow's numbers. `register` makes them the `keras.metrics` names (replacing 2.3.1's
TensorFlow-only classes), so `compile(metrics=[keras.metrics.MeanIoU(3)])` and saved
training configurations that name them work; its override (`torchk.overrides`) calls it
when `keras.metrics` is imported.
"""
import numpy as np

from keras import backend as K
from keras import metrics as keras_metrics
from keras.utils import metrics_utils

__all__ = ['MeanIoU', 'IoU', 'BinaryIoU', 'OneHotIoU', 'OneHotMeanIoU', 'Precision', 'Recall',
           'PrecisionAtRecall', 'RecallAtPrecision']


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


class IoU(keras_metrics.Metric):
    """Intersection-over-union averaged over chosen classes, as `tf.keras.metrics.IoU`.

    A `num_classes` x `num_classes` confusion matrix (rows: true class, columns: predicted
    class) accumulates the weighted samples; the result is the mean over the classes of
    `target_class_ids` that occur (in labels or predictions) of `tp / (tp + fp + fn)`.

    # Arguments
        num_classes: the number of classes.
        target_class_ids: the classes averaged over.
        name: string name of the metric.
        dtype: data type of the result.
        ignore_class: class id whose true labels are left out (`None`: none).
        sparse_y_true: whether the labels are class ids (else one-hot / scores on `axis`).
        sparse_y_pred: whether the predictions are class ids (else scores on `axis`).
        axis: the class axis of non-sparse labels and predictions.

    # Raises
        ValueError: for a target class id not below `num_classes`.
    """

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None,
                 ignore_class=None, sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super(IoU, self).__init__(name=name, dtype=dtype)
        if max(target_class_ids) >= num_classes:
            raise ValueError('Target class id %d is out of range, which is [0, %d).'
                             % (max(target_class_ids), num_classes))
        self.num_classes = num_classes
        self.target_class_ids = list(target_class_ids)
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
        return [K.update_add(self.total_cm, K.dot(K.transpose(true), predicted))]

    def result(self):
        predicted_counts = K.sum(self.total_cm, axis=0)
        true_counts = K.sum(self.total_cm, axis=1)
        true_positives = K.sum(self.total_cm * K.eye(self.num_classes, dtype=self.dtype),
                               axis=1)
        denominator = predicted_counts + true_counts - true_positives
        targets = K.constant(self.target_class_ids, dtype='int64')
        true_positives = K.gather(true_positives, targets)
        denominator = K.gather(denominator, targets)
        occurring = K.cast(K.greater(denominator, 1e-9), self.dtype)
        iou = true_positives / K.maximum(denominator, K.epsilon()) * occurring
        return K.sum(iou) / K.maximum(K.sum(occurring), 1.)

    def reset_states(self):
        K.set_value(self.total_cm, np.zeros((self.num_classes, self.num_classes)))

    def get_config(self):
        config = {'num_classes': self.num_classes, 'target_class_ids': self.target_class_ids,
                  'ignore_class': self.ignore_class, 'sparse_y_true': self.sparse_y_true,
                  'sparse_y_pred': self.sparse_y_pred, 'axis': self.axis}
        base_config = super(IoU, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


class MeanIoU(IoU):
    """Mean intersection-over-union of all `num_classes` classes, as
    `tf.keras.metrics.MeanIoU` (`IoU` over every class; same arguments but
    `target_class_ids`)."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super(MeanIoU, self).__init__(num_classes, list(range(num_classes)), name=name,
                                      dtype=dtype, ignore_class=ignore_class,
                                      sparse_y_true=sparse_y_true,
                                      sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = super(MeanIoU, self).get_config()
        del config['target_class_ids']
        return config


class BinaryIoU(IoU):
    """`IoU` of binary labels: a prediction at or above `threshold` is class 1, below it 0.

    # Arguments
        target_class_ids: the classes averaged over, of (0, 1).
        threshold: the decision threshold.
        name, dtype: as other metrics.
    """

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super(BinaryIoU, self).__init__(2, target_class_ids, name=name, dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = K.cast(K.greater_equal(K.cast(y_pred, self.dtype), self.threshold),
                        self.dtype)
        return super(BinaryIoU, self).update_state(y_true, y_pred, sample_weight)

    def get_config(self):
        return {'target_class_ids': self.target_class_ids, 'threshold': self.threshold,
                'name': self.name, 'dtype': self.dtype}


class OneHotIoU(IoU):
    """`IoU` of one-hot labels (`sparse_y_true=False`); predictions are scores unless
    `sparse_y_pred`."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None,
                 ignore_class=None, sparse_y_pred=False, axis=-1):
        super(OneHotIoU, self).__init__(num_classes, target_class_ids, name=name, dtype=dtype,
                                        ignore_class=ignore_class, sparse_y_true=False,
                                        sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = super(OneHotIoU, self).get_config()
        del config['sparse_y_true']
        return config


class OneHotMeanIoU(MeanIoU):
    """`MeanIoU` of one-hot labels (`sparse_y_true=False`); predictions are scores unless
    `sparse_y_pred`."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super(OneHotMeanIoU, self).__init__(num_classes, name=name, dtype=dtype,
                                            ignore_class=ignore_class, sparse_y_true=False,
                                            sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        config = super(OneHotMeanIoU, self).get_config()
        del config['sparse_y_true']
        return config


class _ThresholdSweep(keras_metrics.Metric):
    """The four confusion counts at `num_thresholds` thresholds spread evenly over [0, 1]
    (tf.keras' `SensitivitySpecificityBase`, with `class_id`): the base of the metrics that
    give the best value of one statistic where another reaches `value`."""

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        super(_ThresholdSweep, self).__init__(name=name, dtype=dtype)
        if num_thresholds <= 0:
            raise ValueError('Argument `num_thresholds` must be an integer > 0. Received: '
                             'num_thresholds=%s' % num_thresholds)
        self.value = value
        self.num_thresholds = num_thresholds
        self.class_id = class_id
        if num_thresholds == 1:
            self.thresholds = [0.5]
        else:
            self.thresholds = [0.0] + [(i + 1) * 1.0 / (num_thresholds - 1)
                                       for i in range(num_thresholds - 2)] + [1.0]
        for count in ('true_positives', 'true_negatives', 'false_positives',
                      'false_negatives'):
            setattr(self, count, self.add_weight(count, shape=(num_thresholds,),
                                                 initializer='zeros'))

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self.class_id is not None:
            # The class axis stays, of size 1, as in `_ConfusionMetric`.
            class_slice = slice(self.class_id, self.class_id + 1)
            y_true, y_pred = y_true[..., class_slice], y_pred[..., class_slice]
        matrix = metrics_utils.ConfusionMatrix
        return metrics_utils.update_confusion_matrix_variables(
            {matrix.TRUE_POSITIVES: self.true_positives,
             matrix.TRUE_NEGATIVES: self.true_negatives,
             matrix.FALSE_POSITIVES: self.false_positives,
             matrix.FALSE_NEGATIVES: self.false_negatives},
            y_true, y_pred, thresholds=self.thresholds, sample_weight=sample_weight)

    def reset_states(self):
        K.batch_set_value([(v, np.zeros((len(self.thresholds),))) for v in self.weights])

    def _ratio(self, other):
        denominator = self.true_positives + other
        return K.switch(K.greater(denominator, 0), self.true_positives / denominator,
                        K.zeros_like(denominator))

    def _max_where_at_least(self, constrained, dependent):
        """The largest `dependent` value among thresholds where `constrained >= value`,
        0 if there is none."""
        feasible = K.cast(K.greater_equal(constrained, self.value), K.dtype(dependent))
        return K.max(dependent * feasible + (feasible - 1.0) * 1e30) * K.max(feasible)

    def get_config(self):
        config = {'num_thresholds': self.num_thresholds, 'class_id': self.class_id}
        base_config = super(_ThresholdSweep, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


class PrecisionAtRecall(_ThresholdSweep):
    """The best precision at a threshold where recall is at least `recall`, as
    `tf.keras.metrics.PrecisionAtRecall`.

    # Arguments
        recall: float in [0, 1].
        num_thresholds: the number of thresholds tried.
        class_id: int: the class whose statistics are computed.
        name, dtype: as other metrics.
    """

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        if not 0 <= recall <= 1:
            raise ValueError('Argument `recall` must be in the range [0, 1]. Received: '
                             'recall=%s' % recall)
        super(PrecisionAtRecall, self).__init__(recall, num_thresholds, class_id, name, dtype)
        self.recall = recall

    def result(self):
        return self._max_where_at_least(self._ratio(self.false_negatives),
                                        self._ratio(self.false_positives))

    def get_config(self):
        config = super(PrecisionAtRecall, self).get_config()
        config['recall'] = self.recall
        return config


class RecallAtPrecision(_ThresholdSweep):
    """The best recall at a threshold where precision is at least `precision`, as
    `tf.keras.metrics.RecallAtPrecision`.

    # Arguments
        precision: float in [0, 1].
        num_thresholds: the number of thresholds tried.
        class_id: int: the class whose statistics are computed.
        name, dtype: as other metrics.
    """

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        if not 0 <= precision <= 1:
            raise ValueError('Argument `precision` must be in the range [0, 1]. Received: '
                             'precision=%s' % precision)
        super(RecallAtPrecision, self).__init__(precision, num_thresholds, class_id, name,
                                                dtype)
        self.precision = precision

    def result(self):
        return self._max_where_at_least(self._ratio(self.false_positives),
                                        self._ratio(self.false_negatives))

    def get_config(self):
        config = super(RecallAtPrecision, self).get_config()
        config['precision'] = self.precision
        return config


def register(keras_metrics_module):
    """Makes every metric of this module and of `score_metrics` a name of
    `keras_metrics_module` (`keras.metrics`), with tf.keras' metric names of loss functions
    (`kl_divergence`, `log_cosh`, the focal cross-entropies)."""
    from keras import losses as keras_losses

    from . import losses, score_metrics
    for name in __all__:
        setattr(keras_metrics_module, name, globals()[name])
    for name in score_metrics.__all__:
        setattr(keras_metrics_module, name, getattr(score_metrics, name))
    for name in ('KLD', 'kld', 'kl_divergence'):
        setattr(keras_metrics_module, name, keras_losses.kullback_leibler_divergence)
    keras_metrics_module.log_cosh = keras_losses.logcosh
    keras_metrics_module.binary_focal_crossentropy = losses.binary_focal_crossentropy
    keras_metrics_module.categorical_focal_crossentropy = losses.categorical_focal_crossentropy
