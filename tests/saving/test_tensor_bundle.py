"""torchk.saving.tensor_bundle reads TensorFlow checkpoints as TensorFlow does, and refuses
damaged or hostile ones with a ModelFileError naming the file and the fault."""
import os
import shutil

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from torchk.saving import protos
from torchk.saving.errors import ModelFileError
from torchk.saving import tensor_bundle
from torchk.saving.tensor_bundle import (TensorBundle, _crc32c, _crc_register, read_table,
                                         write_bundle)

from .saved_model_files import DIALECTS, checkpoint_values, mask, table, unpack


def _write_bundle(directory, tensors, edit=None, header=True, kind=0):
    """Writes a bundle of float32 `tensors` ({name: array}); `edit(name, entry)` may change an
    entry before it is written. Returns the prefix."""
    prefix = os.path.join(str(directory), 'variables')
    data, pairs = b'', []
    if header:
        pairs.append((b'', protos.BundleHeaderProto(num_shards=1).SerializeToString()))
    for name in sorted(tensors):
        raw = np.asarray(tensors[name], '<f4').tobytes()
        entry = protos.BundleEntryProto(dtype=1, offset=len(data), size=len(raw),
                                        crc32c=mask(_crc32c(raw)))
        entry.shape.dim.add().size = len(tensors[name])
        if edit:
            edit(name, entry)
        pairs.append((name.encode(), entry.SerializeToString()))
        data += raw
    with open(prefix + '.index', 'wb') as f:
        f.write(table(pairs, kind))
    with open(prefix + '.data-00000-of-00001', 'wb') as f:
        f.write(data)
    return prefix


def test_crc32c_side_by_side_equals_byte_by_byte():
    assert _crc32c(b'123456789') == 0xE3069283  # the check value of CRC-32C (RFC 3720)
    data = np.random.default_rng(0).integers(0, 256, 300007, dtype=np.uint8).tobytes()
    assert _crc32c(data) == _crc_register(data, 0xFFFFFFFF) ^ 0xFFFFFFFF


@pytest.mark.parametrize('dialect', DIALECTS)
def test_reads_every_tensor_as_tensorflow(dialect, tmp_path):
    bundle = TensorBundle(os.path.join(unpack(dialect, 'mlp', tmp_path), 'variables',
                                       'variables'))
    expected = checkpoint_values(dialect)
    assert sorted(bundle.entries) == sorted(expected)
    for name, value in expected.items():
        actual = bundle.read(name)
        if name == '_CHECKPOINTABLE_OBJECT_GRAPH':
            actual = np.frombuffer(actual[0], np.uint8)
        assert actual.dtype == value.dtype and actual.shape == value.shape, name
        np.testing.assert_array_equal(actual, value)


def test_written_bundle_round_trips(tmp_path):
    tensors = {'a': np.arange(5, dtype='float32'), 'b/c': np.float32([1.5, -2.0])}
    bundle = TensorBundle(_write_bundle(tmp_path, tensors))
    for name, value in tensors.items():
        np.testing.assert_array_equal(bundle.read(name), value)


@pytest.mark.parametrize('dialect', DIALECTS)
def test_write_bundle_rewrites_a_tensorflow_checkpoint(dialect, tmp_path):
    """Every tensor of TF's checkpoint written by `write_bundle` reads back the same, keys
    prefix-compressed in blocks split small (TF reads torchk's bundles too:
    tests/fixtures/make_tf_core_api.py --read-torchk, tests/oracle/test_checkpoint_tf.py)."""
    tensors = {name: value for name, value in checkpoint_values(dialect).items()}
    graph = tensors.pop('_CHECKPOINTABLE_OBJECT_GRAPH').tobytes()
    tensors['_CHECKPOINTABLE_OBJECT_GRAPH'] = np.array(graph, dtype=object)
    tensors['texts'] = np.array([[b'a', b''], [b'long' * 100, b'\xff']], dtype=object)
    tensors['flags'] = np.array([True, False])
    prefix = str(tmp_path / 'rewritten')
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tensor_bundle, '_BLOCK_SIZE', 64)
        assert write_bundle(prefix, tensors) == prefix
    bundle = TensorBundle(prefix)
    assert sorted(bundle.entries) == sorted(tensors)
    for name, value in tensors.items():
        actual = bundle.read(name)
        if value.dtype == object:
            assert actual == list(value.reshape(-1)) and bundle.shape(name) == value.shape
            assert bundle.dtype_name(name) == 'string'
        else:
            assert actual.dtype == value.dtype and bundle.dtype_name(name) == value.dtype.name
            np.testing.assert_array_equal(actual, value)


def test_write_bundle_refuses_a_dtype_tensorflow_lacks(tmp_path):
    with pytest.raises(TypeError, match="'t' has the dtype datetime64"):
        write_bundle(str(tmp_path / 'x'), {'t': np.zeros(2, 'datetime64[s]')})


def _huge_shape(name, entry):
    del entry.shape.dim[:]
    entry.shape.dim.add().size = 1 << 40
    entry.shape.dim.add().size = 1 << 40


def _past_the_shard(name, entry):
    entry.offset = 1 << 50


def _other_shard(name, entry):
    entry.shard_id = 3


