"""tf.keras' functional models (torchk.keras.engine.functional): inputs cast to the
`Input`'s dtype, nodes replayed with their call arguments."""
import numpy as np
import pytest

import torchk.keras as keras

IMAGES = np.arange(32).reshape(2, 4, 4, 1).astype('uint8')


def _image_model():
    inputs = keras.Input((4, 4, 1))
    outputs = keras.layers.Dense(2, kernel_initializer='ones')(keras.layers.Flatten()(inputs))
    return keras.Model(inputs, outputs)


def _reference(images):
    return np.repeat(images.reshape(len(images), -1).astype('float32').sum(1)[:, None], 2, 1)


def test_uint8_images_are_cast_to_the_input_dtype():
    model = _image_model()
    np.testing.assert_allclose(np.asarray(model(IMAGES)), _reference(IMAGES))
    np.testing.assert_allclose(model.predict(IMAGES), _reference(IMAGES))
    model.compile(keras.optimizers.SGD(0.), 'mse')
    loss = model.evaluate(IMAGES, np.zeros((2, 2)), verbose=0)
    assert loss == pytest.approx(np.mean(_reference(IMAGES) ** 2))


def test_nested_functional_model_casts_its_inputs():
    inner = _image_model()
    inputs = keras.Input((4, 4, 1), dtype='uint8')
    outer = keras.Model(inputs, inner(inputs))
    assert outer.output.dtype == 'float32'
    np.testing.assert_allclose(outer.predict(IMAGES), _reference(IMAGES))


def test_int_input_keeps_its_dtype():
    inputs = keras.Input((3,), dtype='int32')
    model = keras.Model(inputs, keras.layers.Embedding(10, 2, embeddings_initializer='ones')(
        inputs))
    assert np.asarray(model(np.array([[1, 2, 3]], 'int64'))).shape == (1, 3, 2)


def test_tf_ops_on_keras_tensors_are_op_layers_of_the_model(tmp_path):
    """As in tf.keras: `tf.nn.l2_normalize(x)` in functional code is a `TFOpLambda` layer,
    saved and loaded with the model; inside a layer's `call` an op stays the layer's."""
    import torchk.tf as tf

    class Doubled(keras.layers.Layer):
        def call(self, inputs):
            return tf.multiply(inputs, 2.)

    inputs = keras.Input((4,))
    dense = keras.layers.Dense(3, kernel_initializer='ones')(inputs)
    outputs = tf.concat([tf.nn.l2_normalize(Doubled()(dense), axis=-1),
                         tf.reduce_sum(dense, axis=-1, keepdims=True)], axis=-1)
    model = keras.Model(inputs, outputs)
    assert [type(layer).__name__ for layer in model.layers] == [
        'InputLayer', 'Dense', 'Doubled', 'TFOpLambda', 'TFOpLambda', 'TFOpLambda']
    x = np.random.RandomState(0).rand(2, 4).astype('float32')
    total = x.sum(1, keepdims=True)
    expected = np.concatenate([np.full((2, 3), 1 / np.sqrt(3)), 3 * total], axis=-1)
    np.testing.assert_allclose(model.predict(x), expected, rtol=1e-5)
    path = str(tmp_path / 'model.h5')
    model.save(path)
    loaded = keras.models.load_model(path, custom_objects={'Doubled': Doubled})
    np.testing.assert_allclose(loaded.predict(x), expected, rtol=1e-5)


def test_nested_outputs_are_flattened_and_predicted_in_their_structure():
    """keras-io's involution example: a model of `[layer.output for ...]` where each layer
    returns two tensors (`call` returns a tuple)."""
    class TwoOutputs(keras.layers.Layer):
        def call(self, inputs):
            return inputs * 2., inputs + 1.

    inputs = keras.Input((3,))
    first = TwoOutputs(name='first')
    second = TwoOutputs(name='second')
    model = keras.Model(inputs, second(first(inputs)[0]))
    nested = keras.Model(model.input, [model.get_layer(name).output
                                       for name in ('first', 'second')])
    x = np.arange(6, dtype='float32').reshape(2, 3)
    (a, b), (c, d) = nested.predict(x)
    for result, expected in ((a, 2 * x), (b, x + 1), (c, 4 * x), (d, 2 * x + 1)):
        np.testing.assert_allclose(result, expected)
    assert len(nested.outputs) == 4


def test_outputs_of_one_layer_have_unique_names():
    """tf_keras 2.21's names for these outputs and their losses (Keras 2.3.1 repeats
    'rnn')."""
    x = keras.Input((None, 2))
    sequences, state = keras.layers.SimpleRNN(3, return_state=True, name='rnn')(x)
    other = keras.layers.Dense(1, name='rnn_1')(state)
    model = keras.Model(x, [sequences, state, other, state])
    assert model.output_names == ['rnn', 'rnn_1', 'rnn_1_1', 'rnn_2']
    model.compile('sgd', 'mse')
    targets = [np.zeros((4, 3)), np.zeros((4, 3)), np.zeros((4, 1)), np.zeros((4, 3))]
    history = model.fit(np.zeros((4, 5, 2)), targets, verbose=0)
    assert list(history.history) == ['loss', 'rnn_loss', 'rnn_1_loss', 'rnn_1_1_loss',
                                     'rnn_2_loss']


@pytest.mark.parametrize('arguments, batch_shape', [
    ({'shape': (3, 2), 'batch_size': 8}, (8, 3, 2)),
    ({'shape': (3,)}, (None, 3)),
    ({'batch_shape': (4, 5)}, (4, 5)),
    ({'batch_input_shape': (None, 5)}, (None, 5)),
])
def test_input_takes_tf_keras_arguments(arguments, batch_shape):
    assert keras.backend.int_shape(keras.Input(**arguments)) == batch_shape


@pytest.mark.parametrize('arguments, message', [
    ({'shape': (3,), 'ragged': True}, 'ragged'),
    ({'shape': (3,), 'type_spec': 'spec'}, 'TypeSpec'),
    ({'batch_shape': (2, 3), 'batch_size': 2}, 'batch_size'),
    ({'batch_size': 2}, 'needs shape'),
    ({'shape': (3,), 'input_shape': (3,)}, 'input_shape'),
])
def test_input_refuses_what_torchk_has_not(arguments, message):
    with pytest.raises(ValueError, match=message):
        keras.Input(**arguments)
