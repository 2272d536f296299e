"""tf.keras 2 scripts (tests/integration/tf_keras_scripts/) run unchanged with
`python -m torchk run`, each reaching its stated result on synthetic data.

Each script prints `RESULT name=value` last; the table gives the bound it must reach.
"""
import os
import re
import subprocess
import sys

import pytest

import keras

# torchk.keras, which the launcher serves as tensorflow.keras, builds on Keras 2.3.1 and
# refuses other Keras versions with an ImportError (tests/keras_facade/test_import.py).
pytestmark = pytest.mark.skipif(keras.__version__ != '2.3.1',
                                reason='torchk.keras needs Keras 2.3.1')

SCRIPTS = os.path.join(os.path.dirname(__file__), 'tf_keras_scripts')
# script: (result name, 'min' or 'max', bound)
EXPECTED = {
    'mlp': ('accuracy', 'min', 0.9),
    'cnn': ('accuracy', 'min', 0.9),
    'lstm_text': ('accuracy', 'min', 0.9),
    'autoencoder': ('explained', 'min', 0.9),
    'subclassed': ('accuracy', 'min', 0.9),
    'nested': ('accuracy', 'min', 0.9),
    'gan_train_step': ('mean_error', 'max', 0.6),
    'tape_loop_tfdata': ('accuracy', 'min', 0.85),
    'custom_loss': ('r2', 'min', 0.9),
    'image_data_generator': ('accuracy', 'min', 0.9),
    'callbacks': ('accuracy', 'min', 0.9),
    'save_formats': ('accuracy', 'min', 0.85),
    # TF 2.21's tf_keras: 0.89 and 0.9067 (torchk: 0.89 and 0.9033).
    'text_two_inputs': ('accuracy', 'min', 0.85),
    'text_from_directory': ('accuracy', 'min', 0.85),
}


def test_every_script_has_a_bound():
    scripts = {name[:-3] for name in os.listdir(SCRIPTS)
               if name.endswith('.py') and name != 'compare_with_tf.py'}
    assert scripts == set(EXPECTED)


@pytest.mark.parametrize('script', sorted(EXPECTED))
def test_script(script, tmp_path):
    environment = dict(os.environ, KERAS_HOME=str(tmp_path), PYTHONHASHSEED='0')
    # The scripts' tensors are small: one thread each, as a busy CI machine runs best.
    environment.setdefault('OMP_NUM_THREADS', '1')
    environment.pop('KERAS_BACKEND', None)
    completed = subprocess.run(
        [sys.executable, '-m', 'torchk', 'run', os.path.join(SCRIPTS, script + '.py')],
        cwd=str(tmp_path), env=environment, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    name, kind, bound = EXPECTED[script]
    found = re.findall(r'^RESULT %s=([-0-9.e]+)$' % name, completed.stdout, re.M)
    assert found, completed.stdout[-2000:]
    value = float(found[-1])
    assert value >= bound if kind == 'min' else value <= bound, (name, value, bound)
