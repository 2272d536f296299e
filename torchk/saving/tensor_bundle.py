"""TensorFlow's checkpoint format (the "tensor bundle" of `variables/` in a SavedModel and of
`tf.train.Checkpoint`), read and written without TensorFlow.

A bundle `<prefix>` is an index `<prefix>.index` and data shards
`<prefix>.data-<i>-of-<n>`. The index is an SSTable (LevelDB's table format): data blocks of
prefix-compressed keys, an index block pointing at them, and a 48-byte footer ending in a
magic number; each block carries a type byte (0: stored as is; 1: Snappy, which TensorFlow
never writes for bundles) and the masked CRC-32C of its bytes. The empty key holds a
`BundleHeaderProto`, every other key (a tensor's name) a `BundleEntryProto` giving the
tensor's dtype, shape, shard, offset, byte size and masked CRC-32C.

Every declared offset, size and shape is checked against the files before anything is
allocated, and every checksum is verified; a file that fails a check raises `ModelFileError`
naming the file and the check. `write_bundle` writes one data shard and its index as
TensorFlow's `BundleWriter` does (uncompressed blocks, little-endian data), each file replacing
the previous one whole (`atomic_files`).
"""
import os
import struct

import numpy as np

from . import protos
from .atomic_files import replacing
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
_DT_VARIANT = 21  # TF's opaque values (a tf.data iterator's state): listed, never read
# numpy dtypes → TensorFlow's DataType numbers, for writing (uint16 is TF's uint16, 17).
_TF_DTYPES = {np.dtype(name): number for number, name in _DTYPES.items() if number != 14}
DTYPE_NUMBERS = dict({np.dtype(d).name: n for d, n in _TF_DTYPES.items()}, bfloat16=14,
                     string=7)
"""TF's DataType number of each dtype name (`types.proto`)."""
_RESTART_INTERVAL = 16  # keys between two restart points of a table block, as LevelDB's
_BLOCK_SIZE = 1 << 18  # bytes of entries after which a data block is closed


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


def _mask(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xa282ead8) & 0xFFFFFFFF


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


def _encode_varint(number):
    out = bytearray()
    while number >= 0x80:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def _encode_block(entries):
    """A table block of sorted (key, value) pairs: keys share their prefix with the previous
    key, except at a restart point every `_RESTART_INTERVAL` keys."""
    out = bytearray()
    restarts = []
    previous = b''
    for i, (key, value) in enumerate(entries):
        if i % _RESTART_INTERVAL == 0:
            restarts.append(len(out))
            shared = 0
        else:
            shared = 0
            limit = min(len(previous), len(key))
            while shared < limit and previous[shared] == key[shared]:
                shared += 1
        out += (_encode_varint(shared) + _encode_varint(len(key) - shared)
                + _encode_varint(len(value)) + key[shared:] + value)
        previous = key
    restarts = restarts or [0]
    out += struct.pack('<%dI' % (len(restarts) + 1), *(restarts + [len(restarts)]))
    return bytes(out)


