"""The layers of `torchk.layers` against TensorFlow's Keras 2, with fixtures that tf_keras made
(tests/fixtures/make_tf_keras_layers.py): each fixture's model is rebuilt in Keras 2.3.1 code
from the layer configurations tf_keras saved, its weights are read from the `.h5` by layer and
order (with h5py, and with Keras 2.3.1's `load_weights`, by order and by name), and
predictions must match TF's within 1e-5 of the output scale; then the model trains,
its layers round-trip their configuration, and it saves and loads as a Keras 2.3.1 `.h5`.

Whole-file `keras.models.load_model` of these fixtures needs the translation of tf.keras'
configuration dialect (class `Functional`, serialized objects with `module`/`registered_name`,
dtype policies); `_keras2_config` below does the little of it that rebuilding one layer needs.
"""
import glob
import json
import os
import re

import h5py
import numpy as np
import pytest

import keras
from keras import initializers

import torchk.layers

FIXTURES = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'tf_keras', 'layers')
CASES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(FIXTURES, '*.h5')))
TORCHK_LAYERS = set(torchk.layers.layer_classes())
TENSOR_KWARGS = ('value', 'key', 'attention_mask')


def _keras2_object(value):
    """A tf.keras-serialized wrapped layer, initializer, regularizer or constraint as Keras
    2.3.1 reads it."""
    if not isinstance(value, dict) or 'class_name' not in value:
        return value
    name = value['class_name']
    if hasattr(keras.layers, name):
        return {'class_name': name, 'config': _keras2_config(value['config'])}
    if hasattr(initializers, name):
        return {'class_name': name, 'config': value['config']}
    return re.sub(r'(?<!^)(?=[A-Z])', '_', name).lower()


def _keras2_config(config):
    config = {key: _keras2_object(value) for key, value in config.items()}
    if isinstance(config.get('dtype'), dict):
        config['dtype'] = config['dtype']['config']['name']
    return config


def _rebuild(model_config):
    """The functional model of a tf_keras `model_config`, in Keras 2.3.1 calls: tensors that
    tf.keras passes as call keywords (`value`, `key`, `attention_mask`) join the input list
    (`key` is `value` when only a mask is given)."""
    tensors = {}
    layers = {}
    for spec in model_config['config']['layers']:
        name, config = spec['config']['name'], _keras2_config(spec['config'])
        if spec['class_name'] == 'InputLayer':
            tensors[name, 0] = [keras.Input(batch_shape=config['batch_input_shape'],
                                            dtype=config['dtype'], name=name)]
            continue
        layer = getattr(keras.layers, spec['class_name']).from_config(config)
        layers[name] = layer
        for index, node in enumerate(spec['inbound_nodes']):
            inputs = [tensors[ref[0], ref[1]][ref[2]] for ref in node]
            kwargs = dict(node[0][3])
            for key in TENSOR_KWARGS:
                ref = kwargs.pop(key, None)
                if ref is not None:
                    inputs.append(tensors[ref[0], ref[1]][ref[2]])
                elif key == 'key' and 'attention_mask' in kwargs:
                    inputs.append(inputs[-1])
            outputs = layer(inputs[0] if len(inputs) == 1 else inputs, **kwargs)
            tensors[name, index] = outputs if isinstance(outputs, list) else [outputs]
    inputs = [tensors[ref[0], ref[1]][ref[2]] for ref in model_config['config']['input_layers']]
    outputs = [tensors[ref[0], ref[1]][ref[2]]
               for ref in model_config['config']['output_layers']]
    return keras.Model(inputs, outputs), layers


def _load_case(case, weights='h5py'):
    """The fixture's model rebuilt in Keras 2.3.1, with TF's weights read by layer and order
    (`weights='h5py'`) or by Keras 2.3.1's own `load_weights` (`'keras'`, `'keras_by_name'`),
    its inputs, TF's outputs and its layers of torchk.layers."""
    path = os.path.join(FIXTURES, case + '.h5')
    with h5py.File(path, 'r') as f:
        model_config = json.loads(f.attrs['model_config'])
        model, layers = _rebuild(model_config)
        group = f['model_weights']
        if weights == 'h5py':
            for name, layer in layers.items():
                names = [n.decode() if isinstance(n, bytes) else n
                         for n in group[name].attrs['weight_names']]
                layer.set_weights([group[name][n][()] for n in names])
    if weights != 'h5py':
        model.load_weights(path, by_name=weights == 'keras_by_name')
    data = np.load(os.path.join(FIXTURES, case + '.npz'))
    inputs = [data['x%d' % i] for i in range(len(model.inputs))]
    outputs = [data['y%d' % i] for i in range(len(model.outputs))]
    return model, inputs, outputs, _tested_layers(model_config, layers)


def _tested_layers(model_config, layers):
    """(layer, tf.keras configuration) of each layer of torchk.layers in the model, wrapped
    (`Bidirectional`) or not."""
    tested = []
    for spec in model_config['config']['layers']:
        layer = layers.get(spec['config']['name'])
        if spec['class_name'] in TORCHK_LAYERS:
            tested.append((layer, spec['config']))
        elif spec['config'].get('layer', {}).get('class_name') in TORCHK_LAYERS:
            tested.append((layer.forward_layer, spec['config']['layer']['config']))
    return tested


def _predict(model, inputs):
    predictions = model.predict(inputs)
    return predictions if isinstance(predictions, list) else [predictions]


@pytest.mark.parametrize('case', CASES)
def test_predicts_as_tensorflow(case):
    model, inputs, expected, tested = _load_case(case)
    assert tested, 'the fixture holds no layer of torchk.layers'
    for got, want in zip(_predict(model, inputs), expected):
        scale = np.abs(want).max()
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * scale)


@pytest.mark.parametrize('weights', ['keras', 'keras_by_name'])
@pytest.mark.parametrize('case', CASES)
def test_keras_load_weights_reads_tf_keras_files(case, weights):
    model, inputs, expected, _ = _load_case(case, weights)
    for got, want in zip(_predict(model, inputs), expected):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize('case', CASES)
def test_configuration_has_tf_keras_keys_and_round_trips(case):
    tested = _load_case(case)[3]
    for layer, tf_config in tested:
        config = layer.get_config()
        assert set(config) == set(tf_config) - {'batch_input_shape'}
        assert type(layer).from_config(config).get_config() == config


@pytest.mark.parametrize('case', CASES)
def test_trains_and_saves_as_keras2_h5(case, tmp_path):
    model, inputs, expected, _ = _load_case(case)
    targets = [np.random.RandomState(0).normal(size=y.shape).astype('float32')
               for y in expected]
    model.compile('sgd', 'mse')
    before = model.evaluate(inputs, targets, verbose=0)
    weights = [w.copy() for w in model.get_weights()]
    model.train_on_batch(inputs, targets)
    after = model.evaluate(inputs, targets, verbose=0)
    assert np.ravel(after)[0] < np.ravel(before)[0]
    assert any(not np.array_equal(a, b) for a, b in zip(weights, model.get_weights()))
    path = str(tmp_path / 'model.h5')
    model.save(path)
    loaded = keras.models.load_model(path)
    for got, want in zip(_predict(loaded, inputs), _predict(model, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
