"""Saves are atomic under torchk (keras_compat): a failed or killed save leaves the previous
file intact and no temporary file behind."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import h5py
import numpy as np
import pytest

import keras
from keras.layers import Dense
from keras.models import Sequential

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _model(value):
    model = Sequential([Dense(3, input_shape=(4,))])
    model.compile('sgd', 'mse')
    model.set_weights([np.full((4, 3), value, 'float32'), np.full((3,), value, 'float32')])
    return model


def _fail_while_writing(monkeypatch):
    """Makes h5py fail in the middle of a save, after the file was opened."""
    def broken(*args, **kwargs):
        raise OSError('injected h5py failure')
    monkeypatch.setattr(h5py.Group, 'create_dataset', broken)


@pytest.mark.parametrize('save, load', [
    (lambda m, p: m.save(p), lambda p: keras.models.load_model(p)),
    (lambda m, p: keras.models.save_model(m, p), lambda p: keras.models.load_model(p)),
    (lambda m, p: m.save_weights(p), lambda p: _loaded_weights(p)),
], ids=['model.save', 'save_model', 'save_weights'])
def test_a_failing_save_keeps_the_previous_file(tmp_path, monkeypatch, save, load):
    path = str(tmp_path / 'model.h5')
    save(_model(1.), path)
    _fail_while_writing(monkeypatch)
    with pytest.raises(OSError, match='injected h5py failure'):
        save(_model(2.), path)
    monkeypatch.undo()
    np.testing.assert_array_equal(load(path).get_weights()[0], np.ones((4, 3)))
    assert os.listdir(str(tmp_path)) == ['model.h5']


def _loaded_weights(path):
    model = _model(0.)
    model.load_weights(path)
    return model


def test_a_save_replaces_the_file_and_keeps_its_permissions(tmp_path):
    path = str(tmp_path / 'model.h5')
    _model(1.).save(path)
    os.chmod(path, 0o640)
    _model(2.).save(path)
    np.testing.assert_array_equal(keras.models.load_model(path).get_weights()[1],
                                  np.full((3,), 2.))
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert os.listdir(str(tmp_path)) == ['model.h5']


def test_a_new_file_gets_the_umask_permissions(tmp_path):
    path = str(tmp_path / 'weights.h5')
    _model(1.).save_weights(path)
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask


def test_model_checkpoint_saves_atomically(tmp_path, monkeypatch):
    path = str(tmp_path / 'checkpoint.h5')
    model = _model(1.)
    x, y = np.ones((8, 4), 'float32'), np.zeros((8, 3), 'float32')
    model.fit(x, y, epochs=1, verbose=0,
              callbacks=[keras.callbacks.ModelCheckpoint(path, save_weights_only=True)])
    saved = _loaded_weights(path).get_weights()[0]
    _fail_while_writing(monkeypatch)
    with pytest.raises(OSError, match='injected h5py failure'):
        model.fit(x, y, epochs=1, verbose=0,
                  callbacks=[keras.callbacks.ModelCheckpoint(path, save_weights_only=True)])
    monkeypatch.undo()
    np.testing.assert_array_equal(_loaded_weights(path).get_weights()[0], saved)
    assert os.listdir(str(tmp_path)) == ['checkpoint.h5']


CHILD = textwrap.dedent('''
    import sys
    import numpy as np
    import keras
    from keras.layers import Dense
    from keras.models import Sequential
    model = Sequential([Dense(1024, input_shape=(1024,)), Dense(1024), Dense(1024)])
    model.compile('adam', 'mse')
    print('ready', flush=True)
    while True:
        model.save(sys.argv[1])
''')


def test_a_process_killed_mid_save_leaves_the_previous_file(tmp_path):
    path = str(tmp_path / 'model.h5')
    _model(1.).save(path)
    env = dict(os.environ, PYTHONPATH=ROOT, KERAS_BACKEND='torchk.core', TORCHK_DEVICE='cpu')
    child = subprocess.Popen([sys.executable, '-c', CHILD, path], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert child.stdout.readline().strip() == b'ready'
        deadline = time.monotonic() + 60
        # Wait until a temporary file exists: the child is in the middle of a save.
        while not [n for n in os.listdir(str(tmp_path)) if n.endswith('.saving')]:
            assert time.monotonic() < deadline, 'the child never started saving'
            time.sleep(0.001)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    loaded = keras.models.load_model(path)
    assert [w.shape for w in loaded.get_weights()] in ([(4, 3), (3,)], [
        (1024, 1024), (1024,)] * 3)


def test_keras_save_functions_are_the_atomic_ones():
    # Without keras_compat (TORCHK_KERAS_COMPAT=0) Keras does not import on Python 3.11 at
    # all (tests/test_keras_compat.py); with it, both save functions are wrapped.
    # save_model writes a `.keras` path with torchk.saving.keras_zip_writer (atomic itself)
    # and hands every other target to the atomic HDF5 save.
    assert keras.engine.saving.save_model.__code__.co_name == 'save_keras_zip_or_other'
    assert keras.engine.saving.save_model.__wrapped__.__code__.co_name == 'save_atomically'
    assert keras.models.save_model is keras.engine.saving.save_model
    assert keras.engine.network.Network.save_weights.__code__.co_name == 'save_atomically'


@pytest.mark.parametrize('save, module', [
    (lambda m, p: keras.models.save_model(m, p, overwrite=False), keras.engine.saving),
    (lambda m, p: m.save(p, overwrite=False), keras.engine.saving),
    (lambda m, p: m.save_weights(p, overwrite=False), keras.engine.network),
], ids=['save_model', 'model.save', 'save_weights'])
@pytest.mark.parametrize('proceed', [True, False])
def test_overwrite_false_asks_through_the_name_keras_patches(tmp_path, monkeypatch, save,
                                                              module, proceed):
    # Keras' own tests patch `ask_to_proceed_with_overwrite` in the saving module (and
    # network's for save_weights); the atomic wrapper must ask through that name.
    path = str(tmp_path / 'model.h5')
    _model(1.).save(path)
    asked = []
    monkeypatch.setattr(module, 'ask_to_proceed_with_overwrite',
                        lambda filepath: asked.append(filepath) or proceed)
    save(_model(2.), path)
    assert asked == [path]
    expected = 2. if proceed else 1.
    np.testing.assert_array_equal(_loaded_weights(path).get_weights()[0],
                                  np.full((4, 3), expected))
    assert os.listdir(str(tmp_path)) == ['model.h5']
