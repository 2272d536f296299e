"""tf.keras' structured inputs and outputs (torchk.keras.engine.functional, compile_utils):
models whose inputs and outputs are dicts, tuples and nested lists, called, compiled, fit,
evaluated, predicted, saved and loaded as in tf.keras; TensorFlow's numbers and files from
tests/fixtures/make_tf_keras_structures.py."""
import json
import os

import numpy as np
import pytest

import torchk.keras as keras
import torchk.tf as tf

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures', 'tf_keras',
                    'structures')
DATA = np.load(os.path.join(HERE, 'data.npz'))
with open(os.path.join(HERE, 'results.json')) as _file:
    TF = json.load(_file)
X = {key: DATA['x_' + key] for key in ('text', 'kind')}
Y = {key: DATA['y_' + key] for key in ('score', 'cls')}
LOSSES = {'score': 'mse', 'cls': 'sparse_categorical_crossentropy'}
METRICS = {'cls': ['accuracy'], 'score': ['mae']}
LOSS_WEIGHTS = {'score': 2., 'cls': 1.}


def _functional_model():
    text = keras.Input(shape=(3,), name='text_in')
    kind = keras.Input(shape=(2,), name='kind_in')
    hidden = keras.layers.Dense(4, activation='relu', name='hidden')(
        keras.layers.Concatenate()([text, kind]))
    score = keras.layers.Dense(1, name='score_layer')(hidden)
    cls = keras.layers.Dense(3, activation='softmax', name='cls_layer')(hidden)
    model = keras.Model(inputs={'text': text, 'kind': kind},
                        outputs={'score': score, 'cls': cls})
    model.set_weights([DATA['w%d' % i] for i in range(len(model.get_weights()))])
    return model


class Subclassed(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(4, activation='relu')
        self.score = keras.layers.Dense(1)
        self.cls = keras.layers.Dense(3, activation='softmax')

    def call(self, inputs):
        hidden = self.hidden(tf.concat([inputs['text'], inputs['kind']], axis=-1))
        return {'score': self.score(hidden), 'cls': self.cls(hidden)}


def _assert_history(history, expected):
    assert sorted(history.history) == sorted(expected)
    for key, values in expected.items():
        np.testing.assert_allclose(history.history[key], values, rtol=1e-5, err_msg=key)


def test_a_model_of_dicts_is_flat_in_tf_nest_order_and_called_with_dicts():
    model = _functional_model()
    assert [x.name for x in model.inputs] == TF['inputs']
    assert model.output_names == TF['output_names']
    assert sorted(model.input) == ['kind', 'text'] and sorted(model.output) == ['cls', 'score']
    config = model.get_config()
    assert (config['input_layers'], config['output_layers']) == (TF['input_layers'],
                                                                  TF['output_layers'])
    outputs = model(X)
    assert sorted(outputs) == ['cls', 'score']
    assert outputs['cls'].shape == (20, 3) and outputs['score'].shape == (20, 1)
    by_input_names = model({'text_in': X['text'], 'kind_in': X['kind']})
    np.testing.assert_allclose(by_input_names['cls'], outputs['cls'])
    with pytest.raises(ValueError, match=r"takes the inputs \['kind', 'text'\]"):
        model({'text': X['text']})


@pytest.mark.parametrize('run', ['compiled', 'eager', 'dataset'])
def test_fit_evaluate_predict_on_dicts_as_tf_keras(run):
    """Losses, metrics and loss weights by output key; data as dicts of arrays or a Dataset
    of dict elements; each output's loss weighted by batch size (the last batch is short)."""
    model = _functional_model()
    model.compile(keras.optimizers.SGD(0.05), loss=LOSSES, metrics=METRICS,
                  loss_weights=LOSS_WEIGHTS, run_eagerly=run == 'eager')
    if run == 'dataset':
        history = model.fit(tf.data.Dataset.from_tensor_slices((X, Y)).batch(8), epochs=2,
                            verbose=0)
    else:
        history = model.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    _assert_history(history, TF['history_' + run])
    evaluated = model.evaluate(X, Y, batch_size=8, verbose=0, return_dict=True)
    assert evaluated == pytest.approx(TF['evaluate'], rel=1e-5)
    predicted = model.predict(X, verbose=0)
    assert sorted(predicted) == ['cls', 'score']
    for key, values in TF['predict'].items():
        np.testing.assert_allclose(predicted[key], values, rtol=1e-5, atol=1e-6)


def test_a_subclassed_model_takes_and_returns_dicts():
    model = Subclassed()
    model(X)
    model.set_weights([DATA['s%d' % i] for i in range(len(model.get_weights()))])
    model.compile(keras.optimizers.SGD(0.05), loss=LOSSES, metrics={'cls': 'accuracy'})
    _assert_history(model.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0),
                    TF['history_subclassed'])
    inputs = {'text': keras.Input((3,)), 'kind': keras.Input((2,))}
    functional = keras.Model(inputs, model(inputs))
    expected = model.predict(X, verbose=0)
    outputs = functional(X)
    for key in ('score', 'cls'):
        np.testing.assert_allclose(outputs[key], expected[key], rtol=1e-6)


