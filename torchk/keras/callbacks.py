"""`tf.keras.callbacks`: Keras 2.3.1's (`EarlyStopping(restore_best_weights=True)`,
`ReduceLROnPlateau`, `ModelCheckpoint`, `CSVLogger`, `LearningRateScheduler`, ...) and
torchk's `TensorBoard` (torch's `SummaryWriter`)."""
from keras import callbacks as _keras_callbacks

from ..callbacks import TensorBoard  # noqa: F401
from ._facade import reexport

reexport(globals(), _keras_callbacks)

