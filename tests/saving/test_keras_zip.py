"""tf.keras 2.13-2.15 / tf_keras `.keras` zips, `.weights.h5` files and mixed precision model
files, against TensorFlow's own predictions (fixtures: tests/fixtures/make_tf_keras_zips.py)."""
import os
import warnings

import numpy as np
import pytest

import keras
from keras import backend as K

from torchk.saving import keras_zip
from torchk.saving.errors import ModelFileError

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fixtures',
                    'tf_keras', 'zips')
DIALECTS = ['tf_keras-2.21.0', 'tf.keras-2.15.1']
MODELS = ['mlp_batchnorm', 'birnn_masked', 'cnn_depthwise', 'transformer_block',
          'wrappers_nested']
# Relative tolerance of a model computed in float32 against TensorFlow's in the policy: eight
# units in the last place of the policy's half type (float16: 2**-10, bfloat16: 2**-7).
MIXED = {'mixed_float16': 8 * 2.0 ** -10, 'mixed_bfloat16': 8 * 2.0 ** -7}


def _fixture(dialect, name, suffix):
    return os.path.join(HERE, dialect, name + suffix)


def _arrays(dialect, name):
    return dict(np.load(_fixture(dialect, name, '.npz')))


def _assert_close(actual, expected, relative):
    scale = np.abs(expected).max()
    assert np.abs(actual - expected).max() <= relative * scale


@pytest.mark.parametrize('dialect', DIALECTS)
@pytest.mark.parametrize('name', MODELS + list(MIXED))
@pytest.mark.parametrize('compile', [False, True])
def test_keras_zip_predicts_and_trains_as_tensorflow(dialect, name, compile):
    data = _arrays(dialect, name)
    tolerance = MIXED.get(name, 1e-5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        model = keras_zip.load(_fixture(dialect, name, '.keras'), compile=compile)
    mixed_warnings = [w for w in caught if 'dtype policy' in str(w.message)]
    assert len(mixed_warnings) == (1 if name in MIXED else 0)
    _assert_close(model.predict(data['x0']), data['pred0'], tolerance)
    if compile:
        assert K.get_value(model.optimizer.iterations) == 1  # the saved state, one step
        model.train_on_batch(data['x0'], data['y0'])
        _assert_close(model.predict(data['x0']), data['step0'], MIXED.get(name, 1e-3))


@pytest.mark.parametrize('dialect', DIALECTS)
@pytest.mark.parametrize('policy', list(MIXED))
@pytest.mark.parametrize('compile', [False, True])
def test_mixed_precision_h5_loads_in_float32_with_one_warning(dialect, policy, compile):
    data = _arrays(dialect, policy)
    with pytest.warns(UserWarning, match=r'2 layers .*%s dtype policy: the model computes in '
                      r'float32 until mixed precision is turned on' % policy) as caught:
        model = keras.models.load_model(_fixture(dialect, policy, '.h5'), compile=compile)
    assert len([w for w in caught if 'dtype policy' in str(w.message)]) == 1
    assert K.dtype(model.layers[1].kernel) == 'float32'
    assert model.layers[-1].dtype == 'float32'  # saved with an explicit float32 policy
    _assert_close(model.predict(data['x0']), data['pred0'], MIXED[policy])
    if compile:
        assert K.get_value(model.optimizer.iterations) == 1  # the loss scale optimizer's
        model.train_on_batch(data['x0'], data['y0'])
        _assert_close(model.predict(data['x0']), data['step0'], MIXED[policy])


@pytest.mark.parametrize('dialect', DIALECTS)
@pytest.mark.parametrize('policy', list(MIXED))
@pytest.mark.parametrize('suffix', ['.h5', '.keras'])
@pytest.mark.parametrize('compile', [False, True])
def test_mixed_precision_files_honour_the_global_policy(dialect, policy, suffix, compile):
    """Under mixed_float16 `compile` wraps the optimizer in a LossScaleOptimizer, whose inner
    optimizer takes the saved state."""
    from torchk import mixed_precision
    data = _arrays(dialect, policy)
    mixed_precision.set_global_policy(policy)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            model = keras.models.load_model(_fixture(dialect, policy, suffix), compile=compile)
        assert not [w for w in caught if 'dtype policy' in str(w.message)
                    or 'optimizer state was not restored' in str(w.message)]
        hidden, output = model.layers[1], model.layers[-1]
        assert mixed_precision.layer_policy(hidden).name == policy
        assert K.dtype(hidden.kernel) == 'float32'
        assert mixed_precision.layer_policy(output).name == 'float32'
        assert K.dtype(hidden.output) == mixed_precision.Policy(policy).compute_dtype
        prediction = model.predict(data['x0'])
        if compile:
            assert K.get_value(model.optimizer.iterations) == 1
            model.train_on_batch(data['x0'], data['y0'])
            step = model.predict(data['x0'])
    finally:
        mixed_precision.set_global_policy('float32')
    assert prediction.dtype == np.float32
    _assert_close(prediction, data['pred0'], MIXED[policy])
    if compile:
        _assert_close(step, data['step0'], MIXED[policy])


def _mlp_batchnorm():
    return keras.models.Sequential([
        keras.layers.Dense(8, activation='relu', input_shape=(6,)),
        keras.layers.BatchNormalization(),
        keras.layers.Dense(3, activation='softmax')])


def _birnn_masked():
    inputs = keras.layers.Input((10,), dtype='int32')
    h = keras.layers.Embedding(30, 6, mask_zero=True)(inputs)
    h = keras.layers.Bidirectional(keras.layers.LSTM(
        5, recurrent_activation='sigmoid', return_sequences=True))(h)
    h = keras.layers.Bidirectional(keras.layers.GRU(
        4, recurrent_activation='sigmoid', reset_after=True), merge_mode='sum')(h)
    return keras.models.Model(inputs, keras.layers.Dense(3, activation='softmax')(h))


def _cnn_depthwise():
    head = keras.models.Sequential([keras.layers.Dense(6, activation='relu', input_shape=(4,)),
                                    keras.layers.BatchNormalization(), keras.layers.Dense(2)])
    inputs = keras.layers.Input((8, 8, 3))
    h = keras.layers.Conv2D(4, 3, padding='same', activation='relu')(inputs)
    h = keras.layers.DepthwiseConv2D(3, activation='relu')(h)
    return keras.models.Model(inputs, head(keras.layers.GlobalAveragePooling2D()(h)))


def _transformer_block():
    inputs = keras.layers.Input((5, 8))
    attended = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)([inputs, inputs])
    h = keras.layers.LayerNormalization()(keras.layers.Add()([inputs, attended]))
    h = keras.layers.GlobalAveragePooling1D()(h)
    return keras.models.Model(inputs, keras.layers.Dense(2, activation='softmax')(h))


