"""Unit tests of `torchk.callbacks.TensorBoard`: what it writes, read back with TensorBoard's
own event reader and compared with the History (and batch logs) of the same fit.

The step rules are Keras 2.3.1's (keras/callbacks/tensorboard_v1.py:326-362): the epoch
with `update_freq='epoch'`, else the number of samples seen.
"""
import json
import os
import sys
import warnings

import numpy as np
import pytest
import torch

import keras
from keras import backend as K
from keras.callbacks import LambdaCallback, LearningRateScheduler
from keras.layers import Dense, Embedding, Flatten
from keras.models import Sequential

from event_files import (histogram_stats, histogram_steps, image, read_events, scalars,
                         stats)
from torchk import callbacks
from torchk.callbacks import TensorBoard

# 50 samples in batches of 16: batch sizes 16, 16, 16, 2 in every epoch.
SAMPLES, BATCH = 50, 16


@pytest.fixture(autouse=True)
def seeded():
    K.clear_session()  # layer and variable names start again: 'dense/kernel:0'
    np.random.seed(0)
    torch.manual_seed(0)


def linear_data(samples=SAMPLES):
    rng = np.random.RandomState(1)
    x = rng.normal(size=(samples, 4)).astype('float32')
    y = x.dot(rng.normal(size=(4, 2))).astype('float32')
    return x, y


def linear_model(lr=0.05):
    model = Sequential([Dense(2, input_shape=(4,), name='dense')])
    model.compile(keras.optimizers.SGD(lr=lr), 'mse', metrics=['mae'])
    return model


def batch_logs_recorder():
    """A callback keeping (samples seen, logs) after every batch."""
    seen = []

    def on_batch_end(batch, logs):
        total = (seen[-1][0] if seen else 0) + logs['size']
        seen.append((total, dict(logs)))
    return seen, LambdaCallback(on_batch_end=on_batch_end)


def test_missing_tensorboard_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'torch.utils.tensorboard', None)
    with pytest.raises(ImportError, match=r"pip install 'torchk\[tensorboard\]'"):
        TensorBoard()


@pytest.mark.parametrize('kwargs, message', [
    ({'update_freq': 'often'}, 'update_freq'),
    ({'update_freq': 0}, 'update_freq'),
    ({'update_freq': 2.5}, 'update_freq'),
    ({'profile_batch': -1}, 'profile_batch'),
    ({'profile_batch': '2'}, 'profile_batch'),
])
def test_rejects_arguments_keras_would_not_accept(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        TensorBoard(str(tmp_path), **kwargs)


def test_epoch_scalars_equal_the_history(tmp_path):
    x, y = linear_data()
    model = linear_model()
    history = model.fit(x, y, batch_size=BATCH, epochs=3, validation_split=0.2, verbose=0,
                        callbacks=[TensorBoard(str(tmp_path))])
    events = read_events(tmp_path)
    assert set(events.Tags()['scalars']) == {'loss', 'mae', 'val_loss', 'val_mae', 'lr'}
    for tag in ('loss', 'mae', 'val_loss', 'val_mae'):
        expected = [(epoch, float(v)) for epoch, v in enumerate(history.history[tag])]
        steps, values = zip(*scalars(events, tag))
        assert list(steps) == [0, 1, 2]
        np.testing.assert_allclose(values, [v for _, v in expected], rtol=1e-6)
    assert scalars(events, 'lr') == [(0, pytest.approx(0.05)), (1, pytest.approx(0.05)),
                                     (2, pytest.approx(0.05))]


def test_learning_rate_follows_the_schedule(tmp_path):
    # LearningRateScheduler after TensorBoard: the logs TensorBoard sees have no 'lr' yet,
    # so it reads the optimizer's, which History then gets from the scheduler.
    x, y = linear_data()
    model = linear_model()
    schedule = LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1))
    history = model.fit(x, y, batch_size=BATCH, epochs=3, verbose=0,
                        callbacks=[TensorBoard(str(tmp_path)), schedule])
    steps, values = zip(*scalars(read_events(tmp_path), 'lr'))
    assert list(steps) == [0, 1, 2]
    np.testing.assert_allclose(values, history.history['lr'], rtol=1e-6)
    np.testing.assert_allclose(values, [0.1, 0.05, 0.1 / 3], rtol=1e-6)


