"""Functional autoencoder: Input, encoder and decoder models, MSE."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.utils.set_random_seed(3)
rng = np.random.RandomState(3)
codes = rng.randn(1000, 3).astype('float32')
data = np.tanh(codes @ rng.randn(3, 20).astype('float32'))

inputs = keras.Input(shape=(20,), name='signal')
encoded = keras.layers.Dense(8, activation='relu')(inputs)
encoded = keras.layers.Dense(3, name='code')(encoded)
encoder = keras.Model(inputs, encoded, name='encoder')
decoder = keras.Sequential([keras.layers.Dense(8, activation='relu', input_shape=(3,)),
                            keras.layers.Dense(20, activation='tanh')], name='decoder')
autoencoder = keras.Model(inputs, decoder(encoder(inputs)))
autoencoder.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss='mse')
autoencoder.fit(data[:800], data[:800], epochs=30, batch_size=32, verbose=0)
mse = float(np.mean((autoencoder.predict(data[800:]) - data[800:]) ** 2))
baseline = float(np.mean((data[800:] - data[:800].mean(0)) ** 2))
print('RESULT explained=%.4f' % (1. - mse / baseline))
