"""`tf.keras.backend`: Keras 2.3.1's backend functions (torchk's ops)."""
from keras import backend as _keras_backend

from ._facade import reexport

reexport(globals(), _keras_backend)
