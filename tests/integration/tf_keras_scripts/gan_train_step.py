"""A GAN whose train_step uses two GradientTapes and two optimizers (tf.keras' DCGAN
example's shape), on 1-D data: the generator learns to produce N(3, 0.5)."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

tf.random.set_seed(6)
np.random.seed(6)
latent = 4
real = (3. + 0.5 * np.random.randn(2048, 1)).astype('float32')

generator = keras.Sequential([keras.layers.Dense(16, activation='relu', input_shape=(latent,)),
                              keras.layers.Dense(1)], name='generator')
discriminator = keras.Sequential([keras.layers.Dense(16, activation='relu', input_shape=(1,)),
                                  keras.layers.Dense(1)], name='discriminator')


class GAN(keras.Model):
    def __init__(self, discriminator, generator):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.d_loss_tracker = keras.metrics.Mean(name='d_loss')
        self.g_loss_tracker = keras.metrics.Mean(name='g_loss')

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def train_step(self, real_samples):
        batch_size = tf.shape(real_samples)[0]
        noise = tf.random.normal(shape=(batch_size, latent))
        fake = self.generator(noise)
        combined = tf.concat([fake, real_samples], axis=0)
        labels = tf.concat([tf.ones((batch_size, 1)), tf.zeros((batch_size, 1))], axis=0)
        with tf.GradientTape() as tape:
            d_loss = self.loss_fn(labels, self.discriminator(combined))
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))

        noise = tf.random.normal(shape=(batch_size, latent))
        misleading = tf.zeros((batch_size, 1))
        with tf.GradientTape() as tape:
            g_loss = self.loss_fn(misleading, self.discriminator(self.generator(noise)))
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {'d_loss': self.d_loss_tracker.result(), 'g_loss': self.g_loss_tracker.result()}


gan = GAN(discriminator, generator)
gan.compile(d_optimizer=keras.optimizers.Adam(learning_rate=0.005),
            g_optimizer=keras.optimizers.Adam(learning_rate=0.005),
            loss_fn=keras.losses.BinaryCrossentropy(from_logits=True))
dataset = tf.data.Dataset.from_tensor_slices(real).shuffle(2048).batch(64)
history = gan.fit(dataset, epochs=25, verbose=0)
assert set(history.history) == {'d_loss', 'g_loss'}
samples = generator.predict(np.random.randn(1000, latent).astype('float32'))
print('RESULT mean_error=%.4f' % abs(float(samples.mean()) - 3.))
