"""Model files saved by TensorFlow's Keras 2 load with `keras.models.load_model` on torchk and
predict as TensorFlow did (issue 18).

The files and TensorFlow's predictions come from tests/fixtures/make_tf_keras_models.py, run
by hand with TensorFlow (`models/<dialect>/`). keras.applications models are committed without
their weights; `weight_recipe` writes the weights TensorFlow predicted with at run time.
They are trusted (made here), so they load with `safe_mode=False`: `lambda_model` holds
Lambda bytecode, which safe mode refuses (tests/saving/test_safe_mode.py).
"""
import base64
import glob
import gzip
import json
import os
import shutil
import sys
import warnings

import h5py
import numpy as np
import pytest
import yaml

import keras
from keras import backend as K

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, '..', 'fixtures', 'tf_keras')
MODELS = os.path.join(FIXTURES, 'models')
sys.path.insert(0, FIXTURES)
import weight_recipe  # noqa: E402
from devices import tolerance  # noqa: E402


# The dialect whose keras.applications models are loaded with compile=True and trained; the
# other dialects' (the same code paths, a few minutes of CPU each) are only predicted with.
MAIN_DIALECT = 'tf_keras-2.21.0'


def _fixtures(compile_modes):
    cases = []
    for directory in sorted(glob.glob(os.path.join(MODELS, '*'))):
        dialect = os.path.basename(directory)
        for arrays in sorted(glob.glob(os.path.join(directory, '*.npz'))):
            name = os.path.basename(arrays)[:-len('.npz')]
            application = os.path.exists(os.path.join(directory, name + '.skeleton.h5.gz'))
            for compile in compile_modes:
                if application and dialect != MAIN_DIALECT and compile is not False:
                    continue
                values = (dialect, name) if compile is None else (dialect, name, compile)
                label = '%s-%s' % (dialect, name)
                if compile is not None:
                    label += '-compile=%s' % compile
                cases.append(pytest.param(*values, id=label))
    return cases


def _model_file(dialect, name, tmp_path):
    """The fixture's .h5: committed as is, or a weightless skeleton filled by the recipe."""
    path = os.path.join(MODELS, dialect, name + '.h5')
    if os.path.exists(path):
        return path
    filled = str(tmp_path / (name + '.h5'))
    with gzip.open(os.path.join(MODELS, dialect, name + '.skeleton.h5.gz'), 'rb') as src, \
            open(filled, 'wb') as dst:
        shutil.copyfileobj(src, dst)
    weight_recipe.fill_weights(filled)
    return filled


def _arrays(dialect, name):
    arrays = np.load(os.path.join(MODELS, dialect, name + '.npz'))

    def listed(prefix):
        return [arrays['%s%d' % (prefix, i)] for i in range(len(arrays.files))
                if '%s%d' % (prefix, i) in arrays.files]
    return listed('x'), listed('y'), listed('pred'), listed('step')


def _as_list(values):
    return values if isinstance(values, list) else [values]


def _max_relative_difference(actual, expected):
    """The largest difference over all outputs, relative to each output's scale."""
    return max(np.abs(a - e).max() / max(np.abs(e).max(), 1e-6)
               for a, e in zip(_as_list(actual), expected))


