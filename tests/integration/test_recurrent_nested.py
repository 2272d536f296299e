"""A functional model around `keras.layers.RNN` over keras-io's nested cell (two inputs,
two states of `TensorShape` sizes, two outputs; tests/fixtures/nested_rnn_cells.py) on
tf.keras (torchk.keras): it trains, and saves and loads in both file formats.

The task is a teacher's: a model of the same architecture with fixed weights labels
seeded random sequences with all its outputs (the last outputs and both states); a
student starting from other weights fits them. The cell is linear, so the student can
match the teacher exactly: the training loss must fall below 2 % of its first epoch's,
and the held-out loss (other seed) too.
"""
import numpy as np
import pytest

import keras as multi_backend_keras

# torchk.keras builds on Keras 2.3.1 and refuses other Keras versions with an ImportError
# (tests/keras_facade/test_import.py); CI also runs tests/integration under Keras 2.2.5.
if multi_backend_keras.__version__ != '2.3.1':
    pytest.skip('torchk.keras needs Keras 2.3.1', allow_module_level=True)

import torchk.keras as keras  # noqa: E402
import torchk.tf as tf  # noqa: E402
from fixtures.nested_rnn_cells import cell_classes  # noqa: E402

NestedCell = cell_classes(tf, keras)['NestedCell']


def _model(seed):
    inputs = (keras.Input((None, 4)), keras.Input((None, 2, 3)))
    layer = keras.layers.RNN(NestedCell(2, 3, 4), return_state=True, name='nested_rnn')
    model = keras.Model(list(inputs), layer(inputs))
    rng = np.random.RandomState(seed)
    model.set_weights([rng.normal(0, .3, w.shape).astype('float32')
                       for w in model.get_weights()])
    return model


def _data(teacher, samples, seed):
    rng = np.random.RandomState(seed)
    x = [rng.normal(size=(samples, 6, 4)).astype('float32'),
         rng.normal(size=(samples, 6, 2, 3)).astype('float32')]
    return x, tf.nest.flatten(teacher.predict(x))


@pytest.fixture(scope='module')
def trained():
    teacher = _model(seed=0)
    student = _model(seed=1)
    x, y = _data(teacher, 256, seed=2)
    student.compile(optimizer=keras.optimizers.Adam(0.02), loss='mse')
    history = student.fit(x, y, batch_size=32, epochs=12, verbose=0)
    return student, teacher, history.history['loss']


def test_nested_rnn_model_learns_its_teacher(trained):
    student, teacher, losses = trained
    assert losses[-1] < 0.02 * losses[0], losses
    x, y = _data(teacher, 64, seed=3)
    held_out = student.evaluate(x, y, verbose=0)
    assert held_out[0] < 0.02 * losses[0], (held_out, losses)


@pytest.mark.parametrize('extension', ['h5', 'keras'])
def test_nested_rnn_model_saves_and_loads(trained, extension, tmp_path):
    """The loaded model calls the cell on its tuple of inputs again (tf.keras writes the
    tuple as a list, and reads it back as `[inputs, initial_state]`), and has its
    weights."""
    student, teacher, _ = trained
    path = str(tmp_path / ('nested.' + extension))
    student.save(path)
    loaded = keras.models.load_model(path, custom_objects={'NestedCell': NestedCell})
    x, _ = _data(teacher, 16, seed=4)
    for value, reference in zip(tf.nest.flatten(loaded.predict(x)),
                                tf.nest.flatten(student.predict(x))):
        np.testing.assert_allclose(value, reference, rtol=1e-6, atol=1e-6)
    assert loaded.get_layer('nested_rnn').cell.get_config() == {
        'unit_1': 2, 'unit_2': 3, 'unit_3': 4}
