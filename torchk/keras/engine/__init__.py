"""tf.keras 2's engine over Keras 2.3.1's, laid out as tf.keras' `engine` package:
`training` (`Model`: `fit`/`evaluate`/`predict` and the step overrides), `sequential`,
`compile_utils` (the loss and metric containers), `data_adapter` (data into batches).
"""
from .sequential import Sequential
from .training import Model

__all__ = ['Model', 'Sequential']
