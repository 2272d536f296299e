"""Keras model files: reading every Keras 2 format and dialect.

`dialects` translates tf.keras / tf_keras configurations into Keras 2.3.1's; `h5` installs the
translation on Keras' HDF5 loaders.
"""