@pytest.mark.parametrize('dialect, name, compile', _fixtures([False, True]))
def test_loads_and_predicts_as_tensorflow(dialect, name, compile, tmp_path):
    path = _model_file(dialect, name, tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        model = keras.models.load_model(path, compile=compile, safe_mode=False)
    assert not [w for w in caught if 'fresh optimizer' in str(w.message)]
    inputs, _, predictions, _ = _arrays(dialect, name)
    # cuDNN's fused LSTM/GRU on CUDA against TF's CPU kernels: float32 rounding of the recurrence
    assert _max_relative_difference(model.predict(inputs), predictions) < tolerance(1e-5, 1e-4)
    assert (model.optimizer is not None) == compile


@pytest.mark.parametrize('dialect, name', _fixtures([None]))
def test_trains_one_step_from_the_saved_state(dialect, name, tmp_path):
    """One step of `fit` from the loaded optimizer state gives TensorFlow's next weights
    (compared through predictions, to 1e-3 of their scale: Keras 2.3.1's batch normalization
    corrects the moving variance by n / (n - 1 - epsilon), TensorFlow's by n / (n - 1), and to
    a tenth of what the step moved them); for keras.applications models, whose files have
    no optimizer state, the step changes the weights and the loss is finite."""
    model = keras.models.load_model(_model_file(dialect, name, tmp_path), compile=True,
                                    safe_mode=False)
    inputs, targets, predictions, steps = _arrays(dialect, name)
    before = [w.copy() for w in model.get_weights()]
    history = model.fit(inputs, targets, batch_size=len(inputs[0]), epochs=1, shuffle=False,
                        verbose=0)
    assert np.isfinite(history.history['loss'][0])
    if steps:
        moved = _max_relative_difference(predictions, steps)
        assert _max_relative_difference(model.predict(inputs), steps) < min(1e-3, moved / 10)
    else:
        assert any(not np.array_equal(b, a) for b, a in zip(before, model.get_weights()))


def _dialects():
    return sorted(os.path.basename(d) for d in glob.glob(os.path.join(MODELS, '*')))


def _mlp_in_keras_code():
    """The `mlp` fixture's architecture written with Keras 2.3.1."""
    return keras.models.Sequential([
        keras.layers.Dense(8, activation='relu', input_shape=(6,), name='hidden'),
        keras.layers.BatchNormalization(name='norm'),
        keras.layers.Dense(3, activation='softmax', name='probabilities'),
    ])


@pytest.mark.parametrize('by_name', [False, True], ids=['by_order', 'by_name'])
@pytest.mark.parametrize('dialect', _dialects())
def test_weights_only_file_loads_into_keras_code(dialect, by_name):
    model = _mlp_in_keras_code()
    model.load_weights(os.path.join(MODELS, dialect, 'weights_only.h5'), by_name=by_name)
    inputs, _, predictions, _ = _arrays(dialect, 'mlp')
    assert _max_relative_difference(model.predict(inputs), predictions) < 1e-5


@pytest.mark.parametrize('dialect', _dialects())
def test_load_model_of_a_weights_only_file_says_what_to_do(dialect):
    with pytest.raises(ValueError, match=r'weights only.*load_weights'):
        keras.models.load_model(os.path.join(MODELS, dialect, 'weights_only.h5'))


@pytest.mark.parametrize('text_format', ['json', 'yaml'])
@pytest.mark.parametrize('name', ['mlp_sgd_nested', 'seq2seq_states', 'text_birnn_masked'])
@pytest.mark.parametrize('dialect', _dialects())
def test_model_from_text_then_load_weights(dialect, name, text_format):
    """tf.keras' `to_json()` (the file's model_config) and `to_yaml()` (tf.keras 2.0-2.5)
    texts build the model; `load_weights` reads the model file's weights."""
    path = os.path.join(MODELS, dialect, name + '.h5')
    with h5py.File(path, 'r') as f:
        text = f.attrs['model_config']
    if text_format == 'json':
        model = keras.models.model_from_json(text, safe_mode=False)
    else:
        model = keras.models.model_from_yaml(yaml.safe_dump(json.loads(text)), safe_mode=False)
    model.load_weights(path)
    inputs, _, predictions, _ = _arrays(dialect, name)
    assert _max_relative_difference(model.predict(inputs), predictions) < 1e-5


def _with_lambda_bytecode(source, target, corrupt):
    """Copies the model file `source` to `target`, its Lambda functions' marshalled code
    passed through `corrupt`."""
    shutil.copyfile(source, target)
    with h5py.File(target, 'r+') as f:
        config = json.loads(f.attrs['model_config'])
        for layer in config['config']['layers']:
            if layer['class_name'] == 'Lambda':
                layer['config']['function'][0] = corrupt(layer['config']['function'][0])
        f.attrs['model_config'] = json.dumps(config)


def _bytecode_of_another_python(code):
    """Marshal data that this Python rejects, as it rejects another version's: an unknown
    type code in front."""
    return base64.b64encode(b'\xf0' + base64.b64decode(code)).decode('ascii')


@pytest.mark.parametrize('dialect', _dialects())
def test_lambda_from_another_python_names_the_layer_and_the_remedy(dialect, tmp_path):
    path = str(tmp_path / 'lambda.h5')
    _with_lambda_bytecode(os.path.join(MODELS, dialect, 'lambda_model.h5'), path,
                          _bytecode_of_another_python)
    with pytest.raises(ValueError, match=r"Lambda layer 'affine'.*another Python.*"
                                         r"custom_objects=\{'affine'"):
        keras.models.load_model(path, safe_mode=False)

    functions = {'affine': lambda t: t * 2.0 + 1.0, 'square': lambda t, power: t ** power}
    model = keras.models.load_model(path, custom_objects=functions)
    inputs, _, predictions, _ = _arrays(dialect, 'lambda_model')
    assert _max_relative_difference(model.predict(inputs), predictions) < 1e-5


def test_multi_backend_keras_file_keeps_its_state(tmp_path):
    """A file Keras 2.3.1 saves itself loads as before: model, predictions and Adam's state."""
    model = _mlp_in_keras_code()
    model.compile(keras.optimizers.Adam(0.01), 'sparse_categorical_crossentropy',
                  metrics=['accuracy'])
    inputs, targets, _, _ = _arrays(_dialects()[0], 'mlp')
    model.train_on_batch(inputs, targets)
    path = str(tmp_path / 'keras231.h5')
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(inputs), model.predict(inputs))
    for saved, restored in zip(K.batch_get_value(model.optimizer.weights),
                               K.batch_get_value(loaded.optimizer.weights)):
        np.testing.assert_array_equal(saved, restored)
