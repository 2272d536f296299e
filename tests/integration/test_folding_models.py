"""A MobileNet-style Keras model predicted with and without the inference folding pass
(torchk/passes/folding.py), between training steps that change every folded weight."""
import numpy as np

import keras
from keras import backend as K
from keras import layers
from torchk.passes import folding


def _model():
    inputs = layers.Input((12, 12, 3))
    x = layers.ZeroPadding2D(((0, 1), (0, 1)))(inputs)
    x = layers.Conv2D(8, 3, strides=2, use_bias=False)(x)
    x = layers.BatchNormalization(epsilon=1e-3, momentum=0.5)(x)
    x = layers.ReLU(6.)(x)
    shortcut = x
    x = layers.DepthwiseConv2D(3, padding='same', depth_multiplier=1, use_bias=False)(x)
    x = layers.BatchNormalization(momentum=0.5)(x)
    x = layers.ReLU(6.)(x)
    x = layers.Conv2D(8, 1, use_bias=False)(x)
    x = layers.BatchNormalization(momentum=0.5)(x)
    x = layers.Add()([shortcut, x])
    x = layers.Conv2D(6, 3, padding='same', activation='relu')(x)
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(3, activation='softmax')(x)
    model = keras.models.Model(inputs, outputs)
    model.compile('adam', 'categorical_crossentropy')
    return model


def test_folded_predictions_follow_training():
    rng = np.random.RandomState(0)
    x = rng.rand(16, 12, 12, 3).astype('float32')
    y = np.eye(3, dtype='float32')[rng.randint(0, 3, 16)]
    model = _model()
    folding.set_enabled(False)
    try:
        unfolded = K.function(model.inputs + [K.learning_phase()], model.outputs)
        unfolded([x, 0])
    finally:
        folding.set_enabled(None)
    model.predict_on_batch(x)
    fused = [c for c in model.predict_function._program.__globals__.values()
             if isinstance(c, folding.FusedConvolution)]
    assert len(fused) == 4
    for _ in range(3):
        np.testing.assert_allclose(model.predict(x, batch_size=5), unfolded([x, 0])[0],
                                   rtol=1e-5, atol=1e-6)
        model.train_on_batch(x, y)
