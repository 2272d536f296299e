"""TensorFlow's checkpoint format (the "tensor bundle" of `variables/` in a SavedModel), read
without TensorFlow.

A bundle `<prefix>` is an index `<prefix>.index` and data shards
`<prefix>.data-<i>-of-<n>`. The index is an SSTable (LevelDB's table format): data blocks of
prefix-compressed keys, an index block pointing at them, and a 48-byte footer ending in a
magic number; each block carries a type byte (0: stored as is; 1: Snappy, which TensorFlow
never writes for bundles) and the masked CRC-32C of its bytes. The empty key holds a
`BundleHeaderProto`, every other key (a tensor's name) a `BundleEntryProto` giving the
tensor's dtype, shape, shard, offset, byte size and masked CRC-32C.

Every declared offset, size and shape is checked against the files before anything is
allocated, and every checksum is verified; a file that fails a check raises `ModelFileError`
naming the file and the check.
"""
import os
import struct

import numpy as np

from . import protos
from .errors import ModelFileError

_TABLE_MAGIC = 0xdb4775248b80fb57
_FOOTER_SIZE = 48
_BLOCK_TRAILER_SIZE = 5

# TensorFlow's DataType numbers (types.proto) → numpy dtypes; 14 (bfloat16) is read as the
# upper half of a float32.
_DTYPES = {1: 'float32', 2: 'float64', 3: 'int32', 4: 'uint8', 5: 'int16', 6: 'int8',
           8: 'complex64', 9: 'int64', 10: 'bool', 14: 'uint16', 17: 'uint16',
           18: 'complex128', 19: 'float16', 22: 'uint32', 23: 'uint64'}
_DT_STRING = 7
_DT_BFLOAT16 = 14


# ---- CRC-32C ------------------------------------------------------------------------------

