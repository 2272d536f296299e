"""Whole-step compile (torchk/passes/compiled.py, `TORCHK_COMPILE=1`): Keras models trained
with `train_on_batch` compiled as one graph (no graph break) reach the losses and weights of
the plain programs; inductor's on-disk cache serves a second process."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from torch._dynamo.utils import counters

import keras
from keras import layers
from torchk.passes import compiled

STEPS = 3


def _mlp():
    return keras.models.Sequential([
        layers.Dense(16, activation='relu', input_shape=(6,)),
        layers.Dense(3, activation='softmax'),
    ]), (6,), 'adam'


def _cnn():
    # The convolution before batch normalization has no bias: its gradient would be
    # rounding noise, which Adam's normalisation turns into steps of the learning rate.
    return keras.models.Sequential([
        layers.Conv2D(4, 3, use_bias=False, input_shape=(8, 8, 2)),
        layers.BatchNormalization(momentum=0.5),
        layers.Activation('relu'),
        layers.Dropout(0.3),
        layers.Flatten(),
        layers.Dense(3, activation='softmax'),
    ]), (8, 8, 2), 'adam'


def _lstm():
    return keras.models.Sequential([
        layers.LSTM(5, input_shape=(4, 3)),
        layers.Dense(3, activation='softmax'),
    ]), (4, 3), keras.optimizers.SGD(0.1, momentum=0.9)


def _train(build, compiling):
    """Losses of `STEPS` training steps and the weights after them."""
    compiled.set_enabled(compiling)
    try:
        np.random.seed(0)
        model, shape, optimizer = build()
        model.compile(optimizer, 'categorical_crossentropy', metrics=['accuracy'])
        rng = np.random.RandomState(1)
        losses = []
        for _ in range(STEPS):
            x = rng.rand(8, *shape).astype('float32')
            y = np.eye(3, dtype='float32')[rng.randint(0, 3, 8)]
            losses.append(model.train_on_batch(x, y))
    finally:
        compiled.set_enabled(None)
    return model, np.array(losses), model.get_weights()


# The LSTM's recurrence (rnn_kernels: in-place steps into preallocated buffers) compiles in
# pieces between graph breaks.
@pytest.mark.parametrize('build, one_graph', [(_mlp, True), (_cnn, True), (_lstm, False)],
                         ids=['mlp', 'cnn', 'lstm'])
def test_compiled_training_steps_match_plain_ones(build, one_graph):
    _, plain_losses, plain_weights = _train(build, False)
    counters.clear()
    model, losses, weights = _train(build, True)
    program = model.train_function._program
    assert isinstance(program, compiled.CompiledProgram)
    assert program.error is None and program.compile_seconds > 0
    assert (dict(counters['graph_break']) == {}) == one_graph
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-5, atol=1e-6)
    for value, expected in zip(weights, plain_weights):
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)


# One small program (a matmul, its gradient, an update): few kernels for inductor to build.
_SCRIPT = textwrap.dedent('''
    import numpy as np
    from torchk import core as K
    x = K.placeholder(shape=(4, 3))
    w = K.variable(np.ones((3, 2)))
    loss = K.sum(K.square(K.dot(x, w)))
    step = K.function([x], [loss], updates=[K.update(w, w - 0.1 * K.gradients(loss, [w])[0])])
    for _ in range(3):
        step([np.ones((4, 3), 'float32')])
    assert step._program.error is None, step._program.error
    print('compile seconds', step._program.compile_seconds)
''')


def test_a_second_process_compiles_from_the_cache(tmp_path):
    env = dict(os.environ, TORCHK_COMPILE='1', TORCHINDUCTOR_CACHE_DIR=str(tmp_path / 'inductor'))
    seconds = []
    for _ in range(2):
        done = subprocess.run([sys.executable, '-c', _SCRIPT], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        seconds.append(float(done.stdout.split('compile seconds')[1]))
    assert any(path.name == 'fxgraph' for path in (tmp_path / 'inductor').iterdir())
    print('first and cached compile: %.1f s, %.1f s' % tuple(seconds))
