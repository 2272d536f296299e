"""A Keras 2 model trained on torchk: an MLP classifying synthetic clusters.

Run:  python examples/train_mlp.py
Unmodified keras 2.3.1 builds, trains and evaluates the model; torchk runs it on PyTorch
(on CUDA when there is a GPU).
"""
import os

os.environ.setdefault('KERAS_BACKEND', 'torchk.core')

import numpy as np  # noqa: E402

import keras  # noqa: E402
from keras import backend as K  # noqa: E402
from keras.layers import Dense, Dropout  # noqa: E402
from keras.models import Sequential  # noqa: E402


def make_data(samples, classes=4, features=20, seed=0):
    """Gaussian clusters, one per class, with some overlap; the same clusters for every
    seed, which only changes the points drawn."""
    centers = np.random.RandomState(1234).normal(0., 2., size=(classes, features))
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, classes, size=samples)
    points = centers[labels] + rng.normal(0., 1.5, size=(samples, features))
    return points.astype('float32'), keras.utils.to_categorical(labels, classes)


def main():
    x_train, y_train = make_data(4000, seed=0)
    x_test, y_test = make_data(1000, seed=1)
    model = Sequential([
        Dense(64, activation='relu', input_shape=(20,)),
        Dropout(0.2),
        Dense(64, activation='relu'),
        Dense(4, activation='softmax'),
    ])
    model.compile(optimizer='adam', loss='categorical_crossentropy', metrics=['accuracy'])
    model.fit(x_train, y_train, batch_size=64, epochs=5, verbose=2, validation_split=0.1)
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print('backend: %s  test loss: %.4f  test accuracy: %.4f' % (K.backend(), loss, accuracy))


if __name__ == '__main__':
    main()