@pytest.mark.parametrize('update_freq, batch_steps', [
    ('batch', [16, 32, 48, 50, 66, 82, 98, 100]),
    # Written once 20 samples have passed since the last write: 32, then 66 and 98.
    (20, [32, 66, 98]),
])
def test_batch_scalars_at_samples_seen(tmp_path, update_freq, batch_steps):
    x, y = linear_data()
    model = linear_model()
    seen, recorder = batch_logs_recorder()
    history = model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0,
                        callbacks=[recorder, TensorBoard(str(tmp_path), update_freq=update_freq)])
    by_samples = dict(seen)
    # The epoch logs are written at the samples seen by the epoch's end: 50 and 100.
    expected = sorted([(step, float(by_samples[step]['loss'])) for step in batch_steps] +
                      [(50 * (epoch + 1), float(v))
                       for epoch, v in enumerate(history.history['loss'])],
                      key=lambda item: item[0])
    written = scalars(read_events(tmp_path), 'loss')
    assert [step for step, _ in written] == [step for step, _ in expected]
    np.testing.assert_allclose([v for _, v in written], [v for _, v in expected], rtol=1e-6)


def test_histograms_every_histogram_freq_epochs_on_validation_data(tmp_path):
    x, y = linear_data()
    x_val, y_val = linear_data(20)
    model = linear_model()
    kernel, bias = model.layers[0].weights
    at_epoch_end = {}

    def record(epoch, logs):
        at_epoch_end[epoch] = (K.batch_get_value([kernel, bias]), model.predict(x_val))
    board = TensorBoard(str(tmp_path), histogram_freq=2, write_grads=True, batch_size=8)
    model.fit(x, y, batch_size=BATCH, epochs=3, verbose=0, validation_data=(x_val, y_val),
              callbacks=[LambdaCallback(on_epoch_end=record), board])
    events = read_events(tmp_path)
    tags = ['dense/kernel_0', 'dense/bias_0', 'dense_out',
            'dense/kernel_0_grad', 'dense/bias_0_grad']
    assert sorted(events.Tags()['histograms']) == sorted(tags)
    for tag in tags:
        assert histogram_steps(events, tag) == [0, 2]
    for epoch in (0, 2):
        (w, b), prediction = at_epoch_end[epoch]
        np.testing.assert_allclose(histogram_stats(events, 'dense/kernel_0', epoch),
                                   stats(w), rtol=1e-5)
        np.testing.assert_allclose(histogram_stats(events, 'dense/bias_0', epoch),
                                   stats(b), rtol=1e-5)
        np.testing.assert_allclose(histogram_stats(events, 'dense_out', epoch),
                                   stats(prediction), rtol=1e-5)
        # The gradients of the mse loss on the validation batches (8, 8, 4), all together.
        grads = [np_mse_grads(w, b, x_val[i:i + 8], y_val[i:i + 8]) for i in (0, 8, 16)]
        np.testing.assert_allclose(histogram_stats(events, 'dense/kernel_0_grad', epoch),
                                   stats([g[0] for g in grads]), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(histogram_stats(events, 'dense/bias_0_grad', epoch),
                                   stats([g[1] for g in grads]), rtol=1e-4, atol=1e-6)


def np_mse_grads(kernel, bias, x, y):
    """Gradients of Keras' 'mse' (mean over samples and outputs) of a linear layer."""
    residual = x.dot(kernel) + bias - y
    return [2. * x.T.dot(residual) / residual.size, 2. * residual.sum(axis=0) / residual.size]


def tf_image(w):
    """TF's image summary scaling of float values, to uint8 (summary_image_op.cc: float32
    `image * scale + offset`, then a truncating cast)."""
    w = np.asarray(w, 'float32')
    largest = np.abs(w).max()
    if w.min() >= 0:
        scale, offset = np.float32(255.) / largest, np.float32(0.)
    else:
        scale, offset = np.float32(127.) / largest, np.float32(128.)
    return (w * scale + offset).astype('uint8')


@pytest.mark.parametrize('shape, layout', [
    ((5,), lambda w: w.reshape(5, 1, 1)),                       # a bias: one column
    ((3, 6), lambda w: w.reshape(3, 6, 1)),                     # wider than high: as is
    ((6, 3), lambda w: w.T.reshape(3, 6, 1)),                   # higher than wide: transposed
    ((2, 2, 1, 3), lambda w: np.concatenate(                    # conv kernel: one per output
        [w[:, :, 0, k] for k in range(3)], axis=1).reshape(2, 6, 1)),
])
@pytest.mark.parametrize('sign', [1., -1.])
def test_weight_images_as_keras_lays_them_out(tmp_path, shape, layout, sign):
    values = np.random.RandomState(2).uniform(0.1, 1., size=shape)
    if sign < 0:
        values[(0,) * len(shape)] *= -1.
    writer_dir = tmp_path / 'images'
    board = TensorBoard(str(writer_dir))
    board.writer = board._writer_class(str(writer_dir))
    board.writer.add_images('w', callbacks._weight_image(values), 0, dataformats='NHWC')
    board.writer.close()
    expected = tf_image(layout(values))
    written = image(read_events(writer_dir), 'w', 0)
    np.testing.assert_array_equal(written, np.repeat(expected, 3, axis=-1))


def test_weights_of_other_ranks_get_no_image():
    assert callbacks._weight_image(np.ones((2, 2, 2, 2))) is None
    assert callbacks._weight_image(np.ones((1, 1))) is None


def test_images_written_at_histogram_epochs(tmp_path):
    x, y = linear_data()
    model = linear_model()
    model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0, validation_split=0.2,
              callbacks=[TensorBoard(str(tmp_path), histogram_freq=1, write_images=True)])
    events = read_events(tmp_path)
    assert sorted(events.Tags()['images']) == ['dense/bias_0', 'dense/kernel_0']
    kernel, bias = model.get_weights()
    assert image(events, 'dense/kernel_0', 1).shape == (2, 4, 3)  # (4, 2) transposed
    np.testing.assert_array_equal(image(events, 'dense/kernel_0', 1)[..., 0],
                                  tf_image(kernel.T))
    np.testing.assert_array_equal(image(events, 'dense/bias_0', 1)[..., 0],
                                  tf_image(bias.reshape(2, 1)))


