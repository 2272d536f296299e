"""tf.keras 2's metrics that Keras 2.3.1 lacks, beside `torchk.metrics`' confusion-matrix
ones: `FBetaScore`, `F1Score`, `R2Score` (tf.keras 2.13+), `MeanRelativeError` and
`MeanTensor`, with tf.keras' configuration keys and numbers.

`FBetaScore`, `F1Score`, `R2Score` and `MeanTensor` size their state from their first inputs,
as tf.keras' do. `torchk.metrics.register` puts them in `keras.metrics`.
"""
import numpy as np

from keras import backend as K
from keras import metrics as keras_metrics

__all__ = ['FBetaScore', 'F1Score', 'R2Score', 'MeanRelativeError', 'MeanTensor']


def _divide_no_nan(x, y):
    """`x / y`, 0 where `y` is 0."""
    nonzero = K.not_equal(y, 0)
    return K.switch(nonzero, x / K.switch(nonzero, y, K.ones_like(y)), K.zeros_like(x))


class _LazyState(keras_metrics.Metric):
    """A metric whose state variables are made by `_build(y_true, y_pred)` at the first
    update; `reset_states` zeroes them."""

    _built_state = False

    def _ensure_state(self, y_true, y_pred):
        if not self._built_state:
            self._build(K.int_shape(y_true), K.int_shape(y_pred))
            self._built_state = True

    def reset_states(self):
        K.batch_set_value([(v, np.zeros(K.int_shape(v))) for v in self.weights])


