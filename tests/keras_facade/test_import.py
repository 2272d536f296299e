"""Importing torchk.keras selects the torchk backend, or refuses a Keras loaded with another."""
import subprocess
import sys

import pytest

CASES = [
    ('import torchk.keras, keras.backend as K; print(K.backend())', 0, 'torchk.core'),
    ('import keras.backend as K; K.backend = lambda: "tensorflow"; import torchk.keras', 1,
     "already imported with the 'tensorflow' backend"),
    ('import keras; keras.__version__ = "2.2.5"; import torchk.keras', 1,
     'torchk.keras (tf.keras on torchk) needs Keras 2.3.1'),
]


@pytest.mark.parametrize('code, returncode, expected', CASES)
def test_backend_choice(code, returncode, expected, monkeypatch):
    monkeypatch.delenv('KERAS_BACKEND', raising=False)
    if returncode:
        monkeypatch.setenv('KERAS_BACKEND', 'torchk.core')
    completed = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                               timeout=300)
    assert completed.returncode == returncode, completed.stderr[-2000:]
    assert expected in (completed.stdout + completed.stderr)
