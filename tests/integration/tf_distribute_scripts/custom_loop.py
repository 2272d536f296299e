"""A custom training loop under MirroredStrategy, written as TF's "custom training with
tf.distribute" tutorial writes it: `strategy.run` of a step that scales the per-example
loss by the global batch (`tf.nn.compute_average_loss`, `scale_regularization_loss`) and
calls `optimizer.apply_gradients`, the replicas' losses combined with `strategy.reduce`.

    python -m torchk run custom_loop.py OUT                              # one process
    torchrun --nproc-per-node 2 -m torchk run custom_loop.py OUT         # two replicas

Writes the final weights and the losses to OUT.rank<RANK>.npz.
"""
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow import keras

GLOBAL_BATCH_SIZE = 8
EPOCHS = 2

strategy = tf.distribute.MirroredStrategy()
print('Number of devices:', strategy.num_replicas_in_sync)

rng = np.random.RandomState(0)
features = rng.randn(6 * GLOBAL_BATCH_SIZE, 5).astype('float32')
labels = (features[:, :3].argmax(axis=1) + (features[:, 3] > 1)).clip(0, 2)
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(GLOBAL_BATCH_SIZE)
dist_dataset = strategy.experimental_distribute_dataset(dataset)

# A seed per process: each replica draws other initial weights, and the strategy must give
# every replica the first one's (TF's mirrored variables start as replica 0's).
tf.random.set_seed(7 + int(os.environ.get('RANK', '0')))
with strategy.scope():
    model = keras.Sequential([
        keras.layers.Dense(8, activation='tanh', input_shape=(5,),
                           kernel_regularizer=keras.regularizers.l2(1e-3)),
        keras.layers.Dense(3)])
    loss_object = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=keras.losses.Reduction.NONE)
    optimizer = keras.optimizers.Adam(learning_rate=0.01)


def compute_loss(labels, predictions, model_losses):
    per_example_loss = loss_object(labels, predictions)
    loss = tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)
    if model_losses:
        loss += tf.nn.scale_regularization_loss(tf.add_n(model_losses))
    return loss


def train_step(inputs):
    images, labels = inputs
    with tf.GradientTape() as tape:
        predictions = model(images, training=True)
        loss = compute_loss(labels, predictions, model.losses)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


@tf.function
def distributed_train_step(dataset_inputs):
    per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


losses = []
for epoch in range(EPOCHS):
    for batch in dist_dataset:
        losses.append(float(distributed_train_step(batch)))
    print('Epoch %d, loss %.6f' % (epoch + 1, np.mean(losses[-6:])))

np.savez('%s.rank%s.npz' % (sys.argv[1], os.environ.get('RANK', '0')), losses=losses,
         replicas=strategy.num_replicas_in_sync,
         **{'weight%d' % i: w for i, w in enumerate(model.get_weights())})