class FBetaScore(_LazyState):
    """The F-beta score of multi-label or one-hot predictions, per class or averaged, as
    `tf.keras.metrics.FBetaScore`: `(1 + beta^2) * precision * recall / (beta^2 * precision
    + recall)`.

    # Arguments
        average: None (one score per class), `'micro'` (counts over every class),
            `'macro'` (mean of the classes' scores) or `'weighted'` (weighted by the number
            of true labels of each class).
        beta: the weight of recall (> 0).
        threshold: a prediction above it is positive; None: the largest of each sample is
            (where it is not 0).
        name, dtype: as other metrics.

    # Raises
        ValueError: for another `average`, `beta <= 0`, a threshold outside (0, 1], or
            predictions whose last dimension is unknown.
    """

    def __init__(self, average=None, beta=1.0, threshold=None, name='fbeta_score',
                 dtype=None):
        super(FBetaScore, self).__init__(name=name, dtype=dtype)
        if average not in (None, 'micro', 'macro', 'weighted'):
            raise ValueError('Invalid `average` argument value. Expected one of: {None, '
                             '"micro", "macro", "weighted"}. Received: average=%s' % average)
        if not isinstance(beta, float):
            raise ValueError('Invalid `beta` argument value. It should be a Python float. '
                             'Received: beta=%s of type "%s"' % (beta, type(beta)))
        if beta <= 0.0:
            raise ValueError('Invalid `beta` argument value. It should be > 0. Received: '
                             'beta=%s' % beta)
        if threshold is not None:
            if not isinstance(threshold, float):
                raise ValueError('Invalid `threshold` argument value. It should be a Python '
                                 'float. Received: threshold=%s of type "%s"'
                                 % (threshold, type(threshold)))
            if threshold > 1.0 or threshold <= 0.0:
                raise ValueError('Invalid `threshold` argument value. It should verify 0 < '
                                 'threshold <= 1. Received: threshold=%s' % threshold)
        self.average = average
        self.beta = beta
        self.threshold = threshold
        self.axis = None if average == 'micro' else 0

    def _build(self, true_shape, pred_shape):
        if len(pred_shape) != 2 or len(true_shape) != 2 or pred_shape[-1] is None:
            raise ValueError('FBetaScore expects 2D inputs with shape (batch_size, '
                             'output_dim), output_dim of the predictions known. Received '
                             'input shapes: y_pred.shape=%s and y_true.shape=%s.'
                             % (pred_shape, true_shape))
        shape = () if self.average == 'micro' else (pred_shape[-1],)
        for count in ('true_positives', 'false_positives', 'false_negatives',
                      'intermediate_weights'):
            setattr(self, count, self.add_weight(count, shape=shape, initializer='zeros'))

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = K.cast(y_true, self.dtype)
        y_pred = K.cast(y_pred, self.dtype)
        self._ensure_state(y_true, y_pred)
        if self.threshold is None:
            largest = K.max(y_pred, axis=-1, keepdims=True)
            y_pred = K.cast(K.greater_equal(y_pred, largest), self.dtype) * K.cast(
                K.greater(K.abs(y_pred), 1e-9), self.dtype)
        else:
            y_pred = K.cast(K.greater(y_pred, self.threshold), self.dtype)

        def weighted_sum(values):
            if sample_weight is not None:
                values = values * K.expand_dims(K.cast(sample_weight, self.dtype), 1)
            return K.sum(values, axis=self.axis)
        return [K.update_add(self.true_positives, weighted_sum(y_pred * y_true)),
                K.update_add(self.false_positives, weighted_sum(y_pred * (1 - y_true))),
                K.update_add(self.false_negatives, weighted_sum((1 - y_pred) * y_true)),
                K.update_add(self.intermediate_weights, weighted_sum(y_true))]

    def result(self):
        if not self._built_state:
            raise ValueError('%s has no result before its first update: its state is sized '
                             'from the predictions.' % self.name)
        precision = _divide_no_nan(self.true_positives,
                                   self.true_positives + self.false_positives)
        recall = _divide_no_nan(self.true_positives,
                                self.true_positives + self.false_negatives)
        beta_squared = self.beta ** 2
        score = _divide_no_nan(precision * recall, beta_squared * precision + recall) * (
            1 + beta_squared)
        if self.average == 'weighted':
            weights = _divide_no_nan(self.intermediate_weights,
                                     K.sum(self.intermediate_weights))
            return K.sum(score * weights)
        if self.average is not None:
            return K.mean(score)
        return score

    def get_config(self):
        config = {'average': self.average, 'beta': self.beta, 'threshold': self.threshold}
        base_config = super(FBetaScore, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


class F1Score(FBetaScore):
    """`FBetaScore` with `beta=1`: the harmonic mean of precision and recall."""

    def __init__(self, average=None, threshold=None, name='f1_score', dtype=None):
        super(F1Score, self).__init__(average=average, beta=1.0, threshold=threshold,
                                      name=name, dtype=dtype)

    def get_config(self):
        config = super(F1Score, self).get_config()
        del config['beta']
        return config


class R2Score(_LazyState):
    """The coefficient of determination of each output (`1 - residual sum of squares /
    total sum of squares`), aggregated, as `tf.keras.metrics.R2Score`.

    # Arguments
        class_aggregation: None (one score per output), `'uniform_average'` or
            `'variance_weighted_average'` (weighted by each output's total sum of squares).
        num_regressors: for the adjusted R2 score (`1 - (1 - r2) (n - 1) / (n - p - 1)`,
            `n` the number of label values seen); 0 for the plain score.
        name, dtype: as other metrics.

    # Raises
        ValueError: for another aggregation, `num_regressors < 0`, or inputs not of rank 2
            with a known last dimension.
    """

    def __init__(self, class_aggregation='uniform_average', num_regressors=0,
                 name='r2_score', dtype=None):
        super(R2Score, self).__init__(name=name, dtype=dtype)
        aggregations = (None, 'uniform_average', 'variance_weighted_average')
        if class_aggregation not in aggregations:
            raise ValueError('Invalid value for argument `class_aggregation`. Expected one '
                             'of %s. Received: class_aggregation=%s'
                             % (aggregations, class_aggregation))
        if num_regressors < 0:
            raise ValueError('Invalid value for argument `num_regressors`. Expected a value '
                             '>= 0. Received: num_regressors=%s' % num_regressors)
        self.class_aggregation = class_aggregation
        self.num_regressors = num_regressors
        self.num_samples = self.add_weight('num_samples', dtype='int32', initializer='zeros')

    def _build(self, true_shape, pred_shape):
        # Keras 2.3.1's compiled targets have unknown sizes: the predictions give them.
        if len(pred_shape) != 2 or len(true_shape) != 2 or pred_shape[-1] is None:
            raise ValueError('R2Score expects 2D inputs with shape (batch_size, output_dim), '
                             'with output_dim of the predictions defined (not None). Received '
                             'input shapes: y_pred.shape=%s and y_true.shape=%s.'
                             % (pred_shape, true_shape))
        outputs = (pred_shape[-1],)
        self.squared_sum = self.add_weight('squared_sum', shape=outputs, initializer='zeros')
        self.sum = self.add_weight('sum', shape=outputs, initializer='zeros')
        self.total_mse = self.add_weight('residual', shape=outputs, initializer='zeros')
        self.count = self.add_weight('count', shape=outputs, initializer='zeros')

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = K.cast(y_true, self.dtype)
        y_pred = K.cast(y_pred, self.dtype)
        self._ensure_state(y_true, y_pred)
        if sample_weight is None:
            weights = K.ones_like(y_true)
        else:
            weights = K.cast(sample_weight, self.dtype)
            if K.ndim(weights) == 1:
                weights = K.expand_dims(weights, 1)
            weights = weights * K.ones_like(y_true)
        weighted = y_true * weights
        return [K.update_add(self.sum, K.sum(weighted, axis=0)),
                K.update_add(self.squared_sum, K.sum(y_true * weighted, axis=0)),
                K.update_add(self.total_mse, K.sum(K.square(y_true - y_pred) * weights,
                                                   axis=0)),
                K.update_add(self.count, K.sum(weights, axis=0)),
                K.update_add(self.num_samples, K.cast(K.prod(K.shape(y_true)), 'int32'))]

    def result(self):
        if not self._built_state:
            raise ValueError('%s has no result before its first update: its state is sized '
                             'from the labels.' % self.name)
        mean = self.sum / self.count
        total = self.squared_sum - self.sum * mean
        scores = 1 - self.total_mse / total
        scores = K.switch(K.equal(K.abs(scores), np.inf), K.zeros_like(scores), scores)
        if self.class_aggregation == 'uniform_average':
            score = K.mean(scores)
        elif self.class_aggregation == 'variance_weighted_average':
            score = K.sum(total * scores) / K.sum(total)
        else:
            score = scores
        if self.num_regressors == 0:
            return score
        samples = K.cast(self.num_samples, self.dtype)
        regressors = float(self.num_regressors)
        adjusted = 1 - (1 - score) * (samples - 1) / (samples - regressors - 1)
        # tf.keras falls back to the plain score (with a warning) without enough samples.
        return K.switch(K.greater(samples - 1, regressors), adjusted, score)

    def get_config(self):
        config = {'class_aggregation': self.class_aggregation,
                  'num_regressors': self.num_regressors}
        base_config = super(R2Score, self).get_config()
        return dict(list(base_config.items()) + list(config.items()))


class MeanRelativeError(keras_metrics.Mean):
    """The mean of `|y_pred - y_true| / normalizer` (0 where `normalizer` is 0), as
    `tf.keras.metrics.MeanRelativeError`.

    # Arguments
        normalizer: array broadcastable to the labels.
        name, dtype: as other metrics.
    """

    def __init__(self, normalizer, name=None, dtype=None):
        super(MeanRelativeError, self).__init__(name=name, dtype=dtype)
        self.normalizer = np.asarray(normalizer, dtype=self.dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = K.cast(y_true, self.dtype)
        y_pred = K.cast(y_pred, self.dtype)
        normalizer = K.constant(self.normalizer, dtype=self.dtype)
        errors = _divide_no_nan(K.abs(y_true - y_pred), normalizer * K.ones_like(y_true))
        return super(MeanRelativeError, self).update_state(errors, sample_weight=sample_weight)

    def get_config(self):
        config = super(MeanRelativeError, self).get_config()
        config['normalizer'] = self.normalizer.tolist()
        return config


class MeanTensor(_LazyState):
    """The element-wise (weighted) mean of the tensors it is updated with, as
    `tf.keras.metrics.MeanTensor`.

    # Arguments
        name, dtype: as other metrics.
        shape: the values' shape, to make the state now (else at the first update).

    # Raises
        ValueError: for values of another shape than the first.
    """

    # Called on tensors, it is traced with their whole shape (`torchk.keras.eager`).
    state_has_value_shape = True

    def __init__(self, name='mean_tensor', dtype=None, shape=None):
        super(MeanTensor, self).__init__(name=name, dtype=dtype)
        self._shape = None if shape is None else tuple(shape)
        if shape is not None:
            self._build(self._shape, self._shape)
            self._built_state = True

    def _build(self, shape, _):
        if any(d is None for d in shape):
            raise ValueError('MeanTensor needs values of a known shape; got %s.' % (shape,))
        self._shape = tuple(shape)
        self.total = self.add_weight('total', shape=self._shape, initializer='zeros')
        self.count = self.add_weight('count', shape=self._shape, initializer='zeros')

    def update_state(self, values, sample_weight=None):
        values = K.cast(values, self.dtype)
        self._ensure_state(values, values)
        if tuple(K.int_shape(values)) != self._shape:
            raise ValueError('MeanTensor input values must always have the same shape. '
                             'Expected shape (set during the first call): %s. Got: %s.'
                             % (self._shape, K.int_shape(values)))
        counts = K.ones_like(values)
        if sample_weight is not None:
            weights = K.cast(sample_weight, self.dtype) * K.ones_like(values)
            values = values * weights
            counts = weights
        return [K.update_add(self.total, values), K.update_add(self.count, counts)]

    def result(self):
        if not self._built_state:
            raise ValueError('MeanTensor does not have any value yet. Please call the '
                             'MeanTensor instance or use `.update_state(value)` before '
                             'retrieving the result.')
        return _divide_no_nan(self.total, self.count)

    def get_config(self):
        config = super(MeanTensor, self).get_config()
        config['shape'] = self._shape
        return config
