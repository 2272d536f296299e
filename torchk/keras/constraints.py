"""`tf.keras.constraints`: Keras 2.3.1's."""
from keras import constraints as _keras_constraints

from ._facade import reexport

reexport(globals(), _keras_constraints)
