"""tf_keras models made of torchk.layers' layers, op layers and activations: built on torchk
from the configurations tf_keras saved, with TF's weights, predict as TF did, train, and
save and load again (`tests/fixtures/make_tf_keras_ops.py` made the fixtures)."""
import json
import os

import h5py
import numpy as np
import pytest

import keras
from keras import backend as K

from tf_keras_fixtures import OPS_DIR, recipe_weights

SMALL_MODELS = ['elementwise_ops', 'shape_ops', 'reduction_ops', 'hard_swish_block',
                'preprocessing', 'conv1d_transpose', 'activations_and_pooling',
                'image_and_conv_ops']
APPLICATIONS = ['efficientnet_b0', 'mobilenet_v3_small']
TRAINABLE = ['hard_swish_block', 'conv1d_transpose', 'activations_and_pooling'] + APPLICATIONS


def _h5_fixture(name):
    """The model of `<name>.h5` on torchk, with the file's weights set by layer and order."""
    with h5py.File(os.path.join(OPS_DIR, name + '.h5'), 'r') as f:
        config = json.loads(f.attrs['model_config'])
        groups = f['model_weights']
        weights = {layer: [np.asarray(groups[layer][weight])
                           for weight in groups[layer].attrs['weight_names']]
                   for layer in groups.attrs['layer_names']}
    model = keras.models.model_from_config(config)
    for layer in model.layers:
        if layer.weights:
            layer.set_weights(weights[layer.name])
    return model


def _application(name):
    """The keras.applications model `name` on torchk, with the recipe's weights."""
    with open(os.path.join(OPS_DIR, name + '.json')) as f:
        config = json.load(f)
    model = keras.models.model_from_config(config)
    for layer in model.layers:
        if layer.weights:
            shapes = [K.int_shape(w) for w in layer.weights]
            layer.set_weights(recipe_weights(type(layer).__name__, layer.name, shapes))
    return model


def _fixture(name):
    model = _application(name) if name in APPLICATIONS else _h5_fixture(name)
    arrays = np.load(os.path.join(OPS_DIR, name + '.npz'))
    inputs = [arrays['input_%d' % i] for i in range(len(model.inputs))]
    outputs = [arrays['output_%d' % i] for i in range(len(model.outputs))]
    return model, inputs, outputs


def _predictions(model, inputs):
    predictions = model.predict(inputs)
    return predictions if isinstance(predictions, list) else [predictions]


def _assert_matches(actual, expected, names):
    for output, (ours, theirs) in enumerate(zip(actual, expected)):
        assert ours.shape == theirs.shape, (names[output], ours.shape, theirs.shape)
        scale = max(1., float(np.abs(theirs).max()))
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5 * scale,
                                   err_msg='output %d (%s)' % (output, names[output]))


def _output_names(model):
    return [tensor._keras_history[0].name for tensor in model.outputs]


@pytest.mark.parametrize('name', SMALL_MODELS + APPLICATIONS)
def test_predicts_as_tf(name):
    model, inputs, expected = _fixture(name)
    _assert_matches(_predictions(model, inputs), expected, _output_names(model))


@pytest.mark.parametrize('name', SMALL_MODELS)
def test_config_round_trip_predicts_the_same(name, tmp_path):
    model, inputs, expected = _fixture(name)
    rebuilt = keras.models.Model.from_config(model.get_config())
    rebuilt.set_weights(model.get_weights())
    _assert_matches(_predictions(rebuilt, inputs), expected, _output_names(model))
    path = str(tmp_path / 'model.h5')
    model.save(path)
    loaded = keras.models.load_model(path)
    _assert_matches(_predictions(loaded, inputs), expected, _output_names(model))


@pytest.fixture
def inference_phase(request):
    """Learning phase 0 for the applications: their batch normalization then uses its moving
    statistics in a training step (batch statistics of 2 samples at 1 x 1 pixels diverge)."""
    if request.node.callspec.params['name'] in APPLICATIONS:
        K.set_learning_phase(0)
    yield
    K.clear_session()


@pytest.mark.parametrize('name', TRAINABLE)
def test_one_training_step_lowers_the_loss(name, inference_phase):
    model, inputs, expected = _fixture(name)
    targets = [np.zeros_like(y) for y in expected]
    model.compile(keras.optimizers.SGD(1e-3), 'mse')
    before = model.evaluate(inputs, targets, verbose=0)
    model.train_on_batch(inputs, targets)
    after = model.evaluate(inputs, targets, verbose=0)
    before, after = np.sum(before), np.sum(after)
    assert np.isfinite(after) and after < before
