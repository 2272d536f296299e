"""Settings: keras.json, Keras 1 dim ordering, setters, device selection."""
import json
import os
import subprocess
import sys

import pytest
import torch

from torchk import config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_settings(tmp_path, keras_json, env=None):
    """Imports torchk.config in a fresh process with `keras_json` in KERAS_HOME."""
    home = tmp_path / 'home'
    home.mkdir()
    if keras_json is not None:
        (home / 'keras.json').write_text(json.dumps(keras_json))
    environment = dict(os.environ, KERAS_HOME=str(home), PYTHONPATH=ROOT, **(env or {}))
    environment.pop('TORCHK_DEVICE', None)
    environment.update(env or {})
    code = ('from torchk import config; print(config.floatx(), config.epsilon(), '
            'config.image_data_format(), config.device())')
    result = subprocess.run([sys.executable, '-c', code], env=environment, capture_output=True,
                            text=True)
    return result, home


# Without a device setting: CUDA when available, else the CPU.
DEFAULT_DEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'


@pytest.mark.parametrize('keras_json, expected', [
    (None, 'float32 1e-07 channels_last ' + DEFAULT_DEVICE),
    ({'floatx': 'float64', 'epsilon': 1e-4, 'image_data_format': 'channels_first'},
     'float64 0.0001 channels_first ' + DEFAULT_DEVICE),
    ({'image_dim_ordering': 'th'}, 'float32 1e-07 channels_first ' + DEFAULT_DEVICE),
    ({'image_dim_ordering': 'tf'}, 'float32 1e-07 channels_last ' + DEFAULT_DEVICE),
    ({'torchk_device': 'meta'}, 'float32 1e-07 channels_last meta'),
])
def test_keras_json_is_read(tmp_path, keras_json, expected):
    result, home = read_settings(tmp_path, keras_json)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected
    if keras_json is None:
        assert not (home / 'keras.json').exists()


def test_env_device_overrides_keras_json(tmp_path):
    result, _ = read_settings(tmp_path, {'torchk_device': 'cpu'}, {'TORCHK_DEVICE': 'meta'})
    assert result.stdout.strip().endswith('meta')


def tf32_switches(tmp_path, keras_json=None, env=None, device='cuda:0'):
    """torch's two CUDA TF32 switches after torchk chose `device`, in a fresh process (no
    GPU needed: the switches are process-wide settings)."""
    home = tmp_path / 'home'
    home.mkdir()
    if keras_json is not None:
        (home / 'keras.json').write_text(json.dumps(keras_json))
    environment = dict(os.environ, KERAS_HOME=str(home), PYTHONPATH=ROOT)
    environment.pop('TORCHK_TF32', None)
    environment.update(env or {})
    code = ('import torch; from torchk import config; config.set_device(%r); '
            'print(config.tf32_enabled(), torch.backends.cuda.matmul.allow_tf32, '
            'torch.backends.cudnn.allow_tf32)' % device)
    return subprocess.run([sys.executable, '-c', code], env=environment, capture_output=True,
                          text=True)


@pytest.mark.parametrize('keras_json, env, expected', [
    (None, None, 'True True True'),  # TF's default: TF32 on for CUDA matmuls and convolutions
    (None, {'TORCHK_TF32': '0'}, 'False False False'),
    ({'torchk_tf32': False}, None, 'False False False'),
    ({'torchk_tf32': False}, {'TORCHK_TF32': '1'}, 'True True True'),
])
def test_tf32_on_cuda_follows_the_settings(tmp_path, keras_json, env, expected):
    result = tf32_switches(tmp_path, keras_json, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


def test_tf32_leaves_the_cpu_alone(tmp_path):
    # torch's own defaults: cuBLAS matmuls in full float32, cuDNN allowed TF32.
    result = tf32_switches(tmp_path, env={'TORCHK_TF32': '0'}, device='cpu')
    assert result.stdout.strip() == 'False False True', result.stderr


def test_bad_tf32_setting_names_it(tmp_path):
    result = tf32_switches(tmp_path, env={'TORCHK_TF32': 'yes'})
    assert result.returncode != 0 and "TORCHK_TF32" in result.stderr and "'yes'" in result.stderr


@pytest.mark.parametrize('keras_json, message', [
    ({'floatx': 'float8'}, "Unknown floatx type: 'float8'"),
    ({'image_data_format': 'channels_middle'}, "Unknown data_format: 'channels_middle'"),
    ({'image_dim_ordering': 'xx'}, "Unknown dim_ordering: 'xx'"),
])
def test_bad_keras_json_values_raise(tmp_path, keras_json, message):
    result, _ = read_settings(tmp_path, keras_json)
    assert result.returncode != 0 and message in result.stderr


@pytest.fixture
def restore_settings():
    saved = (config.floatx(), config.epsilon(), config.image_data_format())
    yield
    config.set_floatx(saved[0])
    config.set_epsilon(saved[1])
    config.set_image_data_format(saved[2])


def test_setters(restore_settings):
    config.set_floatx('float16')
    config.set_epsilon(1e-3)
    config.set_image_dim_ordering('th')
    assert (config.floatx(), config.epsilon()) == ('float16', 1e-3)
    assert config.image_data_format() == 'channels_first' and config.image_dim_ordering() == 'th'
    config.set_image_data_format('channels_last')
    assert config.image_dim_ordering() == 'tf'
    with pytest.raises(ValueError, match='Unknown floatx'):
        config.set_floatx('int32')
    with pytest.raises(ValueError, match='Unknown data_format'):
        config.set_image_data_format('nchw')


@pytest.mark.parametrize('value, expected', [
    (None, 'channels_last'), ('channels_first', 'channels_first'), ('th', 'channels_first'),
    ('tf', 'channels_last'), ('Channels_Last', 'channels_last'),
])
def test_normalize_data_format(restore_settings, value, expected):
    config.set_image_data_format('channels_last')
    assert config.normalize_data_format(value) == expected


def test_keras_common_is_the_source_of_truth_once_loaded(restore_settings):
    import keras.backend.common as common
    from torchk import core as K
    common.set_floatx('float64')
    try:
        assert config.floatx() == 'float64'
        assert K.dtype(K.placeholder(shape=(1,))) == 'float64'
        config.set_epsilon(1e-5)
        assert common.epsilon() == 1e-5
    finally:
        common.set_floatx('float32')
        common.set_epsilon(1e-7)
