"""`python -m torchk configure` and `python -m torchk info`, run as a user would: in new
interpreters, with a temporary KERAS_HOME."""
import json
import os
import subprocess
import sys

import pytest

import torchk

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _torchk(home, *args):
    environment = dict(os.environ, KERAS_HOME=str(home),
                       PYTHONPATH=os.pathsep.join([REPO, os.environ.get('PYTHONPATH', '')]))
    environment.pop('KERAS_BACKEND', None)
    environment.pop('TORCHK_DEVICE', None)
    return subprocess.run([sys.executable, '-m', 'torchk'] + list(args), env=environment,
                          cwd=str(home), capture_output=True, text=True, timeout=300)


def _keras_json(home):
    with open(os.path.join(str(home), 'keras.json')) as f:
        return json.load(f)


def test_configure_creates_keras_json_with_keras_defaults(tmp_path):
    home = tmp_path / 'new_home'
    home.mkdir()
    done = _torchk(home, 'configure')
    assert done.returncode == 0, done.stderr
    assert str(home / 'keras.json') in done.stdout
    assert _keras_json(home) == {'backend': 'torchk.core', 'floatx': 'float32',
                                 'epsilon': 1e-07, 'image_data_format': 'channels_last'}


def test_configure_keeps_other_keys_and_sets_device_and_data_format(tmp_path):
    (tmp_path / 'keras.json').write_text(json.dumps(
        {'backend': 'tensorflow', 'floatx': 'float64', 'epsilon': 1e-05,
         'image_data_format': 'channels_last', 'custom': [1, 2]}))
    done = _torchk(tmp_path, 'configure', '--device', 'cpu',
                   '--image-data-format', 'channels_first')
    assert done.returncode == 0, done.stderr
    assert _keras_json(tmp_path) == {
        'backend': 'torchk.core', 'floatx': 'float64', 'epsilon': 1e-05,
        'image_data_format': 'channels_first', 'custom': [1, 2], 'torchk_device': 'cpu'}


@pytest.mark.parametrize('args, message', [
    (['--device', 'tpu:x'], "Invalid device 'tpu:x'"),
    (['--image-data-format', 'nchw'], "invalid choice: 'nchw'"),
])
def test_configure_rejects_bad_settings_and_writes_nothing(tmp_path, args, message):
    done = _torchk(tmp_path, 'configure', *args)
    assert done.returncode != 0 and message in done.stderr
    assert not (tmp_path / 'keras.json').exists()


def test_info_reports_settings_and_trains_one_step(tmp_path):
    assert _torchk(tmp_path, 'configure', '--device', 'cpu',
                   '--image-data-format', 'channels_first').returncode == 0
    done = _torchk(tmp_path, 'info')
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout
    assert 'torchk %s' % torchk.__version__ in lines and 'torch 2.' in lines
    assert 'keras 2.' in lines and 'backend torchk.core' in lines
    assert 'device: cpu' in lines and 'floatx: float32' in lines
    assert 'image_data_format: channels_first' in lines
    assert '(backend: torchk.core)' in lines
    assert 'mixed precision: float32 (the default; set TORCHK_MIXED_PRECISION' in lines
    assert 'self-check: one training step in' in lines and ': OK' in lines


def test_info_reports_the_mixed_precision_policy_of_keras_json(tmp_path):
    assert _torchk(tmp_path, 'configure').returncode == 0
    settings = _keras_json(tmp_path)
    settings['torchk_mixed_precision'] = 'mixed_bfloat16'
    (tmp_path / 'keras.json').write_text(json.dumps(settings))
    done = _torchk(tmp_path, 'info')
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'mixed precision: mixed_bfloat16 (from %s)' % (tmp_path / 'keras.json') in done.stdout
    assert ': OK' in done.stdout
