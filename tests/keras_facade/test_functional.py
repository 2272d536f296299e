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