def embedding_model():
    model = Sequential([Embedding(10, 3, input_length=2, name='words'), Flatten(),
                        Dense(1, name='score')])
    model.compile('sgd', 'mse')
    return model


@pytest.mark.parametrize('layer_names, expected', [(None, ['words']),
                                                   (['words', 'score'], ['words', 'score'])])
def test_embeddings_for_the_projector(tmp_path, layer_names, expected):
    model = embedding_model()
    data = np.random.RandomState(3).randint(0, 10, size=(5, 2))
    labels = ['a', 'b', 'c', 'd', 'e']
    (tmp_path / 'labels.tsv').write_text('\n'.join(labels) + '\n')
    board = TensorBoard(str(tmp_path), embeddings_freq=2, embeddings_data=data,
                        embeddings_layer_names=layer_names, embeddings_metadata='labels.tsv',
                        batch_size=2)
    outputs = {}

    def record(epoch, logs):
        outputs[epoch] = {name: K.function(model.inputs, [model.get_layer(name).output])([data])[0]
                          for name in expected}
    model.fit(data, np.zeros((5, 1)), epochs=3, verbose=0,
              callbacks=[LambdaCallback(on_epoch_end=record), board])
    config = (tmp_path / 'projector_config.pbtxt').read_text()
    for epoch in (0, 2):
        for name in expected:
            directory = tmp_path / ('%05d' % epoch) / name
            assert 'tensor_path: "%05d/%s/tensors.tsv"' % (epoch, name) in config
            written = np.loadtxt(str(directory / 'tensors.tsv'), ndmin=2)
            np.testing.assert_allclose(written, outputs[epoch][name].reshape(5, -1), rtol=1e-5)
            assert (directory / 'metadata.tsv').read_text().split() == labels
    assert not (tmp_path / '00001').exists()