def _wrappers_nested():
    inner_inputs = keras.layers.Input((4,))
    inner = keras.models.Model(inner_inputs,
                               keras.layers.Dense(3, activation='tanh')(inner_inputs))
    inputs = keras.layers.Input((5, 3))
    h = keras.layers.TimeDistributed(keras.layers.Dense(4, activation='relu'))(inputs)
    h = keras.layers.RNN([
        keras.layers.LSTMCell(4, recurrent_activation='sigmoid'),
        keras.layers.GRUCell(4, recurrent_activation='sigmoid', reset_after=True)])(h)
    return keras.models.Model(inputs, keras.layers.Dense(2)(inner(h)))


KERAS_2_CODE = {'mlp_batchnorm': _mlp_batchnorm, 'birnn_masked': _birnn_masked,
                'cnn_depthwise': _cnn_depthwise, 'transformer_block': _transformer_block,
                'wrappers_nested': _wrappers_nested}


@pytest.mark.parametrize('dialect', DIALECTS)
@pytest.mark.parametrize('name', MODELS)
@pytest.mark.parametrize('suffix', ['.weights.h5', '.keras'])
def test_tf_keras_weights_load_into_keras_2_code(dialect, name, suffix):
    data = _arrays(dialect, name)
    model = KERAS_2_CODE[name]()
    model.load_weights(_fixture(dialect, name, suffix))
    _assert_close(model.predict(data['x0']), data['pred0'], 1e-5)


def test_keras_2_weights_files_keep_loading(tmp_path):
    path = str(tmp_path / 'mlp.h5')
    saved = _mlp_batchnorm()
    saved.save_weights(path)
    loaded = _mlp_batchnorm()
    loaded.load_weights(path)
    for a, b in zip(saved.get_weights(), loaded.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('architecture, message', [
    (lambda: keras.models.Sequential([
        keras.layers.Dense(8, activation='relu', input_shape=(6,)),
        keras.layers.BatchNormalization(), keras.layers.Dense(4)]),
     r"layer 'dense_\d+' \(Dense\) has the weight .* of shape \(8, 4\), the file a variable "
     r"of shape \(8, 3\)"),
    (lambda: keras.models.Sequential([
        keras.layers.Dense(8, activation='relu', input_shape=(6,)),
        keras.layers.LayerNormalization(), keras.layers.Dense(3)]),
     r"no variables for layer 'layer_normalization_\d+' \(LayerNormalization\)"),
    (lambda: keras.models.Sequential([
        keras.layers.Dense(8, activation='relu', input_shape=(6,)),
        keras.layers.BatchNormalization(center=False), keras.layers.Dense(3)]),
     r"layer 'batch_normalization_\d+' \(BatchNormalization\) has 3 weights, the file 4"),
])
def test_weights_that_disagree_with_the_architecture_name_the_layer(architecture, message):
    path = _fixture(DIALECTS[0], 'mlp_batchnorm', '.weights.h5')
    with pytest.raises(ModelFileError, match=message) as error:
        architecture().load_weights(path)
    assert error.value.path == path


def test_by_name_is_refused_for_the_vars_layout():
    with pytest.raises(ValueError, match='names no layer'):
        _mlp_batchnorm().load_weights(_fixture(DIALECTS[0], 'mlp_batchnorm', '.weights.h5'),
                                      by_name=True)


def test_load_model_reaches_the_zip_loader():
    data = _arrays(DIALECTS[0], 'mlp_batchnorm')
    model = keras.models.load_model(_fixture(DIALECTS[0], 'mlp_batchnorm', '.keras'))
    _assert_close(model.predict(data['x0']), data['pred0'], 1e-5)