def encode_table(entries):
    """The bytes of an SSTable (the format `read_table` reads) holding `entries`.

    # Arguments
        entries: (bytes, bytes) pairs in strictly increasing key order.

    # Returns
        bytes: data blocks of about `_BLOCK_SIZE` bytes, an empty metaindex block, the index
        block and the footer, every block uncompressed and checksummed.
    """
    out = bytearray()

    def append_block(contents):
        handle = (len(out), len(contents))
        trailer = bytes([0])
        out.extend(contents + trailer + struct.pack('<I', _mask(_crc32c(contents + trailer))))
        return _encode_varint(handle[0]) + _encode_varint(handle[1])

    index, block, size = [], [], 0
    for key, value in entries:
        block.append((key, value))
        size += len(key) + len(value)
        if size >= _BLOCK_SIZE:
            index.append((key, append_block(_encode_block(block))))
            block, size = [], 0
    if block or not index:
        index.append((block[-1][0] if block else b'', append_block(_encode_block(block))))
    metaindex = append_block(_encode_block([]))
    index_handle = append_block(_encode_block(index))
    footer = (metaindex + index_handle).ljust(_FOOTER_SIZE - 8, b'\0')
    out += footer + struct.pack('<Q', _TABLE_MAGIC)
    return bytes(out)


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

    def dtype_name(self, name):
        """TF's name of the dtype of tensor `name` (`'float32'`, `'string'`, `'bfloat16'`)."""
        dtype = self.entries[name].dtype
        if dtype == _DT_STRING:
            return 'string'
        if dtype == _DT_BFLOAT16:
            return 'bfloat16'
        if dtype == _DT_VARIANT:
            return 'variant'
        if dtype not in _DTYPES:
            raise ModelFileError(self.index_path, 'tensor %r has the TensorFlow dtype %d, '
                                 'which has no numpy equivalent here' % (name, dtype))
        return _DTYPES[dtype]

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


# ---- Writing ------------------------------------------------------------------------------

def _encoded_tensor(name, value):
    """(TF dtype number, shape, bytes, crc32c) of `value`: a numeric numpy array, or an array
    of dtype object holding bytes (a string tensor)."""
    value = np.asarray(value)
    if value.dtype == object:
        strings = [item if isinstance(item, bytes) else str(item).encode('utf8')
                   for item in value.reshape(-1)]
        lengths = struct.pack('<%dI' % len(strings), *(len(item) for item in strings))
        checksum = struct.pack('<I', _mask(_crc32c(lengths)))
        joined = b''.join(strings)
        data = b''.join(_encode_varint(len(item)) for item in strings) + checksum + joined
        return _DT_STRING, value.shape, data, _crc32c(lengths + checksum + joined)
    dtype = value.dtype.newbyteorder('<') if value.dtype.byteorder == '>' else value.dtype
    if dtype.newbyteorder('=') not in _TF_DTYPES:
        raise TypeError('Tensor %r has the dtype %s, which TensorFlow checkpoints do not '
                        'store (supported: %s).' % (name, value.dtype, ', '.join(
                            sorted(str(d) for d in _TF_DTYPES))))
    data = np.ascontiguousarray(value, dtype.newbyteorder('<')).tobytes()
    return _TF_DTYPES[dtype.newbyteorder('=')], value.shape, data, _crc32c(data)


def write_bundle(prefix, tensors):
    """Writes `tensors` as the checkpoint `<prefix>.index` + `<prefix>.data-00000-of-00001`.

    # Arguments
        prefix: the bundle's path prefix; its folder must exist.
        tensors: `{name: value}`; a value is a numpy array (numbers or booleans), or an array
            of dtype object holding `bytes` (a string tensor: TF's object graph).

    # Returns
        The prefix.

    # Raises
        TypeError: for a value of a dtype TensorFlow's checkpoints do not store.
    """
    names = sorted(tensors, key=lambda name: name.encode('utf8'))
    data = bytearray()
    entries = []
    for name in names:
        dtype, shape, payload, crc = _encoded_tensor(name, tensors[name])
        entry = protos.BundleEntryProto(dtype=dtype, shard_id=0, offset=len(data),
                                        size=len(payload), crc32c=_mask(crc))
        for size in shape:
            entry.shape.dim.add().size = int(size)
        entries.append((name.encode('utf8'), entry.SerializeToString()))
        data += payload
    header = protos.BundleHeaderProto(num_shards=1, endianness=0)
    header.version.producer = 1
    index = encode_table([(b'', header.SerializeToString())] + entries)
    with replacing('%s.data-00000-of-00001' % prefix) as temporary:
        with open(temporary, 'wb') as f:
            f.write(data)
    with replacing(prefix + '.index') as temporary:
        with open(temporary, 'wb') as f:
            f.write(index)
    return prefix