def _crc_table():
    table = np.zeros(256, np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table[i] = c
    return table


_CRC_TABLE = _crc_table()
_CRC_LIST = [int(c) for c in _CRC_TABLE]
_LANES = 1 << 14  # bytes processed side by side by numpy in `_crc32c`


def _crc_register(data, register):
    """The CRC-32C register after feeding `data` (a byte at a time, in Python)."""
    table = _CRC_LIST
    for byte in data:
        register = table[(register ^ byte) & 0xFF] ^ (register >> 8)
    return register


def _zeros_operator(count):
    """The CRC register's change over `count` zero bytes, a linear map over GF(2): the images
    of the 32 unit registers."""
    one = np.array([_crc_register(b'\0', 1 << k) for k in range(32)], np.uint64)
    result = np.array([1 << k for k in range(32)], np.uint64)
    while count:
        if count & 1:
            result = _apply(one, result)
        one = _apply(one, one)
        count >>= 1
    return result


def _apply(operator, registers):
    """The linear map `operator` (images of the unit registers) applied to each register."""
    registers = np.asarray(registers, np.uint64)
    out = np.zeros_like(registers)
    for k in range(32):
        out ^= np.where((registers >> np.uint64(k)) & np.uint64(1), operator[k], np.uint64(0))
    return out


def _crc32c(data):
    """CRC-32C of `data` (bytes), long inputs split into `_LANES` equal chunks whose registers
    numpy computes side by side, then joined by the linearity of the CRC."""
    data = memoryview(data)
    length = len(data) // _LANES
    if length < 16:
        return _crc_register(data, 0xFFFFFFFF) ^ 0xFFFFFFFF
    chunks = np.frombuffer(data[:length * _LANES], np.uint8).reshape(_LANES, length).T.copy()
    registers = np.zeros(_LANES, np.uint32)
    registers[0] = 0xFFFFFFFF
    for column in chunks:
        registers = _CRC_TABLE[(registers ^ column) & 0xFF] ^ (registers >> 8)
    registers = registers.astype(np.uint64)
    span = length
    while len(registers) > 1:
        registers = _apply(_zeros_operator(span), registers[0::2]) ^ registers[1::2]
        span *= 2
    register = _crc_register(data[length * _LANES:], int(registers[0]))
    return register ^ 0xFFFFFFFF


def _unmask(masked):
    rotated = (masked - 0xa282ead8) & 0xFFFFFFFF
    return ((rotated >> 17) | (rotated << 15)) & 0xFFFFFFFF


# ---- The SSTable index --------------------------------------------------------------------

def _varint(buffer, position, path, what):
    """The unsigned varint at `position` of `buffer` and the position after it."""
    result = 0
    for shift in range(0, 70, 7):
        if position >= len(buffer):
            raise ModelFileError(path, '%s ends inside a number' % what)
        byte = buffer[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
    raise ModelFileError(path, '%s has a number longer than 10 bytes' % what)


def _block(data, handle, path, what):
    """The contents of the block at `handle` (offset, size), its type and checksum verified."""
    offset, size = handle
    if offset + size + _BLOCK_TRAILER_SIZE > len(data) - _FOOTER_SIZE:
        raise ModelFileError(path, '%s (%d bytes at %d) runs past the end of the file (%d '
                             'bytes)' % (what, size, offset, len(data)))
    contents = data[offset:offset + size]
    kind = data[offset + size]
    if kind == 1:
        raise ModelFileError(path, '%s is Snappy-compressed, which TensorFlow does not write '
                             'for checkpoints; this reader reads uncompressed blocks' % what)
    if kind != 0:
        raise ModelFileError(path, '%s has the unknown compression type %d' % (what, kind))
    stored, = struct.unpack_from('<I', data, offset + size + 1)
    actual = _crc32c(data[offset:offset + size + 1])
    if _unmask(stored) != actual:
        raise ModelFileError(path, '%s fails its checksum (stored %08x, computed %08x): the '
                             'file is damaged' % (what, _unmask(stored), actual))
    return contents


def _block_entries(block, path, what):
    """The (key, value) pairs of a block, keys rebuilt from their shared prefixes."""
    if len(block) < 4:
        raise ModelFileError(path, '%s is %d bytes, too short for a block' % (what, len(block)))
    restarts, = struct.unpack_from('<I', block, len(block) - 4)
    end = len(block) - 4 * (restarts + 1)
    if restarts < 1 or end < 0:
        raise ModelFileError(path, '%s declares %d restart points in %d bytes' % (
            what, restarts, len(block)))
    entries = []
    key = b''
    position = 0
    while position < end:
        shared, position = _varint(block, position, path, what)
        unshared, position = _varint(block, position, path, what)
        value_size, position = _varint(block, position, path, what)
        if shared > len(key) or position + unshared + value_size > end:
            raise ModelFileError(path, '%s has an entry that runs past the block' % what)
        key = key[:shared] + bytes(block[position:position + unshared])
        position += unshared
        entries.append((key, bytes(block[position:position + value_size])))
        position += value_size
    return entries


def _block_handle(value, path, what):
    offset, position = _varint(value, 0, path, what)
    size, _ = _varint(value, position, path, what)
    return offset, size


def read_table(path):
    """The (key, value) pairs of an SSTable file, in key order.

    # Arguments
        path: the table file (a bundle's `.index`).

    # Returns
        A list of (bytes, bytes) pairs.

    # Raises
        ModelFileError: if the file is not a complete, undamaged table of uncompressed blocks.
    """
    with open(path, 'rb') as f:
        data = memoryview(f.read())
    if len(data) < _FOOTER_SIZE:
        raise ModelFileError(path, 'the file is %d bytes, shorter than a table footer (%d '
                             'bytes): it is truncated' % (len(data), _FOOTER_SIZE))
    magic, = struct.unpack_from('<Q', data, len(data) - 8)
    if magic != _TABLE_MAGIC:
        raise ModelFileError(path, 'the file does not end in the table magic number %x: it is '
                             'truncated or not a TensorFlow checkpoint index' % _TABLE_MAGIC)
    footer = data[len(data) - _FOOTER_SIZE:]
    handles = []
    position = 0
    for _ in range(4):
        number, position = _varint(footer, position, path, 'the footer')
        handles.append(number)
    _block(data, handles[:2], path, 'the metaindex block')  # checked; its filters unused
    index = _block(data, handles[2:], path, 'the index block')
    entries = []
    for _, handle in _block_entries(index, path, 'the index block'):
        offset_size = _block_handle(handle, path, 'the index block')
        what = 'the data block at %d' % offset_size[0]
        entries.extend(_block_entries(_block(data, offset_size, path, what), path, what))
    keys = [key for key, _ in entries]
    if any(a >= b for a, b in zip(keys, keys[1:])):
        raise ModelFileError(path, 'the table\'s keys are not in strictly increasing order')
    return entries


# ---- The bundle ---------------------------------------------------------------------------

class TensorBundle(object):
    """A TensorFlow checkpoint, its index read and checked at once, tensors read on demand.

    # Arguments
        prefix: the bundle's path prefix (e.g. `saved_model_dir/variables/variables`).

    # Raises
        ModelFileError: if the index or a shard is missing, damaged, or declares a tensor
            that its shard cannot hold.
    """

    def __init__(self, prefix):
        self.prefix = prefix
        self.index_path = prefix + '.index'
        if not os.path.isfile(self.index_path):
            raise ModelFileError(self.index_path, 'the checkpoint index is missing')
        self.entries = {}
        header = None
        for key, value in read_table(self.index_path):
            if key == b'':
                header = self._parse(protos.BundleHeaderProto, value, 'the bundle header')
                continue
            name = key.decode('utf8', 'replace')
            self.entries[name] = self._parse(protos.BundleEntryProto, value,
                                             'the entry of %r' % name)
        if header is None:
            raise ModelFileError(self.index_path, 'the index has no bundle header (empty key)')
        self.num_shards = header.num_shards
        if not 1 <= header.num_shards <= max(1, len(self.entries)):
            raise ModelFileError(self.index_path, 'the header declares %d data shards for %d '
                                 'tensors' % (header.num_shards, len(self.entries)))
        self.byte_order = '>' if header.endianness == 1 else '<'
        self.shard_sizes = [os.path.getsize(p) if os.path.isfile(p) else None
                            for p in map(self.shard_path, range(self.num_shards))]
        for name, entry in self.entries.items():
            self._check_extent(name, entry)

    def _parse(self, message_class, value, what):
        message = message_class()
        try:
            message.ParseFromString(value)
        except Exception as e:  # protobuf's DecodeError, whose module varies by runtime
            raise ModelFileError(self.index_path, '%s is not a valid %s (%s)' % (
                what, message_class.DESCRIPTOR.name, e)) from e
        return message

    def shard_path(self, shard):
        return '%s.data-%05d-of-%05d' % (self.prefix, shard, self.num_shards)

    def _check_extent(self, name, entry):
        if not 0 <= entry.shard_id < self.num_shards:
            raise ModelFileError(self.index_path, 'tensor %r is in shard %d of %d' % (
                name, entry.shard_id, self.num_shards))
        shard_size = self.shard_sizes[entry.shard_id]
        if shard_size is None:
            raise ModelFileError(self.shard_path(entry.shard_id), 'the data shard is missing')
        if entry.offset < 0 or entry.size < 0 or entry.offset + entry.size > shard_size:
            raise ModelFileError(self.shard_path(entry.shard_id), 'tensor %r (%d bytes at %d) '
                                 'runs past the end of the shard (%d bytes)' % (
                                     name, entry.size, entry.offset, shard_size))

    def shape(self, name):
        """The declared shape of tensor `name`, as a tuple."""
        entry = self.entries[name]
        shape = tuple(d.size for d in entry.shape.dim)
        if any(d < 0 for d in shape) or entry.shape.unknown_rank:
            raise ModelFileError(self.index_path, 'tensor %r has the undefined shape %s' % (
                name, list(shape)))
        return shape

    def read(self, name):
        """The value of tensor `name`: a numpy array, or a list of bytes for a string tensor.

        # Raises
            KeyError: if the bundle has no tensor `name`.
            ModelFileError: if its declared dtype, shape and size disagree, or its data fails
                its checksum.
        """
        entry = self.entries[name]
        shape = self.shape(name)
        count = 1
        for d in shape:
            count *= d
        if entry.slices:
            raise ModelFileError(self.index_path, 'tensor %r is saved in slices (a partitioned '
                                 'variable), which this reader does not assemble' % name)
        if entry.dtype != _DT_STRING and entry.dtype not in _DTYPES:
            raise ModelFileError(self.index_path, 'tensor %r has the TensorFlow dtype %d, '
                                 'which has no numpy equivalent here' % (name, entry.dtype))
        if entry.dtype != _DT_STRING:
            dtype = np.dtype(_DTYPES[entry.dtype]).newbyteorder(self.byte_order)
            if count * dtype.itemsize != entry.size:
                raise ModelFileError(self.index_path, 'tensor %r of shape %s and dtype %s needs '
                                     '%d bytes but is declared as %d' % (
                                         name, list(shape), dtype.name,
                                         count * dtype.itemsize, entry.size))
        elif count > entry.size:
            raise ModelFileError(self.index_path, 'string tensor %r of shape %s cannot fit in '
                                 '%d bytes' % (name, list(shape), entry.size))
        data = self._data(name, entry)
        if entry.dtype == _DT_STRING:
            return self._strings(name, data, count)
        value = np.frombuffer(data, dtype).reshape(shape)
        if entry.dtype == _DT_BFLOAT16:
            return (value.astype(np.uint32) << 16).view(np.float32)
        return value.astype(dtype.newbyteorder('='))

    def _data(self, name, entry):
        path = self.shard_path(entry.shard_id)
        with open(path, 'rb') as f:
            f.seek(entry.offset)
            data = f.read(entry.size)
        if len(data) != entry.size:
            raise ModelFileError(path, 'tensor %r is cut short: %d of %d bytes' % (
                name, len(data), entry.size))
        if entry.dtype != _DT_STRING and _crc32c(data) != _unmask(entry.crc32c):
            raise ModelFileError(path, 'tensor %r fails its checksum: the file is damaged' % name)
        return data

    def _strings(self, name, data, count):
        """A string tensor's elements: varint lengths, the masked CRC-32C of the lengths, then
        the bytes. TensorFlow checksums each length as a little-endian uint32 (its low half),
        and the whole as those lengths, the stored checksum, then the bytes."""
        path = self.shard_path(self.entries[name].shard_id)
        lengths = []
        position = 0
        for _ in range(count):
            length, position = _varint(data, position, path, 'string tensor %r' % name)
            lengths.append(length)
        if position + 4 + sum(lengths) != len(data):
            raise ModelFileError(path, 'string tensor %r declares %d bytes of strings in %d' % (
                name, sum(lengths), len(data) - position - 4))
        checksummed_lengths = struct.pack('<%dI' % count, *(n & 0xFFFFFFFF for n in lengths))
        stored = data[position:position + 4]
        strings_start = position + 4
        if (_unmask(struct.unpack('<I', stored)[0]) != _crc32c(checksummed_lengths)
                or _crc32c(checksummed_lengths + stored + data[strings_start:])
                != _unmask(self.entries[name].crc32c)):
            raise ModelFileError(path, 'string tensor %r fails its checksum: the file is '
                                 'damaged' % name)
        strings = []
        position = strings_start
        for length in lengths:
            strings.append(bytes(data[position:position + length]))
            position += length
        return strings
