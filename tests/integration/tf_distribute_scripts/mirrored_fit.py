"""Keras `compile`/`fit` under MirroredStrategy, written as TF's "distributed training with
Keras" tutorial writes it: the model is built and compiled in `strategy.scope()`, `fit`
takes the global batch, and a checkpoint and TensorBoard callback are given to every
process. The model trains twice from the same start: with Keras' compiled step and with
`run_eagerly=True` (tf.keras' `train_step` loop).

    python -m torchk run mirrored_fit.py OUT                             # one process
    torchrun --nproc-per-node 2 -m torchk run mirrored_fit.py OUT        # two replicas

Writes the final weights and the epoch logs to OUT.rank<RANK>.npz; the callbacks write
under OUT.rank<RANK>.logs/.
"""
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow import keras

GLOBAL_BATCH_SIZE = 8
RANK = os.environ.get('RANK', '0')
OUT = '%s.rank%s' % (sys.argv[1], RANK)

strategy = tf.distribute.MirroredStrategy()
print('Number of devices:', strategy.num_replicas_in_sync)

rng = np.random.RandomState(0)
x = rng.randn(56, 5).astype('float32')
y = (x[:, :3].argmax(axis=1) + (x[:, 3] > 1)).clip(0, 2)


def build_and_compile(run_eagerly):
    with strategy.scope():
        model = keras.Sequential([
            keras.layers.Dense(8, activation='tanh', input_shape=(5,),
                               kernel_regularizer=keras.regularizers.l2(1e-3)),
            keras.layers.Dense(3, activation='softmax')])
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                      loss='sparse_categorical_crossentropy', metrics=['accuracy'],
                      run_eagerly=run_eagerly)
    return model


results = {}
for run_eagerly in (False, True):
    # A seed per process: the strategy must give every replica the first one's initial
    # weights and the first one's shuffled order of the samples.
    tf.random.set_seed(7 + int(RANK))
    model = build_and_compile(run_eagerly)
    name = 'eager' if run_eagerly else 'compiled'
    callbacks = [
        keras.callbacks.ModelCheckpoint(os.path.join(OUT + '.logs', name + '-{epoch}.h5')),
        keras.callbacks.TensorBoard(log_dir=os.path.join(OUT + '.logs', name + '-tb')),
    ]
    history = model.fit(x, y, batch_size=GLOBAL_BATCH_SIZE, epochs=2, validation_split=0.25,
                        callbacks=callbacks, verbose=2)
    evaluation = model.evaluate(x, y, batch_size=GLOBAL_BATCH_SIZE, verbose=0)
    results.update({'%s/%s' % (name, key): value for key, value in history.history.items()})
    results['%s/evaluate' % name] = evaluation
    results.update({'%s/weight%d' % (name, i): w for i, w in enumerate(model.get_weights())})

np.savez(OUT + '.npz', replicas=strategy.num_replicas_in_sync, **results)
