"""Nested models and named inputs: a Sequential inside a functional model with two named
inputs, fit on a dict; a model without compile loss (the loss comes from add_loss)."""
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

keras.utils.set_random_seed(5)
rng = np.random.RandomState(5)
n = 1000
numbers = rng.randn(n, 4).astype('float32')
category = rng.randint(0, 5, size=(n, 1))
target = ((numbers[:, 0] > 0) ^ (category[:, 0] % 2 == 1)).astype('float32')

number_input = keras.Input(shape=(4,), name='numbers')
category_input = keras.Input(shape=(1,), name='category', dtype='int32')
embedded = layers.Flatten()(layers.Embedding(5, 4)(category_input))
tower = keras.Sequential([layers.Dense(16, activation='relu'), layers.Dense(16, activation='relu')],
                         name='tower')
features = tower(layers.Concatenate()([number_input, embedded]))
output = layers.Dense(1, activation='sigmoid', name='score')(features)
model = keras.Model(inputs=[number_input, category_input], outputs=output)
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss='binary_crossentropy',
              metrics=['accuracy', keras.metrics.AUC(name='auc')])
inputs = {'numbers': numbers, 'category': category}
model.fit({k: v[:800] for k, v in inputs.items()}, target[:800], epochs=15, batch_size=32,
          verbose=0)
result = model.evaluate({k: v[800:] for k, v in inputs.items()}, target[800:], verbose=0,
                        return_dict=True)

# A loss added by a layer: compile without a loss.
signal = keras.Input(shape=(4,))
reconstruction = layers.Dense(4)(layers.Dense(2)(signal))
added = keras.Model(signal, reconstruction)
added.add_loss(tf.reduce_mean(tf.square(signal - reconstruction)))
added.compile(optimizer=keras.optimizers.Adam(0.01))
first = added.fit(numbers, epochs=1, batch_size=50, verbose=0).history['loss'][0]
last = added.fit(numbers, epochs=10, batch_size=50, verbose=0).history['loss'][-1]
assert last < first, (first, last)
print('RESULT accuracy=%.4f' % result['accuracy'])
