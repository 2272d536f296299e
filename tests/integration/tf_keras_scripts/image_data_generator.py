"""ImageDataGenerator with augmentation feeding fit (flow), evaluate on plain arrays."""
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras.preprocessing.image import ImageDataGenerator

keras.utils.set_random_seed(9)
rng = np.random.RandomState(9)
n = 600
labels = rng.randint(0, 2, n)
images = rng.rand(n, 16, 16, 3).astype('float32') * 0.2
for i, label in enumerate(labels):  # a bright blob: in the upper or the lower half
    row = rng.randint(1, 5) if label == 0 else rng.randint(10, 14)
    column = rng.randint(2, 13)
    images[i, row:row + 3, column:column + 3, :] += 0.8

generator = ImageDataGenerator(horizontal_flip=True, width_shift_range=0.1, rescale=1.)
model = keras.Sequential([
    keras.layers.Conv2D(8, 3, activation='relu', input_shape=(16, 16, 3)),
    keras.layers.MaxPooling2D(2),
    keras.layers.Flatten(),
    keras.layers.Dense(2, activation='softmax'),
])
model.compile(optimizer=keras.optimizers.Adam(0.005), loss='sparse_categorical_crossentropy',
              metrics=['accuracy'])
model.fit(generator.flow(images[:500], labels[:500], batch_size=32, seed=0),
          steps_per_epoch=16, epochs=6, verbose=0)
_, accuracy = model.evaluate(images[500:], labels[500:], verbose=0)
print('RESULT accuracy=%.4f' % accuracy)
