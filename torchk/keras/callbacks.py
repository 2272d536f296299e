"""`tf.keras.callbacks`: Keras 2.3.1's (`EarlyStopping(restore_best_weights=True)`,
`ReduceLROnPlateau`, `ModelCheckpoint`, `CSVLogger`, `LearningRateScheduler`, ...) and
torchk's `TensorBoard` (torch's `SummaryWriter`)."""
import sys
import types

from keras import callbacks as _keras_callbacks

from ..callbacks import TensorBoard  # noqa: F401
from ._facade import reexport

reexport(globals(), _keras_callbacks)

# TensorBoard's writer takes a successful `import tensorflow` for TensorFlow; under the launcher
# that import gives torchk.tf, which has no tf.io.gfile. The module tensorboard.compat.notf
# existing makes TensorBoard use its own TensorFlow stub instead.
sys.modules.setdefault('tensorboard.compat.notf', types.ModuleType('tensorboard.compat.notf'))
