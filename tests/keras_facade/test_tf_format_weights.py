"""`Model.save_weights` / `load_weights` in TF's checkpoint format, as tf.keras 2 writes and
reads them: weights written by tf_keras read with its values (tests/fixtures/tf_core/weights,
made by tests/fixtures/make_tf_core_api.py from tests/core_api_cases.py), the optimizer's
state with them, torchk's own files read back, and `.h5` paths still HDF5."""
import os

import numpy as np
import pytest

import torchk.keras as keras
import torchk.tf as tf
from core_api_cases import X, Y, keras_models, trained_keras_model

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        'fixtures', 'tf_core')
MODELS = sorted(keras_models(tf))


@pytest.fixture(scope='module')
def tf_values():
    return np.load(os.path.join(FIXTURES, 'weights.npz'))


@pytest.mark.parametrize('name', MODELS)
def test_weights_written_by_tf_keras(name, tf_values):
    model = keras_models(tf)[name]()
    status = model.load_weights(os.path.join(FIXTURES, 'weights', name, 'ckpt'))
    np.testing.assert_allclose(model.predict(X), tf_values['%s|predictions' % name],
                               rtol=1e-5, atol=1e-6)
    for i, weight in enumerate(model.get_weights()):
        np.testing.assert_array_equal(weight, tf_values['%s|weights|%d' % (name, i)])
    model.train_on_batch(X, Y)  # the optimizer's slots are made, with the saved values
    status.assert_consumed()
    # Adam moves a weight whose gradient is near zero by lr * m / sqrt(v), a ratio of two
    # roundings: its step (1e-3) may differ by a few percent from TF's with the summation
    # order of the backward (threads), hence the absolute tolerance on the stepped weights.
    for i, weight in enumerate(model.trainable_variables):
        np.testing.assert_allclose(weight.numpy(), tf_values['%s|after_step|%d' % (name, i)],
                                   rtol=1e-5, atol=5e-5)


@pytest.mark.parametrize('name', MODELS)
def test_torchk_weights_round_trip(name, tmp_path):
    model = trained_keras_model(tf, name)
    path = str(tmp_path / 'weights' / 'ckpt')
    model.save_weights(path)
    assert os.path.isfile(path + '.index') and not os.path.exists(path)
    assert tf.train.latest_checkpoint(str(tmp_path / 'weights')) == path
    loaded = keras_models(tf)[name]()
    loaded.load_weights(str(tmp_path / 'weights'))  # a folder: its latest checkpoint
    np.testing.assert_allclose(loaded.predict(X), model.predict(X), rtol=1e-6)
    model.train_on_batch(X, Y)
    loaded.train_on_batch(X, Y)
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_keys_are_tf_keras_keys(tmp_path):
    model = trained_keras_model(tf, 'sequential')
    model.save_weights(str(tmp_path / 'ckpt'))
    ours = tf.train.list_variables(str(tmp_path / 'ckpt'))
    assert ours == tf.train.list_variables(os.path.join(FIXTURES, 'weights', 'sequential'))
    assert ('layer_with_weights-1/moving_mean/.ATTRIBUTES/VARIABLE_VALUE', [5]) in ours


def test_h5_paths_stay_hdf5_and_by_name_is_refused(tmp_path):
    model = trained_keras_model(tf, 'functional')
    model.save_weights(str(tmp_path / 'w.h5'))
    with open(str(tmp_path / 'w.h5'), 'rb') as f:
        assert f.read(8) == b'\x89HDF\r\n\x1a\n'
    model.save_weights(str(tmp_path / 'w'), save_format='tf')
    with pytest.raises(NotImplementedError, match='by_name=True'):
        model.load_weights(str(tmp_path / 'w'), by_name=True)
    with pytest.raises(tf.errors.NotFoundError):
        model.load_weights(str(tmp_path / 'nothing'))


def test_model_checkpoint_writes_tf_checkpoints(tmp_path):
    """TF's "Save and load models" tutorial: weights every epoch, then the latest loaded."""
    directory = str(tmp_path / 'training')
    model = keras_models(tf)['functional']()
    callback = keras.callbacks.ModelCheckpoint(os.path.join(directory, 'cp-{epoch:04d}.ckpt'),
                                               save_weights_only=True)
    model.fit(X, Y, epochs=2, verbose=0, callbacks=[callback])
    latest = tf.train.latest_checkpoint(directory)
    assert latest == os.path.join(directory, 'cp-0002.ckpt')
    fresh = keras_models(tf)['functional']()
    fresh.load_weights(latest).assert_existing_objects_matched()
    np.testing.assert_allclose(fresh.predict(X), model.predict(X), rtol=1e-6)
