"""The SavedModel fixtures of tests/fixtures/tf_keras/saved_models (made by hand with TensorFlow
by tests/fixtures/make_tf_keras_saved_models.py): each directory packed as `<name>.tar.xz`,
TensorFlow's inputs, targets and predictions in `<name>.npz`."""
import glob
import os
import struct
import tarfile

import numpy as np

from torchk.saving.tensor_bundle import _crc32c

SAVED_MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures',
                            'tf_keras', 'saved_models')
DIALECTS = sorted(os.path.basename(d) for d in glob.glob(os.path.join(SAVED_MODELS, '*')))
MODELS = ['mlp', 'mlp_pre_tf25', 'text_birnn_masked', 'cnn_depthwise', 'transformer_block',
          'legacy_optimizer', 'mlp_sgd_nested']


def unpack(dialect, name, directory):
    """Unpacks the fixture `name` of `dialect` into `directory`; returns the SavedModel's path."""
    with tarfile.open(os.path.join(SAVED_MODELS, dialect, name + '.tar.xz')) as tar:
        tar.extractall(directory, filter='data')
    return os.path.join(str(directory), name)


def arrays(dialect, name):
    """(inputs, targets, TensorFlow's predictions, its predictions after one more step)."""
    values = np.load(os.path.join(SAVED_MODELS, dialect,
                                  name.replace('_pre_tf25', '') + '.npz'))

    def listed(prefix):
        return [values['%s%d' % (prefix, i)] for i in range(len(values.files))
                if '%s%d' % (prefix, i) in values.files]
    return listed('x'), listed('y'), listed('pred'), listed('step')


def checkpoint_values(dialect):
    """{tensor name: value} of the `mlp` fixture's checkpoint as TensorFlow read it."""
    values = np.load(os.path.join(SAVED_MODELS, dialect, 'mlp_checkpoint.npz'))
    return {key.replace('|', '/'): values[key] for key in values.files}


def max_relative_difference(actual, expected):
    """The largest difference over all outputs, relative to each output's scale."""
    actual = actual if isinstance(actual, list) else [actual]
    return max(np.abs(a - e).max() / max(np.abs(e).max(), 1e-6)
               for a, e in zip(actual, expected))


def mask(crc):
    """TensorFlow's masked CRC-32C."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xa282ead8) & 0xFFFFFFFF


def _varint(n):
    out = b''
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def _block(pairs):
    """A table block of `pairs`, every key whole (no shared prefix), one restart point."""
    body = b''.join(_varint(0) + _varint(len(k)) + _varint(len(v)) + k + v for k, v in pairs)
    return body + struct.pack('<II', 0, 1)


def _with_trailer(contents, kind=0):
    kind = bytes([kind])
    return contents + kind + struct.pack('<I', mask(_crc32c(contents + kind)))


def table(pairs, kind=0):
    """An SSTable: one data block of `pairs` (sorted), an empty metaindex block, the index
    block, the footer."""
    data = _block(pairs)
    out = _with_trailer(data, kind)
    metaindex, metaindex_offset = _block([]), len(out)
    out += _with_trailer(metaindex)
    index = _block([(b'\xff', _varint(0) + _varint(len(data)))])
    index_offset = len(out)
    out += _with_trailer(index)
    handles = (_varint(metaindex_offset) + _varint(len(metaindex)) + _varint(index_offset)
               + _varint(len(index)))
    return out + handles.ljust(40, b'\0') + struct.pack('<Q', 0xdb4775248b80fb57)
