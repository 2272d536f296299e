"""`tf.keras.preprocessing.sequence`: Keras 2.3.1's."""
from keras.preprocessing import sequence as _keras_sequence

from .._facade import reexport

reexport(globals(), _keras_sequence)
