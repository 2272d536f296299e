"""A custom training loop: tf.data pipeline, @tf.function step, GradientTape,
optimizer.apply_gradients, metric objects with update_state/result/reset_states."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

tf.random.set_seed(7)
rng = np.random.RandomState(7)
x = rng.randn(1200, 10).astype('float32')
y = np.argmax(x[:, :4], axis=1).astype('int64')

train = (tf.data.Dataset.from_tensor_slices((x[:1000], y[:1000]))
         .shuffle(1000, seed=0).batch(32).prefetch(tf.data.AUTOTUNE))
test = tf.data.Dataset.from_tensor_slices((x[1000:], y[1000:])).batch(100)

model = keras.Sequential([keras.layers.Dense(32, activation='relu', input_shape=(10,)),
                          keras.layers.Dense(4)])
optimizer = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
train_accuracy = keras.metrics.SparseCategoricalAccuracy()
test_accuracy = keras.metrics.SparseCategoricalAccuracy()


@tf.function
def train_step(features, labels):
    with tf.GradientTape() as tape:
        logits = model(features, training=True)
        loss = loss_fn(labels, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    train_accuracy.update_state(labels, logits)
    return loss


for epoch in range(10):
    train_accuracy.reset_states()
    for features, labels in train:
        loss = train_step(features, labels)
for features, labels in test:
    test_accuracy.update_state(labels, model(features, training=False))
print('train accuracy %.3f, last loss %.3f' % (train_accuracy.result(), float(loss)))
print('RESULT accuracy=%.4f' % float(test_accuracy.result()))