@pytest.mark.parametrize('edit, message', [
    (_huge_shape, r'needs 4835703278458516698824704 bytes but is declared as 20'),
    (_past_the_shard, r'runs past the end of the shard'),
    (_other_shard, r'is in shard 3 of 1'),
], ids=['huge_shape', 'offset_past_the_shard', 'shard_out_of_range'])
def test_declared_extent_is_checked_before_reading(edit, message, tmp_path):
    prefix = _write_bundle(tmp_path, {'t': np.zeros(5, 'float32')}, edit)
    with pytest.raises(ModelFileError, match=message):
        TensorBundle(prefix).read('t')


def test_snappy_block_is_refused_by_name(tmp_path):
    prefix = _write_bundle(tmp_path, {'t': np.zeros(2, 'float32')}, kind=1)
    with pytest.raises(ModelFileError, match='Snappy'):
        TensorBundle(prefix)


def test_missing_header_and_missing_shard(tmp_path):
    with pytest.raises(ModelFileError, match='no bundle header'):
        TensorBundle(_write_bundle(tmp_path, {'t': np.zeros(2, 'float32')}, header=False))
    prefix = _write_bundle(tmp_path, {'t': np.zeros(2, 'float32')})
    os.remove(prefix + '.data-00000-of-00001')
    with pytest.raises(ModelFileError, match='data-00000-of-00001: the data shard is missing'):
        TensorBundle(prefix)


@pytest.fixture(scope='module')
def mlp_checkpoint(tmp_path_factory):
    directory = unpack(DIALECTS[0], 'mlp', tmp_path_factory.mktemp('mlp'))
    return os.path.join(directory, 'variables', 'variables'), checkpoint_values(DIALECTS[0])


def _copy(prefix, tmp_path):
    target = os.path.join(str(tmp_path), 'variables')
    for suffix in ('.index', '.data-00000-of-00001'):
        shutil.copyfile(prefix + suffix, target + suffix)
    return target


@pytest.mark.parametrize('keep', [0, 20, 47, 48, 500, -49, -1])
def test_truncated_index_names_the_file(keep, mlp_checkpoint, tmp_path):
    prefix = _copy(mlp_checkpoint[0], tmp_path)
    with open(prefix + '.index', 'rb') as f:
        data = f.read()
    with open(prefix + '.index', 'wb') as f:
        f.write(data[:keep])
    with pytest.raises(ModelFileError) as error:
        TensorBundle(prefix)
    assert error.value.path == prefix + '.index'


def test_every_flipped_block_byte_is_caught(mlp_checkpoint, tmp_path):
    """Each byte of the blocks (all but the 48-byte footer), flipped, fails a check."""
    prefix = _copy(mlp_checkpoint[0], tmp_path)
    with open(prefix + '.index', 'rb') as f:
        original = f.read()
    for position in range(0, len(original) - 48, 7):
        damaged = bytearray(original)
        damaged[position] ^= 0x10
        with open(prefix + '.index', 'wb') as f:
            f.write(damaged)
        with pytest.raises(ModelFileError):
            TensorBundle(prefix)


def test_flipped_data_byte_fails_the_tensor_checksum(mlp_checkpoint, tmp_path):
    prefix = _copy(mlp_checkpoint[0], tmp_path)
    bundle = TensorBundle(prefix)
    name = 'layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE'
    with open(prefix + '.data-00000-of-00001', 'r+b') as f:
        f.seek(bundle.entries[name].offset + 5)
        byte = f.read(1)[0]
        f.seek(-1, 1)
        f.write(bytes([byte ^ 1]))
    with pytest.raises(ModelFileError, match=r"'layer_with_weights-0/kernel.*fails its checksum"):
        bundle.read(name)


@settings(max_examples=30, derandomize=True, deadline=None)
@given(which=st.sampled_from(['.index', '.data-00000-of-00001']),
       edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)),
                      min_size=1, max_size=4),
       cut=st.one_of(st.none(), st.floats(0, 1)))
def test_damaged_checkpoint_reads_exactly_or_raises(mlp_checkpoint, tmp_path_factory, which,
                                                    edits, cut):
    """Byte flips and truncation anywhere: a ModelFileError, or (a flip in the footer's
    padding) exactly TensorFlow's values; never another error, a hang or a wrong value."""
    prefix = _copy(mlp_checkpoint[0], tmp_path_factory.mktemp('fuzz'))
    with open(prefix + which, 'rb') as f:
        data = bytearray(f.read())
    for where, xor in edits:
        data[int(where * len(data))] ^= xor
    if cut is not None:
        data = data[:int(cut * len(data))]
    with open(prefix + which, 'wb') as f:
        f.write(data)
    try:
        bundle = TensorBundle(prefix)
        values = {name: bundle.read(name) for name in bundle.entries}
    except ModelFileError:
        return
    for name, expected in mlp_checkpoint[1].items():
        actual = values[name]
        if name == '_CHECKPOINTABLE_OBJECT_GRAPH':
            actual = np.frombuffer(actual[0], np.uint8)
        np.testing.assert_array_equal(actual, expected)


def test_read_table_keys_in_order(tmp_path):
    path = os.path.join(str(tmp_path), 't.index')
    with open(path, 'wb') as f:
        f.write(table([(b'a', b'1'), (b'b', b'2')]))
    assert read_table(path) == [(b'a', b'1'), (b'b', b'2')]
    with open(path, 'wb') as f:
        f.write(table([(b'b', b'1'), (b'a', b'2')]))
    with pytest.raises(ModelFileError, match='strictly increasing'):
        read_table(path)
