"""Keras 2.3.1 and PyTorch together on torchk: torch modules trained inside Keras models by
`fit`, Keras models trained by `torch.optim` in a plain torch loop through `to_torch`, torch
`DataLoader`s feeding `fit_generator`, and h5 saving of models holding torch modules.

The CUDA tests at the end run only where a GPU is available and are skipped otherwise.
"""
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import keras
from keras import backend as K
from keras.layers import (BatchNormalization, Dense, Dropout, Flatten, GlobalAveragePooling1D,
                          Input, Lambda)
from keras.models import Model, Sequential, load_model

from torchk import config
from torchk.interop import DataLoaderSequence, TorchModule, to_torch

from .conftest import ACCURACY, blobs, one_hot, token_data

CLASSES = 3
FEATURES = 8


def torch_block():
    """The torch block of the models below (a module-level factory: importable by name)."""
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.BatchNorm1d(32),
                         nn.Dropout(0.1), nn.LayerNorm(32))


def _on_device(array):
    """`array` as a tensor on torchk's device, where the torch modules of these models live."""
    return torch.from_numpy(array).to(config.device())


def _classification(samples=256, seed=0):
    x, labels = blobs(samples, FEATURES, CLASSES, seed=seed)
    return x, labels


def _hybrid_model(block=None):
    """A functional Keras model: Dense -> TorchModule(torch block) -> Dense softmax."""
    inputs = Input(shape=(FEATURES,))
    hidden = TorchModule(block if block is not None else torch_block())(inputs)
    return Model(inputs, Dense(CLASSES, activation='softmax')(hidden))


# ------------------------------------------------------------------------------------------
# Torch modules trained by Keras.

def test_torch_block_in_a_keras_model_trains_with_fit():
    x, labels = _classification(256, seed=0)
    x_test, labels_test = _classification(200, seed=1)
    model = _hybrid_model()
    block = model.layers[1].module
    model.compile(keras.optimizers.Adam(0.01), 'sparse_categorical_crossentropy',
                  metrics=['accuracy'])
    first_loss = model.evaluate(x, labels, batch_size=256, verbose=0)[0]
    first_weight = K.get_value(model.layers[1].trainable_weights[0])
    history = model.fit(x, labels, batch_size=32, epochs=8, verbose=0)
    assert history.history['loss'][-1] < 0.25 * first_loss
    assert model.evaluate(x_test, labels_test, batch_size=200, verbose=0)[1] >= 0.95
    # The optimizer trained the torch parameters in place; fit ran the batch norm in
    # training mode (8 epochs of 8 batches) and predict runs the module in eval mode.
    assert not np.array_equal(K.get_value(block[0].weight), first_weight)
    assert int(block[2].num_batches_tracked) == 64
    assert block.training      # the module's own mode is restored after each Keras call
    # The module called eagerly computes what Keras predicts. (`torch.matmul`, not `@`:
    # Python operators on Keras variables are Keras ops.)
    dense = model.layers[2]
    with torch.no_grad():
        eager = F.softmax(torch.add(torch.matmul(block.eval()(_on_device(x_test)),
                                                 dense.kernel), dense.bias), dim=-1)
    np.testing.assert_allclose(model.predict(x_test), eager.cpu().numpy(), rtol=1e-4, atol=1e-5)


def test_conv2d_block_channels_first_trains_with_fit():
    rng = np.random.RandomState(0)
    labels = rng.randint(0, 2, size=256)
    x = rng.normal(0., 1., size=(256, 1, 8, 8)).astype('float32')
    x[labels == 1, :, 2:6, 2:6] += 1.5     # class 1: a bright square in the middle
    model = Sequential([
        TorchModule(nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
                                  nn.MaxPool2d(2)), input_shape=(1, 8, 8)),
        Flatten(),
        Dense(1, activation='sigmoid'),
    ])
    assert model.layers[0].output_shape == (None, 8, 4, 4)
    model.compile(keras.optimizers.Adam(0.01), 'binary_crossentropy', metrics=['accuracy'])
    model.fit(x, labels, batch_size=32, epochs=6, verbose=0)
    assert model.evaluate(x, labels, verbose=0)[1] >= 0.95


