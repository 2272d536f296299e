"""A Horovod Keras MNIST script ported to torchk by changing its import.

Synthetic MNIST-like data (10 classes of noisy 8x8 "digits"), so it runs anywhere:

    torchrun --nproc_per_node 2 examples/horovod_style_mnist.py --epochs 3

with `KERAS_BACKEND=torchk.core`. Every rank trains on its shard; rank 0 alone prints progress
and saves checkpoints; the last line is a JSON summary.
"""
import argparse
import json

import numpy as np

import keras
import torchk.distributed as hvd


def synthetic_digits(n, seed):
    """`n` noisy copies of 10 fixed random 8x8 patterns, with their labels one-hot."""
    patterns = np.random.RandomState(0).rand(10, 64)
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 10, n)
    x = patterns[labels] + 0.3 * rng.randn(n, 64)
    return x.astype('float32'), keras.utils.to_categorical(labels, 10)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--checkpoint', default=None)
    args = parser.parse_args()

    hvd.init()
    x_train, y_train = hvd.shard(synthetic_digits(2048, seed=1))
    x_val, y_val = hvd.shard(synthetic_digits(512, seed=2))

    model = keras.models.Sequential([
        keras.layers.Dense(64, activation='relu', input_shape=(64,)),
        keras.layers.Dropout(0.2),
        keras.layers.Dense(10, activation='softmax')])
    # Scale the learning rate by the number of processes: the global batch is size() times
    # larger. The warm-up callback starts from the unscaled rate.
    learning_rate = 0.05 * hvd.size()
    optimizer = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate, momentum=0.9))
    model.compile(optimizer, 'categorical_crossentropy', metrics=['accuracy'])

    callbacks = [
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),
        hvd.callbacks.MetricAverageCallback(),
        hvd.callbacks.LearningRateWarmupCallback(learning_rate, warmup_epochs=1, verbose=1),
    ]
    if hvd.rank() == 0 and args.checkpoint:
        callbacks.append(keras.callbacks.ModelCheckpoint(args.checkpoint))
    history = model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
                        validation_data=(x_val, y_val), callbacks=callbacks,
                        verbose=2 if hvd.rank() == 0 else 0)
    if hvd.rank() == 0:
        # Keras 2.2 logs metrics=['accuracy'] as 'acc'.
        accuracy = history.history.get('val_accuracy') or history.history['val_acc']
        print(json.dumps({'size': hvd.size(),
                          'val_accuracy': accuracy[-1],
                          'val_loss': history.history['val_loss'][-1]}))
    hvd.shutdown()


if __name__ == '__main__':
    main()
