"""`tf.keras.metrics`: Keras 2.3.1's metric functions and classes, with torchk's `MeanIoU`,
`Precision` and `Recall` (`top_k`), all callable eagerly (`update_state` on tensors, then
`result()`)."""
from keras import metrics as _keras_metrics

from ._facade import reexport

reexport(globals(), _keras_metrics, exclude=('Layer', 'metrics_utils', 'losses_utils',
                                             'deserialize_keras_object',
                                             'serialize_keras_object'))
