"""`tf.keras.preprocessing.text`: Keras 2.3.1's."""
from keras.preprocessing import text as _keras_text

from .._facade import reexport

reexport(globals(), _keras_text)
