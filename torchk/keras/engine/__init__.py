"""tf.keras 2's engine over Keras 2.3.1's, laid out as tf.keras' `engine` package:
`training` (`Model`: `fit`/`evaluate`/`predict` and the step overrides), `sequential`,
`compile_utils` (the loss and metric containers), `data_adapter` (data into batches),
`base_layer` (tf.keras' layer call conventions) and `functional` (functional models' replay
and input casting). Each difference from Keras 2.3.1's engine is one named function, listed
in its module's docstring, with its test in tests/keras_facade/.
"""
from .sequential import Sequential
from .training import Model

__all__ = ['Model', 'Sequential']
