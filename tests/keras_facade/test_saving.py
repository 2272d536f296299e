"""torchk.keras' `Model.save`, `models.save_model` and `ModelCheckpoint` write `.keras` zips
that load back exactly (tf.keras 2.13+'s format; what TF's Keras makes of them is
tests/saving/test_keras_zip_writer.py)."""
import os
import zipfile

import numpy as np
import pytest

import torchk.keras as keras
from torchk.keras import backend as K

RNG = np.random.RandomState(0)
X = RNG.randn(64, 6).astype('float32')
Y = (X[:, 0] + X[:, 1] > 0).astype('int64')


def _trained_mlp():
    model = keras.Sequential([keras.layers.Dense(8, activation='relu', input_shape=(6,)),
                              keras.layers.BatchNormalization(),
                              keras.layers.Dense(2, activation='softmax')])
    model.compile(keras.optimizers.Adam(learning_rate=0.01),
                  keras.losses.SparseCategoricalCrossentropy(), metrics=['accuracy'])
    model.fit(X, Y, batch_size=16, epochs=2, verbose=0)
    return model


def _assert_same_state(model, loaded):
    for saved, read in zip(model.weights + model.optimizer.weights,
                           loaded.weights + loaded.optimizer.weights):
        assert np.array_equal(K.get_value(saved), K.get_value(read))


@pytest.mark.parametrize('filename,save_format', [('model.keras', None),
                                                  ('exported', 'keras')])
def test_save_writes_a_keras_zip_that_loads_back_exactly(tmp_path, filename, save_format):
    model = _trained_mlp()
    path = str(tmp_path / filename)
    model.save(path, save_format=save_format)
    assert zipfile.is_zipfile(path)
    loaded = keras.models.load_model(path)
    assert K.get_value(loaded.optimizer.iterations) == 8
    _assert_same_state(model, loaded)
    assert np.array_equal(loaded.predict(X), model.predict(X))
    model.train_on_batch(X, Y)
    loaded.train_on_batch(X, Y)
    np.testing.assert_allclose(loaded.predict(X), model.predict(X), rtol=1e-6, atol=1e-7)


def test_save_model_without_optimizer(tmp_path):
    model = _trained_mlp()
    path = str(tmp_path / 'model.keras')
    keras.models.save_model(model, path, include_optimizer=False)
    loaded = keras.models.load_model(path, compile=False)
    assert np.array_equal(loaded.predict(X), model.predict(X))


def test_model_checkpoint_writes_keras_zips(tmp_path):
    model = _trained_mlp()
    path = str(tmp_path / 'checkpoint-{epoch:02d}.keras')
    model.fit(X, Y, batch_size=16, epochs=2, verbose=0,
              callbacks=[keras.callbacks.ModelCheckpoint(path)])
    last = str(tmp_path / 'checkpoint-02.keras')
    assert zipfile.is_zipfile(str(tmp_path / 'checkpoint-01.keras'))
    loaded = keras.models.load_model(last)
    _assert_same_state(model, loaded)


def test_keras_path_with_another_save_format_is_refused(tmp_path):
    model = _trained_mlp()
    with pytest.raises(ValueError, match=r"ends in '.keras', the zip format, but "
                                         r"save_format='h5'"):
        model.save(str(tmp_path / 'model.keras'), save_format='h5')


ZIPS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fixtures',
                    'tf_keras', 'zips')
# fixture name: (optimizer class, the tf.keras arguments it was saved with)
TF_KERAS_OPTIMIZERS = {
    'optimizer_adamw': ('AdamW', {'weight_decay': 0.1}),
    'optimizer_rmsprop_momentum_centered': ('RMSprop', {'momentum': 0.9, 'centered': True}),
    'optimizer_adagrad': ('Adagrad', {'initial_accumulator_value': 0.3}),
    'optimizer_sgd_weight_decay': ('SGD', {'weight_decay': 0.05}),
}


@pytest.mark.parametrize('dialect', ['tf_keras-2.21.0', 'tf.keras-2.15.1'])
@pytest.mark.parametrize('name', sorted(TF_KERAS_OPTIMIZERS))
@pytest.mark.parametrize('suffix', ['.keras', '.h5'])
def test_tf_keras_optimizer_arguments_load_and_train_as_tensorflow(dialect, name, suffix):
    """A tf.keras file whose optimizer has arguments Keras 2.3.1's lacks loads through
    torchk.keras with them and its state: the next step is TensorFlow's."""
    path = os.path.join(ZIPS, dialect, name + suffix)
    data = dict(np.load(os.path.join(ZIPS, dialect, name + '.npz')))
    model = keras.models.load_model(path)
    class_name, arguments = TF_KERAS_OPTIMIZERS[name]
    assert type(model.optimizer).__name__ == class_name
    for key, value in arguments.items():
        assert getattr(model.optimizer, key) == pytest.approx(value)
    assert K.get_value(model.optimizer.iterations) == 1
    np.testing.assert_allclose(model.predict(data['x0']), data['pred0'], rtol=1e-5, atol=1e-6)
    model.train_on_batch(data['x0'], data['y0'])
    np.testing.assert_allclose(model.predict(data['x0']), data['step0'], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('optimizer', [
    lambda: keras.optimizers.AdamW(0.01, weight_decay=0.1),
    lambda: keras.optimizers.RMSprop(0.01, momentum=0.9, centered=True),
    lambda: keras.optimizers.Adagrad(0.1, initial_accumulator_value=0.3),
], ids=['adamw', 'rmsprop_momentum_centered', 'adagrad'])
@pytest.mark.parametrize('filename', ['model.keras', 'model.h5'])
def test_tf_keras_optimizer_arguments_save_and_load_back(tmp_path, optimizer, filename):
    model = keras.Sequential([keras.layers.Dense(4, activation='tanh', input_shape=(6,)),
                              keras.layers.Dense(1)])
    model.compile(optimizer(), 'mse')
    target = X.sum(axis=1, keepdims=True)
    model.fit(X, target, batch_size=16, epochs=1, verbose=0)
    path = str(tmp_path / filename)
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    _assert_same_state(model, loaded)
    model.train_on_batch(X, target)
    loaded.train_on_batch(X, target)
    np.testing.assert_allclose(loaded.predict(X), model.predict(X), rtol=1e-6, atol=1e-7)


@keras.utils.register_keras_serializable('torchk_test')
class _TwoDense(keras.Model):
    """TF's "Introduction to modules" guide's model: no get_config of its own."""

    def __init__(self, units=3, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.units = units
        self.first = keras.layers.Dense(units)
        self.second = keras.layers.Dense(2)

    def call(self, x):
        return self.second(self.first(x))


def test_a_subclassed_model_of_basic_arguments_saves_and_loads_by_them(tmp_path):
    model = _TwoDense(units=4, name='the_model')
    x = np.array([[2.0, 2.0, 2.0]], 'float32')
    expected = model(x).numpy()
    assert model.get_config() == {'units': 4, 'name': 'the_model', 'trainable': True,
                                  'dtype': 'float32'}
    model.save(str(tmp_path / 'model.keras'))
    loaded = keras.models.load_model(str(tmp_path / 'model.keras'))
    assert type(loaded) is _TwoDense and loaded.units == 4 and loaded.name == 'the_model'
    np.testing.assert_allclose(loaded(x).numpy(), expected, rtol=1e-6)


def test_a_subclassed_model_of_other_arguments_still_needs_a_config():
    model = _TwoDense(units=np.int64(3))
    with pytest.raises(NotImplementedError):
        model.get_config()