def test_embedding_module_with_integer_inputs():
    x, y = token_data(256, length=12, vocab=30, seed=0)
    model = Sequential([
        TorchModule(nn.Embedding(30, 8), input_shape=(12,), dtype='int32'),
        GlobalAveragePooling1D(),
        Dense(1, activation='sigmoid'),
    ])
    assert model.output_shape == (None, 1)
    model.compile(keras.optimizers.Adam(0.02), 'binary_crossentropy', metrics=['accuracy'])
    model.fit(x, y, batch_size=32, epochs=15, verbose=0)
    assert model.evaluate(x, y, verbose=0)[1] >= 0.9


def test_lambda_with_torch_functions_records_lazily_and_trains():
    x, labels = _classification(256, seed=0)
    model = Sequential([
        Dense(16, input_shape=(FEATURES,)),
        Lambda(lambda t: torch.cat([F.gelu(t), torch.sin(t)], dim=-1), output_shape=(32,)),
        Dense(CLASSES, activation='softmax'),
    ])
    model.compile(keras.optimizers.Adam(0.01), 'sparse_categorical_crossentropy',
                  metrics=['accuracy'])
    model.fit(x, labels, batch_size=32, epochs=8, verbose=0)
    assert model.evaluate(x, labels, verbose=0)[1] >= 0.95


def test_save_weights_and_load_weights_include_the_torch_module(tmp_path):
    x, labels = _classification(128, seed=0)
    model = _hybrid_model()
    model.compile(keras.optimizers.Adam(0.01), 'sparse_categorical_crossentropy')
    model.fit(x, labels, batch_size=32, epochs=2, verbose=0)
    path = str(tmp_path / 'hybrid.h5')
    model.save_weights(path)

    other = _hybrid_model()
    assert not np.allclose(other.predict(x), model.predict(x))
    other.load_weights(path)
    np.testing.assert_array_equal(other.predict(x), model.predict(x))
    other_block, block = other.layers[1].module, model.layers[1].module
    for mine, theirs in zip(other_block.state_dict().values(), block.state_dict().values()):
        assert torch.equal(mine, theirs)     # parameters and batch-norm statistics


def test_whole_model_save_needs_a_factory(tmp_path):
    x, labels = _classification(64, seed=0)
    with pytest.raises(NotImplementedError, match='factory='):
        _hybrid_model().save(str(tmp_path / 'no_factory.h5'))

    inputs = Input(shape=(FEATURES,))
    hidden = TorchModule(factory=torch_block)(inputs)
    model = Model(inputs, Dense(CLASSES, activation='softmax')(hidden))
    model.compile(keras.optimizers.Adam(0.01), 'sparse_categorical_crossentropy')
    model.fit(x, labels, batch_size=32, epochs=1, verbose=0)
    path = str(tmp_path / 'factory.h5')
    model.save(path)
    loaded = load_model(path, custom_objects={'TorchModule': TorchModule})
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    assert loaded.layers[1].module is not model.layers[1].module
    loaded.fit(x, labels, batch_size=32, epochs=1, verbose=0)   # the optimizer state loaded


# ------------------------------------------------------------------------------------------
# Keras models trained by torch.

def _keras_classifier():
    return Sequential([
        Dense(32, activation='relu', input_shape=(FEATURES,)),
        BatchNormalization(),
        Dropout(0.2),
        Dense(CLASSES),      # logits, for F.cross_entropy
    ])


def _loader(x, labels, batch_size=32, shuffle=True):
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(labels))
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle)


