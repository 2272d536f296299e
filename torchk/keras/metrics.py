"""`tf.keras.metrics`: Keras 2.3.1's metric functions and classes, with torchk's `MeanIoU`,
`Precision` and `Recall` (`top_k`), all callable eagerly (`update_state` on tensors, then
`result()`).

Where tf.keras' metrics differ from Keras 2.3.1's, one override here (`torchk.overrides`):
`mean_results_zero_before_updates` and `root_mean_squared_error_result` (a mean of no values
is 0, not nan).
"""
from keras import backend as K
from keras import metrics as _keras_metrics
from keras.utils import metrics_utils

from .. import math_ops
from ._facade import reexport


def mean_results_zero_before_updates(keras_result):
    """Override of `Reduce.result`: the Mean-based metrics' `result()` (every
    `MeanMetricWrapper`: accuracies, errors, crossentropies) is 0 before any update, as
    tf.keras' results are (`divide_no_nan`), where Keras 2.3.1 divides 0 by 0."""
    def result(self):
        if self.reduction == metrics_utils.Reduction.SUM:
            return keras_result(self)
        return math_ops.divide_no_nan(self.total, self.count)
    result.__doc__ = keras_result.__doc__
    return result


def root_mean_squared_error_result(metric):
    """`RootMeanSquaredError.result`, 0 before any update (`mean_results_zero_before_updates`)."""
    return K.sqrt(math_ops.divide_no_nan(metric.total, metric.count))

reexport(globals(), _keras_metrics, exclude=('Layer', 'metrics_utils', 'losses_utils',
                                             'deserialize_keras_object',
                                             'serialize_keras_object'))
