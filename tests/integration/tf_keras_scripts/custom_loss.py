"""Regression with a custom loss and a custom activation written with tf ops, Huber, and
fit on a tf.data dataset with validation data."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.utils.set_random_seed(8)
rng = np.random.RandomState(8)
x = rng.uniform(-2, 2, size=(1000, 3)).astype('float32')
y = (x[:, :1] ** 2 + np.sin(3 * x[:, 1:2]) + 0.05 * rng.randn(1000, 1)).astype('float32')


def weighted_mse(y_true, y_pred):
    error = tf.square(tf.cast(y_true, tf.float32) - y_pred)
    weights = tf.where(y_true > 2.0, 2.0 * tf.ones_like(y_true), tf.ones_like(y_true))
    return tf.reduce_mean(weights * error, axis=-1)


def soft_relu(x):
    return tf.math.log(1. + tf.exp(x))


model = keras.Sequential([keras.layers.Dense(32, activation=soft_relu, input_shape=(3,)),
                          keras.layers.Dense(32, activation='tanh'),
                          keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.Adam(0.01), loss=weighted_mse,
              metrics=[keras.metrics.MeanAbsoluteError(name='mae')])
train = tf.data.Dataset.from_tensor_slices((x[:800], y[:800])).shuffle(800).batch(32)
model.fit(train, validation_data=(x[800:], y[800:]), epochs=40, verbose=0)
huber = keras.losses.Huber(delta=1.0)
prediction = model.predict(x[800:])
print('huber %.4f' % float(huber(y[800:], prediction)))
r2 = 1. - np.mean((prediction - y[800:]) ** 2) / np.var(y[800:])
print('RESULT r2=%.4f' % r2)
