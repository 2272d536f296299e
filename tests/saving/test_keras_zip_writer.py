"""`.keras` zips written by torchk (`torchk.saving.keras_zip_writer`): torchk loads them back
exactly, and they compute and train as TensorFlow's Keras computed and trained them (fixtures:
tests/fixtures/make_torchk_keras_zips.py, whose zips tf.keras 2.15 and tf_keras 2.21 loaded)."""
import json
import os
import zipfile

import numpy as np
import pytest

import keras
from keras import backend as K

from torchk.saving import keras_zip, keras_zip_writer

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fixtures',
                    'torchk_zips')
DIALECTS = ['tf.keras-2.15.1', 'tf_keras-2.21.0']
MODELS = ['mlp_batchnorm', 'cnn', 'text_rnn_masked', 'two_inputs', 'nested_separable',
          'wrappers_nested', 'attention', 'op_layers']


def _data(name):
    data = dict(np.load(os.path.join(HERE, name + '.npz')))
    xs = [data['x%d' % i] for i in range(len([k for k in data if k.startswith('x')]))]
    return (xs if len(xs) > 1 else xs[0]), data


def _assert_close(actual, expected, relative):
    assert np.abs(actual - expected).max() <= relative * np.abs(expected).max()


def _config(path):
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read('config.json'))


@pytest.mark.parametrize('dialect', DIALECTS)
@pytest.mark.parametrize('name', MODELS)
def test_torchk_zip_predicts_and_trains_as_tensorflow_did(dialect, name):
    x, data = _data(name)
    tf_run = dict(np.load(os.path.join(HERE, '%s.%s.npz' % (name, dialect))))
    model = keras_zip.load(os.path.join(HERE, name + '.keras'))
    _assert_close(model.predict(x), tf_run['pred0'], 1e-5)
    assert K.get_value(model.optimizer.iterations) == tf_run['iterations'] == 1
    model.train_on_batch(x, data['y0'])
    _assert_close(model.predict(x), tf_run['step0'], 1e-4)


@pytest.mark.parametrize('name', MODELS)
def test_round_trip_is_exact_and_writes_what_tensorflow_loaded(name, tmp_path):
    original = os.path.join(HERE, name + '.keras')
    model = keras_zip.load(original)
    path = str(tmp_path / 'again.keras')
    keras_zip_writer.save(model, path)
    assert _config(path) == _config(original)
    loaded = keras.models.load_model(path)
    for saved, read in zip(model.weights + model.optimizer.weights,
                           loaded.weights + loaded.optimizer.weights):
        assert np.array_equal(K.get_value(saved), K.get_value(read))
    x, _ = _data(name)
    assert np.array_equal(loaded.predict(x), model.predict(x))


def _mlp():
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(4,), activation='relu'),
                              keras.layers.Dense(2)])
    model.compile(keras.optimizers.Adam(learning_rate=0.01), 'mse', metrics=['mae'])
    return model


def test_untrained_model_loads_compiled_with_a_fresh_optimizer(tmp_path):
    path = str(tmp_path / 'fresh.keras')
    model = _mlp()
    model.save(path)  # multi-backend Keras' Model.save on a .keras path writes the zip
    assert zipfile.is_zipfile(path)
    config = _config(path)
    assert config['compile_config']['optimizer']['config']['learning_rate'] == pytest.approx(
        0.01)
    assert config['compile_config']['metrics'] == ['mae']
    loaded = keras.models.load_model(path)
    assert K.get_value(loaded.optimizer.iterations) == 0
    x = np.random.RandomState(0).normal(size=(8, 4)).astype('float32')
    y = np.zeros((8, 2), 'float32')
    model.train_on_batch(x, y)
    loaded.train_on_batch(x, y)
    np.testing.assert_allclose(loaded.predict(x), model.predict(x), rtol=1e-6, atol=1e-7)


def test_without_optimizer_loads_uncompiled(tmp_path):
    path = str(tmp_path / 'weights_only.keras')
    model = _mlp()
    keras_zip_writer.save(model, path, include_optimizer=False)
    assert 'compile_config' not in _config(path)
    with pytest.warns(UserWarning, match='No training configuration'):
        loaded = keras.models.load_model(path)
    assert loaded.optimizer is None


def test_layer_tensorflow_lacks_is_refused_by_name(tmp_path):
    import torch
    from torchk.interop import TorchModule
    inputs = keras.Input((4,))
    outputs = TorchModule(torch.nn.Linear(4, 2), name='torch_linear')(inputs)
    model = keras.Model(inputs, outputs)
    path = tmp_path / 'torch.keras'
    with pytest.raises(ValueError, match="Layer 'torch_linear' is a TorchModule, which "
                                         "tf.keras has no class for"):
        keras_zip_writer.save(model, str(path))
    assert not path.exists()


def test_optimizer_decay_is_refused(tmp_path):
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])
    model.compile(keras.optimizers.SGD(learning_rate=0.1, decay=0.01), 'mse')
    with pytest.raises(ValueError, match='SGD has decay=0.0099'):
        keras_zip_writer.save(model, str(tmp_path / 'decay.keras'))


@pytest.mark.parametrize('name', ['elementwise_ops', 'shape_ops', 'reduction_ops'])
def test_op_layers_are_written_in_tf_keras_node_form(name, tmp_path):
    """TFOpLambda and SlicingOpLambda nodes come out as tf.keras wrote them in its own file
    (tests/fixtures/tf_keras/ops, made by tf_keras), and load back computing the same."""
    import h5py
    ops = os.path.join(os.path.dirname(HERE), 'tf_keras', 'ops')
    with h5py.File(os.path.join(ops, name + '.h5'), 'r') as f:
        tf_config = json.loads(f.attrs['model_config'])
    model = keras.models.load_model(os.path.join(ops, name + '.h5'), compile=False)
    path = str(tmp_path / (name + '.keras'))
    keras_zip_writer.save(model, path)
    written = {layer['name']: layer for layer in _config(path)['config']['layers']}
    op_layers = [layer for layer in tf_config['config']['layers']
                 if layer['class_name'] in ('TFOpLambda', 'SlicingOpLambda')]
    assert op_layers
    for layer in op_layers:
        assert written[layer['name']]['inbound_nodes'] == layer['inbound_nodes']
        assert written[layer['name']]['config']['function'] == layer['config']['function']
    data = dict(np.load(os.path.join(ops, name + '.npz')))
    inputs = [data['input_%d' % i] for i in range(len(model.inputs))]
    for expected, actual in zip(model.predict(inputs),
                                keras_zip.load(path, compile=False).predict(inputs)):
        assert np.array_equal(expected, actual)
