"""tf.keras 2.15's `OrthogonalRegularizer` (torchk/keras/regularizers.py) against
tf_keras 2.21's numbers and the formula in numpy."""
import numpy as np
import pytest

import torchk.keras as keras

WEIGHT = np.random.RandomState(0).randn(5, 4).astype('float32')
# tf_keras 2.21: OrthogonalRegularizer(0.1, mode)(tf.constant(WEIGHT)).
TF_PENALTY = {'rows': 0.05557198077440262, 'columns': 0.04980168119072914}


def _numpy_penalty(weight, factor, mode):
    vectors = weight if mode == 'rows' else weight.T
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    similarity = vectors @ vectors.T
    size = len(vectors)
    off_diagonal = np.abs(similarity * (1 - np.eye(size))).sum()
    return factor * 0.5 * off_diagonal / (size * (size - 1) / 2)


@pytest.mark.parametrize('mode', ['rows', 'columns'])
def test_orthogonal_penalty_is_tfs(mode):
    penalty = keras.regularizers.OrthogonalRegularizer(0.1, mode)(
        keras.backend.constant(WEIGHT))
    actual = float(keras.backend.eval(penalty))
    np.testing.assert_allclose(actual, TF_PENALTY[mode], rtol=1e-6)
    np.testing.assert_allclose(actual, _numpy_penalty(WEIGHT, 0.1, mode), rtol=1e-5)


def test_a_dense_kernel_regularized_and_saved(tmp_path):
    inputs = keras.Input((4,))
    dense = keras.layers.Dense(3, kernel_regularizer=keras.regularizers.orthogonal_regularizer(
        0.5, mode='columns'))
    model = keras.Model(inputs, dense(inputs))
    model.compile('sgd', 'mse')
    kernel = dense.get_weights()[0]
    np.testing.assert_allclose(float(keras.backend.eval(model.losses[0])),
                               _numpy_penalty(kernel, 0.5, 'columns'), rtol=1e-5)
    model.save(str(tmp_path / 'model.h5'))
    loaded = keras.models.load_model(str(tmp_path / 'model.h5'))
    assert loaded.layers[1].kernel_regularizer.get_config() == {'factor': 0.5,
                                                                'mode': 'columns'}


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match='mode'):
        keras.regularizers.OrthogonalRegularizer(mode='diagonal')
    with pytest.raises(ValueError, match='2-D'):
        keras.regularizers.OrthogonalRegularizer()(keras.backend.ones((2, 2, 2)))


def test_reuters_label_names():
    names = keras.datasets.reuters.get_label_names()
    assert len(names) == 46 and len(set(names)) == 46
    assert (names[0], names[3], names[45]) == ('cocoa', 'earn', 'lead')