def test_keras_model_trained_by_a_torch_loop_with_a_scheduler():
    x, labels = _classification(256, seed=0)
    x_test, labels_test = _classification(200, seed=1)
    model = _keras_classifier()
    module = to_torch(model)
    optimizer = torch.optim.Adam(module.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    inputs, targets = _on_device(x), _on_device(labels)

    def full_loss():
        module.eval()
        with torch.no_grad():
            return F.cross_entropy(module(inputs), targets).item()

    first_loss = full_loss()
    for _ in range(8):
        module.train()
        for xb, yb in _loader(x, labels):
            optimizer.zero_grad()
            F.cross_entropy(module(xb.to(config.device())), yb.to(config.device())).backward()
            optimizer.step()
        scheduler.step()
    assert optimizer.param_groups[0]['lr'] == pytest.approx(0.01 * 0.5 ** 2)
    assert full_loss() < 0.2 * first_loss

    # Keras sees the trained weights: predict equals the torch module in eval mode.
    logits = model.predict(x_test)
    assert np.mean(logits.argmax(-1) == labels_test) >= 0.95
    with torch.no_grad():
        np.testing.assert_allclose(module.eval()(_on_device(x_test)).cpu().numpy(), logits,
                                   rtol=1e-5, atol=1e-5)
    # ...and the torch view holds the Keras variables themselves.
    assert all(p is w for p, w in zip(module.parameters(), model.trainable_weights))


def test_keras_model_inside_a_larger_torch_model():
    x, labels = _classification(256, seed=0)
    keras_part = Sequential([Dense(16, activation='tanh', input_shape=(6,)), Dense(CLASSES)])

    class Hybrid(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Linear(FEATURES, 6)
            self.head = to_torch(keras_part)

        def forward(self, inputs):
            return self.head(torch.relu(self.encoder(inputs)))

    hybrid = Hybrid().to(config.device())
    assert len(list(hybrid.parameters())) == 2 + 4
    optimizer = torch.optim.SGD(hybrid.parameters(), lr=0.1, momentum=0.9)
    encoder_before = hybrid.encoder.weight.detach().clone()
    for _ in range(10):
        for xb, yb in _loader(x, labels):
            optimizer.zero_grad()
            F.cross_entropy(hybrid(xb.to(config.device())), yb.to(config.device())).backward()
            optimizer.step()
    with torch.no_grad():
        predicted = hybrid(_on_device(x)).argmax(-1).cpu().numpy()
    assert np.mean(predicted == labels) >= 0.95
    assert not torch.equal(hybrid.encoder.weight, encoder_before)   # gradients went through


def test_model_with_a_torch_block_trained_by_torch_then_by_keras():
    x, labels = _classification(256, seed=0)
    model = _hybrid_model()
    module = to_torch(model)
    assert len(list(module.parameters())) == len(model.trainable_weights) == 8
    optimizer = torch.optim.Adam(module.parameters(), lr=0.01)
    for _ in range(3):
        for xb, yb in _loader(x, labels):
            optimizer.zero_grad()
            F.nll_loss(torch.log(module(xb.to(config.device())) + 1e-7),
                       yb.to(config.device())).backward()
            optimizer.step()
    model.compile(keras.optimizers.Adam(0.001), 'sparse_categorical_crossentropy',
                  metrics=['accuracy'])
    loss, accuracy = model.evaluate(x, labels, verbose=0)
    assert accuracy >= 0.95
    model.fit(x, labels, batch_size=32, epochs=1, verbose=0)
    assert model.evaluate(x, labels, verbose=0)[0] < loss


# ------------------------------------------------------------------------------------------
# DataLoaders feeding Keras.

def test_fit_generator_from_data_loaders():
    x, labels = _classification(256, seed=0)
    x_test, labels_test = _classification(200, seed=1)
    model = Sequential([Dense(16, activation='relu', input_shape=(FEATURES,)),
                        Dense(CLASSES, activation='softmax')])
    model.compile(keras.optimizers.Adam(0.01), 'sparse_categorical_crossentropy',
                  metrics=['accuracy'])
    train = DataLoaderSequence(_loader(x, labels))
    validation = DataLoaderSequence(_loader(x_test, labels_test, batch_size=50, shuffle=False))
    history = model.fit_generator(train, epochs=8, validation_data=validation, verbose=0)
    assert len(history.history['loss']) == 8
    assert history.history['val_' + ACCURACY][-1] >= 0.95
    # Keras 2.3.1's evaluate_generator reports the last batch's loss, not the mean
    # (training_generator.py:420); its accuracy is over all the batches.
    accuracy = model.evaluate_generator(validation)[1]
    assert accuracy == pytest.approx(model.evaluate(x_test, labels_test, verbose=0)[1])
    probabilities = model.predict_generator(validation)
    np.testing.assert_allclose(probabilities, model.predict(x_test), rtol=1e-6, atol=1e-7)


def test_fit_generator_with_one_hot_targets_and_no_keras_workers():
    x, labels = _classification(256, seed=0)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(x),
                                             torch.from_numpy(one_hot(labels, CLASSES)))
    loader = torch.utils.data.DataLoader(dataset, batch_size=64, shuffle=True)
    model = Sequential([Dense(CLASSES, activation='softmax', input_shape=(FEATURES,))])
    model.compile(keras.optimizers.Adam(0.05), 'categorical_crossentropy',
                  metrics=['accuracy'])
    model.fit_generator(DataLoaderSequence(loader), epochs=10, workers=0, verbose=0)
    assert model.evaluate(x, one_hot(labels, CLASSES), verbose=0)[1] >= 0.95


# ------------------------------------------------------------------------------------------
# CUDA.

cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')


@pytest.fixture
def on_cuda():
    """Creates this test's variables on the GPU."""
    previous = config.device()
    config.set_device('cuda')
    yield
    config.set_device(previous)


@cuda_only
def test_cuda_torch_block_trains_with_fit(on_cuda):
    x, labels = _classification(256, seed=0)
    model = _hybrid_model(torch_block().cuda())
    assert all(w.device.type == 'cuda' for w in model.weights)
    model.compile(keras.optimizers.Adam(0.01), 'sparse_categorical_crossentropy',
                  metrics=['accuracy'])
    model.fit(x, labels, batch_size=32, epochs=8, verbose=0)
    assert model.evaluate(x, labels, verbose=0)[1] >= 0.95


@cuda_only
def test_cuda_keras_model_trained_by_a_torch_loop(on_cuda):
    x, labels = _classification(256, seed=0)
    model = _keras_classifier()
    module = to_torch(model)
    optimizer = torch.optim.Adam(module.parameters(), lr=0.01)
    for _ in range(8):
        for xb, yb in _loader(x, labels):
            optimizer.zero_grad()
            logits = module(xb)                     # CPU inputs are moved to the GPU
            assert logits.device.type == 'cuda'
            F.cross_entropy(logits, yb.cuda()).backward()
            optimizer.step()
    assert np.mean(model.predict(x).argmax(-1) == labels) >= 0.95


@cuda_only
def test_cuda_fit_generator_from_a_loader_of_gpu_tensors(on_cuda):
    x, labels = _classification(256, seed=0)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(x).cuda(),
                                             torch.from_numpy(labels).cuda())
    loader = torch.utils.data.DataLoader(dataset, batch_size=32, shuffle=True)
    model = Sequential([Dense(16, activation='relu', input_shape=(FEATURES,)),
                        Dense(CLASSES, activation='softmax')])
    model.compile(keras.optimizers.Adam(0.01), 'sparse_categorical_crossentropy',
                  metrics=['accuracy'])
    model.fit_generator(DataLoaderSequence(loader), epochs=8, verbose=0)
    assert model.evaluate(x, labels, verbose=0)[1] >= 0.95
