"""Small CNN on synthetic images: Conv2D, pooling, to_categorical, categorical crossentropy."""
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers, models
from tensorflow.keras.utils import to_categorical

tf.random.set_seed(1)
np.random.seed(1)
rng = np.random.RandomState(1)
n = 600
labels = rng.randint(0, 3, n)
images = rng.rand(n, 12, 12, 1).astype('float32') * 0.3
for i, label in enumerate(labels):  # a bright bar: horizontal, vertical or diagonal
    if label == 0:
        images[i, 6, 2:10, 0] += 1.
    elif label == 1:
        images[i, 2:10, 6, 0] += 1.
    else:
        images[i, range(2, 10), range(2, 10), 0] += 1.

model = models.Sequential([
    layers.Conv2D(8, 3, activation='relu', input_shape=(12, 12, 1)),
    layers.MaxPooling2D(),
    layers.Conv2D(16, 3, activation='relu', padding='same'),
    layers.GlobalAveragePooling2D(),
    layers.Dense(3, activation='softmax'),
])
model.compile(optimizer='adam', loss='categorical_crossentropy', metrics=['accuracy'])
model.fit(images[:500], to_categorical(labels[:500]), epochs=8, batch_size=32, verbose=0)
_, accuracy = model.evaluate(images[500:], to_categorical(labels[500:], 3), verbose=0)
print('RESULT accuracy=%.4f' % accuracy)
