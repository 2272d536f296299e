"""`tf.keras.preprocessing.image`: Keras 2.3.1's, and tf.keras' `smart_resize`."""
from keras.preprocessing import image as _keras_image

from .._facade import reexport
from ..utils.image_utils import smart_resize  # noqa: F401

reexport(globals(), _keras_image)
