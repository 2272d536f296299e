"""Damaged and hostile `.keras` zips: each raises ModelFileError naming the file, without
extracting anything, allocating what a file declares, or returning a model."""
import io
import json
import os
import zipfile

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchk.saving import keras_zip
from torchk.saving.errors import ModelFileError

SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fixtures',
                      'tf_keras', 'zips', 'tf_keras-2.21.0', 'mlp_batchnorm.keras')


def _members():
    with zipfile.ZipFile(SOURCE) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _zip(path, members, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(str(path), 'w', compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return str(path)


def _with(tmp_path, **replaced):
    members = _members()
    for name, data in replaced.items():
        name = name.replace('_', '.', 1).replace('_', '.')
        if data is None:
            del members[name]
        else:
            members[name] = data
    return _zip(tmp_path / 'model.keras', members)


def _weights_h5(build):
    buffer = io.BytesIO()
    with h5py.File(buffer, 'w') as f:
        build(f)
    return buffer.getvalue()


def _load_fails(path, message):
    with pytest.raises(ModelFileError, match=message) as error:
        keras_zip.load(path)
    assert error.value.path == path
    assert path in str(error.value)


def _source_bytes():
    with open(SOURCE, 'rb') as f:
        return f.read()


def _written(tmp_path, data):
    path = str(tmp_path / 'model.keras')
    with open(path, 'wb') as f:
        f.write(data)
    return path


@pytest.mark.parametrize('cut', [0.5, 0.99])
def test_truncated_zip(tmp_path, cut):
    data = _source_bytes()
    _load_fails(_written(tmp_path, data[:int(len(data) * cut)]), 'not a readable zip')


def test_flipped_central_directory(tmp_path):
    data = bytearray(_source_bytes())
    data[data.rindex(b'PK\x01\x02') + 1] ^= 0xFF
    _load_fails(_written(tmp_path, bytes(data)), 'not a readable zip')


def test_flipped_member_data_fails_its_checksum(tmp_path):
    data = bytearray(_source_bytes())
    data[data.index(b'"class_name"') + 3] ^= 0x01
    _load_fails(_written(tmp_path, bytes(data)), 'config.json cannot be read.*CRC')


def test_zip_bomb_is_refused_before_decompressing(tmp_path):
    members = _members()
    members['model.weights.h5'] = bytes(64 * 2 ** 20)
    path = _zip(tmp_path / 'bomb.keras', members, zipfile.ZIP_DEFLATED)
    assert os.path.getsize(path) < 2 ** 20
    _load_fails(path, r'model.weights.h5 declares 67108864 bytes compressed into \d+')


def test_configuration_size_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(keras_zip, 'MAX_CONFIG_BYTES', 1000)
    _load_fails(_with(tmp_path), r'config.json declares \d+ bytes, more than the 1000')


@pytest.mark.parametrize('config, message', [
    (b'{"class_name": "Sequential", "config": ', 'config.json is not valid JSON'),
    (b'[' * 100000 + b']' * 100000, 'config.json is not valid JSON'),
    (b'\xff\xfe', 'config.json is not valid JSON'),
    (b'[]', 'config.json is not a model configuration'),
    (json.dumps({'class_name': 'Sequential', 'config': {'name': 's', 'layers': [
        {'class_name': 'NoSuchLayer', 'config': {'name': 'x'}}]}}).encode(),
     'configuration does not build a model.*NoSuchLayer'),
])
def test_invalid_configuration(tmp_path, config, message):
    _load_fails(_with(tmp_path, config_json=config), message)


def test_invalid_compile_config(tmp_path):
    config = json.loads(_members()['config.json'])
    config['compile_config']['optimizer']['config']['is_jegacy_optimizer'] = False
    _load_fails(_with(tmp_path, config_json=json.dumps(config).encode()),
                'compile_config does not compile the model.*is_jegacy_optimizer')
    assert keras_zip.load(_with(tmp_path, config_json=json.dumps(config).encode()),
                          compile=False).built


def test_missing_weights(tmp_path):
    _load_fails(_with(tmp_path, model_weights_h5=None), 'the zip has no model.weights.h5')


def test_weights_that_are_not_hdf5(tmp_path):
    _load_fails(_with(tmp_path, model_weights_h5=b'not an HDF5 file' * 10),
                'weights are not a readable HDF5 file')


def test_declared_terabytes_are_not_allocated(tmp_path):
    def build(f):
        f.create_dataset('layers/dense/vars/0', shape=(10 ** 6, 10 ** 6), dtype='float32',
                         chunks=(1, 1))
        f.create_dataset('layers/dense/vars/1', data=np.zeros(8, 'float32'))
    _load_fails(_with(tmp_path, model_weights_h5=_weights_h5(build)),
                r'layers/dense/vars/0 of layer .* declares the shape \(1000000, 1000000\)')


def test_variables_not_numbered_as_tf_keras_numbers_them(tmp_path):
    def build(f):
        f.create_dataset('layers/dense/vars/0', data=np.zeros((6, 8), 'float32'))
        f.create_dataset('layers/dense/vars/7', data=np.zeros(8, 'float32'))
    _load_fails(_with(tmp_path, model_weights_h5=_weights_h5(build)),
                r"variables of layer 'hidden' \(Dense\) .* are not numbered 0 to 1")


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(0, 2 ** 31), st.integers(1, 255)), min_size=1,
                      max_size=4),
       cut=st.one_of(st.none(), st.floats(0.0, 1.0)))
def test_fuzzed_zip_loads_or_raises_model_file_error(tmp_path, flips, cut):
    """Flips anywhere in the file and truncations: most fail the zip's checksums."""
    data = bytearray(_source_bytes())
    for position, mask in flips:
        data[position % len(data)] ^= mask
    if cut is not None:
        data = data[:int(len(data) * cut)]
    path = _written(tmp_path, bytes(data))
    try:
        keras_zip.load(path, compile=False)
    except ModelFileError as e:
        assert e.path == path


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(0, 2 ** 31), st.integers(1, 255)), min_size=1,
                      max_size=4),
       compile=st.booleans())
def test_fuzzed_weights_in_a_valid_zip_load_or_raise_model_file_error(tmp_path, flips, compile):
    """Flips in the weights member of a well-formed zip (its checksums recomputed), which the
    HDF5 reader meets."""
    members = _members()
    data = bytearray(members['model.weights.h5'])
    for position, mask in flips:
        data[position % len(data)] ^= mask
    members['model.weights.h5'] = bytes(data)
    path = _zip(tmp_path / 'model.keras', members)
    try:
        keras_zip.load(path, compile=compile)
    except ModelFileError as e:
        assert e.path == path