def test_embeddings_metadata_with_columns(tmp_path):
    rows = [['label', 'count']] + [[str(i), str(10 * i)] for i in range(4)]
    path = tmp_path / 'meta.tsv'
    path.write_text('\n'.join('\t'.join(r) for r in rows) + '\n')
    assert callbacks._read_metadata(str(path)) == (rows[1:], rows[0])


@pytest.mark.parametrize('kwargs, fit_kwargs, message', [
    ({'histogram_freq': 1}, {}, 'validation_data must be provided'),
    ({'embeddings_freq': 1}, {'validation_split': 0.2}, 'embeddings_data must be provided'),
])
def test_missing_data_raises_as_in_keras(tmp_path, kwargs, fit_kwargs, message):
    x, y = linear_data()
    with pytest.raises(ValueError, match=message):
        linear_model().fit(x, y, epochs=1, verbose=0, callbacks=[TensorBoard(str(tmp_path),
                                                                             **kwargs)],
                           **fit_kwargs)


def test_graph_of_the_layers(tmp_path):
    x, y = linear_data()
    model = Sequential([Dense(3, input_shape=(4,), name='hidden'), Dense(2, name='out')])
    model.compile('sgd', 'mse')
    model.fit(x, y, epochs=1, verbose=0, callbacks=[TensorBoard(str(tmp_path))])
    nodes = read_events(tmp_path).Graph().node
    assert [node.name for node in nodes] == ['%s/hidden' % model.name, '%s/out' % model.name]
    assert list(nodes[1].input) == ['%s/hidden' % model.name]


def test_no_graph_without_write_graph(tmp_path):
    x, y = linear_data()
    linear_model().fit(x, y, epochs=1, verbose=0,
                       callbacks=[TensorBoard(str(tmp_path), write_graph=False)])
    assert not read_events(tmp_path).Tags()['graph']


def test_subclassed_model_graph_is_not_written_with_a_warning(tmp_path):
    class Subclassed(keras.models.Model):
        def __init__(self):
            super(Subclassed, self).__init__()
            self.dense = Dense(2)

        def call(self, inputs):
            return self.dense(inputs)
    model = Subclassed()
    board = TensorBoard(str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        board.set_model(model)
    board.writer.close()
    assert any('graph of model' in str(w.message) and 'no config' in str(w.message)
               for w in caught)
    assert not read_events(tmp_path).Tags()['graph']


@pytest.mark.parametrize('profile_batch, traces', [(0, 0), (2, 1), (99, 0)])
def test_profile_batch_writes_one_torch_profiler_trace(tmp_path, profile_batch, traces):
    x, y = linear_data()
    linear_model().fit(x, y, batch_size=BATCH, epochs=1, verbose=0,
                       callbacks=[TensorBoard(str(tmp_path), profile_batch=profile_batch)])
    files = [f for f in os.listdir(str(tmp_path)) if f.endswith('.pt.trace.json')]
    assert len(files) == traces
    for name in files:
        with open(os.path.join(str(tmp_path), name)) as f:
            trace = json.load(f)
        assert trace['traceEvents'], 'an empty trace'


def test_histograms_run_the_validation_data_in_test_mode(tmp_path):
    # Keras passes the learning phase 0 with the validation arrays: no dropout.
    x, y = linear_data()
    model = Sequential([Dense(8, input_shape=(4,), name='hidden'),
                        keras.layers.Dropout(0.5, name='dropout'), Dense(2, name='out')])
    model.compile('sgd', 'mse')
    assert model.uses_learning_phase
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, validation_split=0.4,
              callbacks=[TensorBoard(str(tmp_path), histogram_freq=1)])
    events = read_events(tmp_path)
    hidden = K.function(model.inputs, [model.get_layer('hidden').output])([x[30:]])[0]
    assert histogram_stats(events, 'dropout_out', 0) == histogram_stats(events, 'hidden_out', 0)
    np.testing.assert_allclose(histogram_stats(events, 'hidden_out', 0), stats(hidden),
                               rtol=1e-5)
