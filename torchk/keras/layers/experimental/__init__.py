"""`tf.keras.layers.experimental`: the preprocessing layers' TF 2.3-2.5 home."""
from . import preprocessing  # noqa: F401
