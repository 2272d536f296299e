"""torchk.applications' models train (the training loss of a fixed batch falls), save and
load (.h5), stochastic depth and dropout included."""
import numpy as np
import pytest

import keras

import torchk.applications as applications
from torchk.applications import convnext

IMAGES = np.random.RandomState(0).uniform(0, 255, (8, 32, 32, 3)).astype('float32')
LABELS = np.arange(8) % 3


@pytest.mark.parametrize('build, custom_objects', [
    (lambda: applications.EfficientNetB0(weights=None, input_shape=(32, 32, 3), classes=3), {}),
    # ConvNeXt with stochastic depth: the layer scales and dropped paths train too.
    (lambda: convnext.ConvNeXt((1, 1, 2, 1), (16, 32, 48, 64), drop_path_rate=0.3, classes=3,
                               input_shape=(32, 32, 3), model_name='convnext_small_test'),
     {'LayerScale': convnext.LayerScale, 'StochasticDepth': convnext.StochasticDepth}),
], ids=['efficientnet_b0', 'convnext_stochastic_depth'])
def test_trains_saves_and_loads(build, custom_objects, tmp_path):
    model = build()
    model.compile(keras.optimizers.Adam(1e-3), 'sparse_categorical_crossentropy')
    first = model.evaluate(IMAGES, LABELS, verbose=0)
    history = model.fit(IMAGES, LABELS, batch_size=8, epochs=5, verbose=0)
    losses = history.history['loss']
    assert np.isfinite(losses).all() and np.isfinite(first)
    # The training-mode loss falls. evaluate's need not after 5 steps: the batch-norm
    # moving statistics have barely moved (tf_keras' EfficientNetB0 on this batch, seeds
    # 0-2: evaluate 1.089, 1.162, 1.097 from 1.0986; the training loss fell in each).
    assert losses[-1] < losses[0]
    path = str(tmp_path / 'model.h5')
    model.save(path)
    loaded = keras.models.load_model(path, custom_objects=custom_objects)
    np.testing.assert_allclose(loaded.predict(IMAGES), model.predict(IMAGES), rtol=1e-5,
                               atol=1e-6)
    loaded.fit(IMAGES, LABELS, batch_size=8, epochs=1, verbose=0)


def test_stochastic_depth_drops_whole_samples_in_training_only():
    from keras import backend as K
    layer = convnext.StochasticDepth(0.5)
    x = K.placeholder((None, 4, 4, 2))
    run = K.function([x, K.learning_phase()], [layer(x)])
    ones = np.ones((64, 4, 4, 2), 'float32')
    trained = run([ones, 1])[0]
    per_sample = trained.reshape(64, -1)
    assert set(np.unique(per_sample)) <= {0., 2.}
    assert (per_sample == per_sample[:, :1]).all()
    assert 0 < (per_sample[:, 0] == 0).sum() < 64
    np.testing.assert_array_equal(run([ones, 0])[0], ones)