@pytest.mark.parametrize('extension', ['.h5', '.keras', ''])
def test_files_of_dict_models_keep_their_structure(tmp_path, extension):
    """TF's files (HDF5, `.keras`, a SavedModel directory) load with their dicts, and
    torchk's round-trip and read as TF writes them."""
    tf_model = keras.models.load_model(os.path.join(HERE, 'dict_model' + extension))
    predicted = tf_model.predict(X, verbose=0)
    for key, values in TF['predict'].items():
        np.testing.assert_allclose(predicted[key], values, rtol=1e-5, atol=1e-6)
    path = str(tmp_path / ('model' + extension))
    tf_model.save(path)
    loaded = keras.models.load_model(path)
    assert sorted(loaded.input) == ['kind', 'text']
    assert loaded.get_config()['input_layers'] == TF['input_layers']
    outputs = loaded(X)
    for key, values in TF['predict'].items():
        np.testing.assert_allclose(outputs[key], values, rtol=1e-5, atol=1e-6)


def test_tuple_outputs_and_nested_inputs_keep_their_structure(tmp_path):
    first, second = keras.Input((3,), name='first'), keras.Input((2,), name='second')
    both = keras.layers.Concatenate()([first, second])
    total = keras.layers.Dense(1, kernel_initializer='ones', name='total')(both)
    doubled = keras.layers.Lambda(lambda t: 2. * t, name='doubled')(both)
    model = keras.Model([[first], {'k': second}], (total, doubled))
    a, b = X['text'], X['kind']
    outputs = model([[a], {'k': b}])
    assert type(outputs) is tuple
    np.testing.assert_allclose(outputs[0], np.concatenate([a, b], 1).sum(1, keepdims=True),
                               rtol=1e-6)
    np.testing.assert_allclose(outputs[1], 2 * np.concatenate([a, b], 1), rtol=1e-6)
    assert model.get_config()['input_layers'] == [[['first', 0, 0]], {'k': ['second', 0, 0]}]
    predicted = model.predict([[a], {'k': b}], verbose=0)
    assert type(predicted) is tuple and predicted[1].shape == (20, 5)
    path = str(tmp_path / 'model.h5')
    model.save(path)
    loaded = keras.models.load_model(path, safe_mode=False)
    np.testing.assert_allclose(loaded([[a], {'k': b}])[1], outputs[1], rtol=1e-6)


def test_columns_are_conformed_to_inputs_of_one_feature():
    """tf.keras conforms a `(batch,)` column to an `Input((1,))` (TF's CSV and preprocessing
    tutorials call their dict models on `dict(data_frame)`-like columns), text included."""
    size = keras.Input((1,), name='size')
    kind = keras.Input((1,), name='kind', dtype='string')
    encoded = keras.layers.StringLookup(vocabulary=['x', 'y'], output_mode='one_hot')(kind)
    model = keras.Model({'size': size, 'kind': kind},
                        keras.layers.Concatenate()([size, encoded]))
    columns = {'size': np.array([1., 2., 3.], 'float32'), 'kind': np.array(['x', 'y', 'z'])}
    expected = np.array([[1., 0., 1., 0.], [2., 0., 0., 1.], [3., 1., 0., 0.]])
    np.testing.assert_allclose(model(columns), expected)
    np.testing.assert_allclose(model({k: v[:, None] for k, v in columns.items()}), expected)
    np.testing.assert_allclose(model.predict(columns, verbose=0), expected)

