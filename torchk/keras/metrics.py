"""`tf.keras.metrics`: Keras 2.3.1's metric functions and classes, with torchk's `MeanIoU`,
`Precision` and `Recall` (`top_k`), all callable eagerly (`update_state` on tensors, then
`result()`).

Where tf.keras' metrics differ from Keras 2.3.1's, one override here:
`_mean_results_zero_before_updates` (a mean of no values is 0, not nan).
"""
from keras import backend as K
from keras import metrics as _keras_metrics
from keras.utils import metrics_utils

from .. import math_ops
from ._facade import reexport


def _mean_results_zero_before_updates():
    """Makes the Mean-based metrics' `result()` (every `MeanMetricWrapper`: accuracies,
    errors, crossentropies; `RootMeanSquaredError`) 0 before any update, as tf.keras'
    results are (`divide_no_nan`), where Keras 2.3.1 divides 0 by 0."""
    keras_result = _keras_metrics.Reduce.result

    def result(self):
        if self.reduction == metrics_utils.Reduction.SUM:
            return keras_result(self)
        return math_ops.divide_no_nan(self.total, self.count)
    result.__doc__ = keras_result.__doc__
    _keras_metrics.Reduce.result = result
    _keras_metrics.RootMeanSquaredError.result = lambda self: K.sqrt(
        math_ops.divide_no_nan(self.total, self.count))


_mean_results_zero_before_updates()
reexport(globals(), _keras_metrics, exclude=('Layer', 'metrics_utils', 'losses_utils',
                                             'deserialize_keras_object',
                                             'serialize_keras_object'))
