"""Callbacks: ReduceLROnPlateau, ModelCheckpoint to .h5, CSVLogger, LearningRateScheduler,
TensorBoard; a CosineDecay schedule as learning rate."""
import csv
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow import keras

keras.utils.set_random_seed(10)
rng = np.random.RandomState(10)
x = rng.randn(800, 5).astype('float32')
y = (x @ np.array([1., -2., 0.5, 0., 1.], dtype='float32') > 0).astype('float32')
work = tempfile.mkdtemp()


def model_with(optimizer):
    model = keras.Sequential([keras.layers.Dense(16, activation='relu', input_shape=(5,)),
                              keras.layers.Dense(1, activation='sigmoid')])
    model.compile(optimizer=optimizer, loss='binary_crossentropy', metrics=['accuracy'])
    return model


schedule = keras.optimizers.schedules.CosineDecay(0.05, decay_steps=200)
model = model_with(keras.optimizers.Adam(learning_rate=schedule))
checkpoint = os.path.join(work, 'best.h5')
callbacks = [
    keras.callbacks.ModelCheckpoint(checkpoint, monitor='val_accuracy', save_best_only=True),
    keras.callbacks.CSVLogger(os.path.join(work, 'log.csv')),
    keras.callbacks.TensorBoard(log_dir=os.path.join(work, 'logs')),
]
model.fit(x[:600], y[:600], validation_data=(x[600:], y[600:]), epochs=8, batch_size=32,
          callbacks=callbacks, verbose=0)
with open(os.path.join(work, 'log.csv')) as f:
    rows = list(csv.DictReader(f))
assert len(rows) == 8 and 'val_accuracy' in rows[0], rows[:1]
best = keras.models.load_model(checkpoint)

rates = []
plain = model_with(keras.optimizers.SGD(learning_rate=0.1))
plain.fit(x[:600], y[:600], validation_data=(x[600:], y[600:]), epochs=6, batch_size=32,
          verbose=0, callbacks=[
              keras.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.9),
              keras.callbacks.ReduceLROnPlateau(monitor='loss', factor=0.5, patience=1),
              keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: rates.append(
                  float(keras.backend.get_value(plain.optimizer.lr))))])
assert rates[0] < 0.1 and all(b <= a for a, b in zip(rates, rates[1:])), rates
_, accuracy = best.evaluate(x[600:], y[600:], verbose=0)
print('RESULT accuracy=%.4f' % accuracy)
