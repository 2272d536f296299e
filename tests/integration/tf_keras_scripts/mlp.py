"""Sequential MLP on tabular data: Adam(lr=...), EarlyStopping(restore_best_weights)."""
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

keras.utils.set_random_seed(0)
rng = np.random.RandomState(0)
x = rng.randn(1200, 8).astype('float32')
y = (x[:, 0] + x[:, 1] * x[:, 2] > 0).astype('int32')

model = keras.Sequential([
    layers.Dense(32, activation='relu', input_shape=(8,)),
    layers.Dropout(0.1),
    layers.Dense(32, activation='gelu'),
    layers.Dense(2, activation='softmax'),
])
model.compile(optimizer=keras.optimizers.Adam(lr=0.01),
              loss='sparse_categorical_crossentropy', metrics=['accuracy'])
stop = keras.callbacks.EarlyStopping(monitor='val_loss', patience=3, restore_best_weights=True)
model.fit(x[:1000], y[:1000], epochs=30, batch_size=64, validation_split=0.1,
          callbacks=[stop], verbose=0)
loss, accuracy = model.evaluate(x[1000:], y[1000:], verbose=0)
print('RESULT accuracy=%.4f' % accuracy)
