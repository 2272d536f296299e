"""Watching training: an unmodified `keras.callbacks.TensorBoard` fit on torchk, read back
with TensorBoard's own event reader; `model.summary()`, `keras.utils.plot_model`, and
`keras.utils.multi_gpu_model`'s pointer to torchk.distributed.
"""
import json
import os
import shutil

import numpy as np
import pytest

import keras
from keras.callbacks import TensorBoard
from keras.layers import Dense, Embedding, Flatten, GlobalAveragePooling1D
from keras.models import Sequential

from event_files import histogram_steps, image, read_events, scalars
from integration.conftest import ACCURACY, token_data

VOCAB, LENGTH, DIM = 30, 12, 4


def token_classifier():
    model = Sequential([Embedding(VOCAB, DIM, input_length=LENGTH, name='tokens'),
                        GlobalAveragePooling1D(name='pool'),
                        Dense(8, activation='relu', name='hidden'),
                        Dense(1, activation='sigmoid', name='out')])
    model.compile(keras.optimizers.Adam(lr=0.02), 'binary_crossentropy', metrics=['accuracy'])
    return model


def test_fit_with_keras_tensorboard(tmp_path):
    x, y = token_data(samples=256)
    x_val, y_val = token_data(samples=64, seed=1)
    words = np.arange(1, 9).reshape(-1, 1).repeat(LENGTH, axis=1)  # 8 one-word sequences
    (tmp_path / 'words.tsv').write_text('\n'.join('w%d' % w for w in words[:, 0]) + '\n')
    board = TensorBoard(log_dir=str(tmp_path), histogram_freq=2, batch_size=32,
                        write_grads=True, write_images=True, embeddings_freq=2,
                        embeddings_layer_names=['tokens'], embeddings_metadata='words.tsv',
                        embeddings_data=words, profile_batch=3)
    model = token_classifier()
    history = model.fit(
        x, y, batch_size=32, epochs=5, validation_data=(x_val, y_val), verbose=0,
        callbacks=[board])
    assert history.history['val_' + ACCURACY][-1] >= 0.85, history.history
    events = read_events(tmp_path)

    # Scalars: every History entry at its epoch, and the learning rate.
    names = ['loss', ACCURACY, 'val_loss', 'val_' + ACCURACY]
    assert sorted(events.Tags()['scalars']) == sorted(names + ['lr'])
    for name in names:
        steps, values = zip(*scalars(events, name))
        assert list(steps) == list(range(5))
        np.testing.assert_allclose(values, np.asarray(history.history[name], 'float64'),
                                   rtol=1e-6)
    np.testing.assert_allclose([v for _, v in scalars(events, 'lr')], [0.02] * 5, rtol=1e-6)

    # Histograms at epochs 0, 2, 4: weights, layer outputs, gradients.
    # Weight tags are the variable names with ':' as '_': 'hidden/kernel_0' (TF-style names
    # stay unique in a process, so a second 'hidden' layer has 'hidden/kernel_1_0').
    weights = [w.name.replace(':', '_') for w in model.weights]
    assert [w.split('/')[0] for w in weights] == ['tokens', 'hidden', 'hidden', 'out', 'out']
    outputs = ['tokens_out', 'pool_out', 'hidden_out', 'out_out']
    grads = [w + '_grad' for w in weights]
    assert sorted(events.Tags()['histograms']) == sorted(weights + outputs + grads)
    for tag in weights + outputs + grads:
        assert histogram_steps(events, tag) == [0, 2, 4], tag

    # Images of the weights, at the same epochs; the (30, 4) embedding matrix transposed.
    # The (1,) bias squeezes to a scalar, which Keras draws no image of.
    assert sorted(events.Tags()['images']) == sorted(weights[:4])
    assert [e.step for e in events.Images(weights[1])] == [0, 2, 4]
    assert image(events, weights[0], 4).shape == (DIM, VOCAB, 3)

    # Embeddings for the projector: one (8 x 48) tensor per embedding epoch, with labels.
    config = (tmp_path / 'projector_config.pbtxt').read_text()
    for epoch in (0, 2, 4):
        directory = tmp_path / ('%05d' % epoch) / 'tokens'
        assert 'tensor_path: "%05d/tokens/tensors.tsv"' % epoch in config
        assert np.loadtxt(str(directory / 'tensors.tsv')).shape == (8, LENGTH * DIM)
        assert (directory / 'metadata.tsv').read_text().split() == ['w%d' % i for i in range(1, 9)]

    # The layer graph and the profiler trace of the third batch.
    assert [n.name.split('/')[-1] for n in events.Graph().node] == ['tokens', 'pool', 'hidden',
                                                                    'out']
    traces = [f for f in os.listdir(str(tmp_path)) if f.endswith('.pt.trace.json')]
    assert len(traces) == 1
    with open(str(tmp_path / traces[0])) as f:
        assert json.load(f)['traceEvents']


def flatten_classifier():
    return Sequential([Embedding(VOCAB, DIM, input_length=LENGTH, name='tokens'),
                       Flatten(name='flat'), Dense(3, name='out')])


def test_summary_prints_layers_shapes_and_parameters():
    lines = []
    flatten_classifier().summary(print_fn=lines.append)
    text = '\n'.join(lines)
    for expected in ('tokens (Embedding)', '(None, 12, 4)', '120',
                     'flat (Flatten)', '(None, 48)',
                     'out (Dense)', '(None, 3)', '147',
                     'Total params: 267', 'Trainable params: 267'):
        assert expected in text, (expected, text)


@pytest.mark.skipif(shutil.which('dot') is None,
                    reason="keras.utils.plot_model needs Graphviz's `dot` binary, not on PATH "
                    '(apt-get install graphviz; .ci/run installs it)')
def test_plot_model_draws_the_layers(tmp_path):
    model = flatten_classifier()
    path = tmp_path / 'model.png'
    keras.utils.plot_model(model, to_file=str(path), show_shapes=True)
    assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    labels = [node.get_label() or '' for node in
              keras.utils.vis_utils.model_to_dot(model, show_shapes=True).get_nodes()]
    assert any('flat: Flatten' in label and '(None, 48)' in label for label in labels), labels


def test_multi_gpu_model_points_to_torchk_distributed():
    with pytest.raises(ValueError, match='torchk.distributed'):
        keras.utils.multi_gpu_model(flatten_classifier(), gpus=2)
