"""tf.keras 2's semantics that torchk gives Keras 2.3.1 whenever it is the backend, not only
under the tf.keras facade (`torchk.keras`, whose differences from Keras 2.3.1 are named
overrides of their own): overrides of Keras (`torchk.overrides`), each deliberately at the
backend's level, for the reason given.

- `flatten_any_rank`: `Flatten` takes inputs of rank 1 and 2 as tf.keras' does (`(batch, n)`
  stays, `(batch,)` becomes `(batch, 1)`), where Keras 2.3.1 asks for rank 3
  (layers/core.py:494). At the backend's level because `torchk.layers`' lookup layers, which
  multi-backend Keras code uses too, output the `(batch, classes)` encodings that tf.keras
  models flatten.
- `with_logs_dict`: callbacks' `on_train_begin` and the other begin and end hooks get a dict
  of logs (empty), not None, as tf.keras gives them. At the backend's level because callbacks
  written for tf.keras (`logs.keys()`) are passed to multi-backend Keras' `fit` too.

tf.keras' dtype policies are the backend's too (`torchk.mixed_precision`, for multi-backend
Keras scripts); their overrides are in that module.
"""
import functools
import sys

def flatten_any_rank(keras_init):
    """Override of `Flatten.__init__`: `Flatten` of inputs of rank 1 or 2 (tf.keras'), where
    Keras 2.3.1's input spec asks for rank 3 (layers/core.py:494); its computation already
    flattens any rank."""
    @functools.wraps(keras_init)
    def __init__(self, *args, **kwargs):
        keras_init(self, *args, **kwargs)
        self.input_spec = sys.modules['keras.layers.core'].InputSpec(min_ndim=1)
    return __init__


def with_logs_dict(hook):
    """Override of `CallbackList`'s `on_train_begin`, `on_test_end` and the other begin and
    end hooks: the callbacks get a dict of logs, empty where Keras passed None (callbacks
    written for tf.keras, which passes a dict, call `logs.keys()`)."""
    @functools.wraps(hook)
    def with_logs_dict(self, logs=None):
        return hook(self, {} if logs is None else logs)
    return with_logs_dict
