"""`tf.keras.preprocessing.image`: Keras 2.3.1's."""
from keras.preprocessing import image as _keras_image

from .._facade import reexport

reexport(globals(), _keras_image)
