"""Saving: model.save to .h5, .keras and to a path without extension, load_model, save_weights /
load_weights, to_json / model_from_json; predictions must match after loading."""
import os
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.utils.set_random_seed(11)
rng = np.random.RandomState(11)
x = rng.randn(400, 6).astype('float32')
y = (x[:, 0] * x[:, 1] > 0).astype('int64')
model = keras.Sequential([keras.layers.Dense(32, activation='relu', input_shape=(6,)),
                          keras.layers.BatchNormalization(),
                          keras.layers.Dense(2, activation='softmax')])
model.compile(optimizer=keras.optimizers.Adam(0.01), loss='sparse_categorical_crossentropy',
              metrics=['accuracy'])
model.fit(x[:300], y[:300], epochs=20, batch_size=32, verbose=0)
expected = model.predict(x[300:])
work = tempfile.mkdtemp()

model.save(os.path.join(work, 'model.h5'))
restored = keras.models.load_model(os.path.join(work, 'model.h5'))
np.testing.assert_allclose(restored.predict(x[300:]), expected, rtol=1e-5, atol=1e-6)
restored.fit(x[:300], y[:300], epochs=1, verbose=0)  # the optimizer state came back too

model.save(os.path.join(work, 'model.keras'))  # the zip of tf.keras 2.13+
restored = keras.models.load_model(os.path.join(work, 'model.keras'))
np.testing.assert_allclose(restored.predict(x[300:]), expected, rtol=1e-5, atol=1e-6)
restored.fit(x[:300], y[:300], epochs=1, verbose=0)

model.save(os.path.join(work, 'saved_model'))  # a SavedModel folder
np.testing.assert_allclose(keras.models.load_model(os.path.join(work, 'saved_model')).predict(
    x[300:]), expected, rtol=1e-5, atol=1e-6)

model.save_weights(os.path.join(work, 'weights.h5'))
clone = keras.models.model_from_json(model.to_json())
clone.load_weights(os.path.join(work, 'weights.h5'))
np.testing.assert_allclose(clone.predict(x[300:]), expected, rtol=1e-5, atol=1e-6)
print('RESULT accuracy=%.4f' % np.mean(expected.argmax(-1) == y[300:]))
