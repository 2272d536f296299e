"""torchk.keras' modules: tf.keras names over Keras 2.3.1's and torchk's objects."""
import numpy as np
import pytest

import torchk.keras as keras
from torchk import layers as torchk_layers


@pytest.mark.parametrize('name, scale, mode, distribution', [
    ('GlorotUniform', 1., 'fan_avg', 'uniform'), ('GlorotNormal', 1., 'fan_avg', 'normal'),
    ('HeUniform', 2., 'fan_in', 'uniform'), ('HeNormal', 2., 'fan_in', 'normal'),
    ('LecunUniform', 1., 'fan_in', 'uniform'), ('LecunNormal', 1., 'fan_in', 'normal')])
def test_initializer_classes(name, scale, mode, distribution):
    config = getattr(keras.initializers, name)(seed=3).get_config()
    assert config == dict(scale=scale, mode=mode, distribution=distribution, seed=3)


def test_regularizer_classes():
    weights = keras.backend.variable(np.array([[1., -2.]], dtype='float32'))
    assert float(keras.backend.eval(keras.regularizers.L2()(weights))) == pytest.approx(0.05)
    assert float(keras.backend.eval(keras.regularizers.L1(0.5)(weights))) == pytest.approx(1.5)


def test_star_imports_and_torchk_layers():
    names = {}
    exec('from torchk.keras.layers import *', names)
    assert names['Dense'] is keras.layers.Dense
    assert names['LayerNormalization'] is torchk_layers.LayerNormalization
    assert names['GlobalAveragePooling2D'] is torchk_layers.GlobalAveragePooling2D
    assert 'Model' not in names
    preprocessing = keras.layers.experimental.preprocessing
    assert preprocessing.Rescaling is keras.layers.Rescaling
    with pytest.raises(AttributeError, match='NoSuchLayer'):
        keras.layers.NoSuchLayer


def test_keras_gets_tf_keras_only_namespaces():
    """TF's "Introduction to modules" guide (TF 2.15: `import keras` is tf.keras) decorates
    its model with `keras.saving.register_keras_serializable()`."""
    import importlib
    import keras as keras_package
    for name in ('saving', 'mixed_precision', 'experimental'):
        assert getattr(keras_package, name) is importlib.import_module('torchk.keras.' + name)
    assert keras_package.layers.Dense is keras.layers.Dense  # its own names are unchanged
    with pytest.raises(AttributeError, match="has no attribute 'estimator'"):
        keras_package.estimator
