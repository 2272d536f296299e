"""tf.keras' initializers where Keras 2.3.1's differ (torchk/keras/initializers.py)."""
import numpy as np

import torchk.keras as keras


def test_no_initializer_is_add_weights_default():
    """TF's imbalanced-data tutorial builds `Dense(1, bias_initializer=None)`: tf.keras'
    `initializers.get(None)` is None and `add_weight` then draws from glorot_uniform (limit
    sqrt(6 / (1 + 1)) for a bias of one unit); the configuration keeps None."""
    assert keras.initializers.get(None) is None
    keras.utils.set_random_seed(0)
    layer = keras.layers.Dense(1, bias_initializer=None)
    layer.build((None, 3))
    bias = layer.get_weights()[1]
    assert bias.shape == (1,) and 0 < abs(bias[0]) <= np.sqrt(3.)
    assert layer.get_config()['bias_initializer'] is None
    assert keras.layers.Dense.from_config(layer.get_config()).bias_initializer is None
