"""Subclassed model and layer: call, build, add_weight, add_loss, add_metric; a train_step
override with compiled_loss, compiled_metrics and optimizer.minimize(tape=...)."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.utils.set_random_seed(4)
rng = np.random.RandomState(4)
x = rng.randn(1000, 6).astype('float32')
y = (np.sin(x[:, 0]) + x[:, 1] ** 2 > 0.8).astype('int64')


class Linear(keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(name='w', shape=(input_shape[-1], self.units),
                                 initializer='glorot_uniform', trainable=True)
        self.b = self.add_weight(name='b', shape=(self.units,), initializer='zeros')
        super().build(input_shape)

    def call(self, inputs):
        outputs = tf.matmul(inputs, self.w) + self.b
        self.add_loss(1e-4 * tf.reduce_sum(tf.square(self.w)))
        return outputs


class Classifier(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = Linear(32)
        self.out = keras.layers.Dense(2)

    def call(self, inputs, training=None):
        return self.out(tf.nn.relu(self.hidden(inputs)))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            logits = self(x, training=True)
            loss = self.compiled_loss(y, logits, regularization_losses=self.losses)
        self.optimizer.minimize(loss, self.trainable_variables, tape=tape)
        self.compiled_metrics.update_state(y, logits)
        return {m.name: m.result() for m in self.metrics}


model = Classifier()
model.compile(optimizer=keras.optimizers.Adam(0.01),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=[keras.metrics.SparseCategoricalAccuracy(name='accuracy')])
history = model.fit(x[:800], y[:800], epochs=12, batch_size=32, verbose=0)
assert history.history['loss'][-1] < history.history['loss'][0]
logits = model.predict(x[800:])
print('RESULT accuracy=%.4f' % np.mean(logits.argmax(-1) == y[800:]))
