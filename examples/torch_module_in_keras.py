"""A torch module inside a Keras 2 model, trained by Keras' `fit`.

Run:  python examples/torch_module_in_keras.py
A residual MLP block written in PyTorch becomes a Keras layer with `TorchModule`: its
parameters are the layer's weights, so Keras' Adam trains them and `save_weights` stores
them. The block's batch norm and dropout follow Keras' learning phase (training mode in
`fit`, eval mode in `predict`). Synthetic data, no downloads.
"""
import os

os.environ.setdefault('KERAS_BACKEND', 'torchk.core')

import tempfile  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import keras  # noqa: E402
from keras.layers import Dense, Input  # noqa: E402
from keras.models import Model  # noqa: E402

from torchk.interop import TorchModule  # noqa: E402


class ResidualBlock(nn.Module):
    """x + MLP(norm(x)), in plain PyTorch."""

    def __init__(self, width, hidden):
        super().__init__()
        self.norm = nn.BatchNorm1d(width)
        self.mlp = nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Dropout(0.1),
                                 nn.Linear(hidden, width))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


def make_block():
    """The block's factory: with it, `model.save` and `clone_model` can rebuild the layer.

    The config records the factory's import path; in a project, define it in an importable
    module rather than in the script (`__main__`), so that other programs can load the model.
    """
    return ResidualBlock(32, 64)


def make_data(samples, classes=4, features=20, seed=0):
    """Classes defined by the signs of two random projections (not linearly separable)."""
    rng = np.random.RandomState(seed)
    directions = np.random.RandomState(42).normal(size=(features, 2))
    points = rng.normal(size=(samples, features)).astype('float32')
    projections = points.dot(directions)
    labels = (projections[:, 0] > 0).astype('int64') * 2 + (projections[:, 1] > 0)
    return points, labels


def main():
    torch.manual_seed(0)
    x_train, y_train = make_data(4000, seed=0)
    x_test, y_test = make_data(1000, seed=1)

    inputs = Input(shape=(20,))
    hidden = Dense(32, activation='relu')(inputs)
    hidden = TorchModule(factory=make_block, name='residual_block')(hidden)
    outputs = Dense(4, activation='softmax')(hidden)
    model = Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(0.003),
                  loss='sparse_categorical_crossentropy', metrics=['accuracy'])
    model.summary()
    model.fit(x_train, y_train, batch_size=64, epochs=5, verbose=2, validation_split=0.1)
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print('test loss: %.4f  test accuracy: %.4f' % (loss, accuracy))

    # The block's own parameters are the Keras weights that fit trained.
    block = model.get_layer('residual_block').module
    keras_weights = {id(w) for w in model.trainable_weights}
    print('block parameters are Keras weights: %s'
          % all(id(p) in keras_weights for p in block.parameters()))

    # The weights, batch-norm statistics included, survive save_weights/load_weights.
    path = os.path.join(tempfile.mkdtemp(), 'weights.h5')
    model.save_weights(path)
    copy = keras.models.clone_model(model)     # rebuilt from the config: uses the factory
    copy.load_weights(path)
    same = np.array_equal(copy.predict(x_test), model.predict(x_test))
    print('reloaded copy predicts the same: %s' % same)


if __name__ == '__main__':
    main()
