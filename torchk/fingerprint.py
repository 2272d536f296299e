"""TensorFlow's string hashes, computed with numpy: the values `tf.strings.to_hash_bucket_fast`
and `to_hash_bucket_strong` give, so that a model hashed on TensorFlow (`Hashing`, lookups
with several OOV buckets) puts every string in the same bucket on torchk.

- `fingerprint64`: FarmHash's `Fingerprint64` (its `farmhashna::Hash64` function), the hash of
  `to_hash_bucket_fast`. Written from the published algorithm, vectorized over a batch:
  strings are sorted by length and hashed in groups whose bytes are laid out in one padded
  matrix, so each step of the algorithm is one numpy operation over the group.
- `siphash`: SipHash-2-4 with a 128-bit key, the keyed hash of `to_hash_bucket_strong`.

Strings are `bytes` (text is hashed as its UTF-8 bytes, as TensorFlow hashes its strings).
"""
import numpy as np

_K0 = np.uint64(0xc3a5c85c97cb3127)
_K1 = np.uint64(0xb492b66fbe98f273)
_K2 = np.uint64(0x9ae16a3b2f90404f)
_SEED = np.uint64(81)
_MASK = (1 << 64) - 1
_GROUP = 4096  # strings hashed together: bounds the padded matrix of a group


def _u64(value):
    return np.uint64(value)


def _rotate(value, shift):
    """Rotation right by `shift` bits (FarmHash's `Rotate`)."""
    return (value >> _u64(shift)) | (value << _u64(64 - shift))


def _shift_mix(value):
    return value ^ (value >> _u64(47))


def _hash_len16(u, v, mul):
    a = (u ^ v) * mul
    a ^= a >> _u64(47)
    b = (v ^ a) * mul
    b ^= b >> _u64(47)
    return b * mul


class _Bytes:
    """The bytes of a group of strings, zero-padded into one matrix, read as little-endian
    words at a per-string offset (FarmHash's `Fetch` and `Fetch32`)."""

    def __init__(self, strings):
        self.lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
        width = int(self.lengths.max(initial=0)) + 8
        joined = np.frombuffer(b''.join(strings), dtype=np.uint8)
        self.matrix = np.zeros((len(strings), width), dtype=np.uint8)
        rows = np.repeat(np.arange(len(strings)), self.lengths)
        starts = np.cumsum(self.lengths) - self.lengths
        columns = np.arange(len(joined)) - np.repeat(starts, self.lengths)
        self.matrix[rows, columns] = joined
        self.rows = np.arange(len(strings))[:, None]

    def fetch(self, offset, size=8):
        """The `size`-byte little-endian word at `offset` (an int or one per string)."""
        offset = np.broadcast_to(np.asarray(offset, dtype=np.int64), self.lengths.shape)
        window = self.matrix[self.rows, offset[:, None] + np.arange(size)]
        return np.ascontiguousarray(window).view('<u%d' % size)[:, 0].astype(np.uint64)

    def byte(self, offset):
        return self.matrix[self.rows[:, 0], offset].astype(np.uint64)


def _len_0_to_16(data, length):
    result = np.full(length.shape, _K2, dtype=np.uint64)
    mul = _K2 + length.astype(np.uint64) * _u64(2)
    long_ = length >= 8
    if long_.any():
        a = data.fetch(0) + _K2
        b = data.fetch(length - 8)
        c = _rotate(b, 37) * mul + a
        d = (_rotate(a, 25) + b) * mul
        result = np.where(long_, _hash_len16(c, d, mul), result)
    middle = (length >= 4) & (length < 8)
    if middle.any():
        a = data.fetch(0, 4)
        value = _hash_len16(length.astype(np.uint64) + (a << _u64(3)),
                            data.fetch(np.maximum(length - 4, 0), 4), mul)
        result = np.where(middle, value, result)
    short = (length > 0) & (length < 4)
    if short.any():
        a = data.byte(0)
        b = data.byte(length >> 1)
        c = data.byte(np.maximum(length - 1, 0))
        y = a + (b << _u64(8))
        z = length.astype(np.uint64) + (c << _u64(2))
        result = np.where(short, _shift_mix(y * _K2 ^ z * _K0) * _K2, result)
    return result


def _first_and_last_words(data, length, first_factor):
    """`mul, a, b, c, d` of the 17-32 and 33-64 byte kernels: the first two words and the
    last two, mixed (the first with `first_factor`)."""
    mul = _K2 + length.astype(np.uint64) * _u64(2)
    return (mul, data.fetch(0) * first_factor, data.fetch(8), data.fetch(length - 8) * mul,
            data.fetch(length - 16) * _K2)


def _len_17_to_32(data, length):
    mul, a, b, c, d = _first_and_last_words(data, length, _K1)
    return _hash_len16(_rotate(a + b, 43) + _rotate(c, 30) + d,
                       a + _rotate(b + _K2, 18) + c, mul)


def _len_33_to_64(data, length):
    mul, a, b, c, d = _first_and_last_words(data, length, _K2)
    y = _rotate(a + b, 43) + _rotate(c, 30) + d
    z = _hash_len16(y, a + _rotate(b + _K2, 18) + c, mul)
    e = data.fetch(16) * mul
    f = data.fetch(24)
    g = (y + data.fetch(length - 32)) * mul
    h = (z + data.fetch(length - 24)) * mul
    return _hash_len16(_rotate(e + f, 43) + _rotate(g, 30) + h,
                       e + _rotate(f + a, 18) + g, mul)


def _weak_len32(data, offset, a, b):
    """FarmHash's `WeakHashLen32WithSeeds` of the 32 bytes at `offset`: two words."""
    w, x = data.fetch(offset), data.fetch(offset + 8)
    y, z = data.fetch(offset + 16), data.fetch(offset + 24)
    a = a + w
    b = _rotate(b + a + z, 21)
    c = a
    a = a + x + y
    b = b + _rotate(a, 44)
    return a + z, b + c


def _len_over_64(data, length):
    """The loop over 64-byte blocks, run for all strings at once: a string's state stops
    changing after its own blocks (`(length - 1) // 64` of them)."""
    count = length.shape[0]
    x = np.full(count, _SEED, dtype=np.uint64)
    y = np.full(count, _SEED * _K1 + _u64(113), dtype=np.uint64)
    z = _shift_mix(y * _K2 + _u64(113)) * _K2
    v = (np.zeros(count, np.uint64), np.zeros(count, np.uint64))
    w = (np.zeros(count, np.uint64), np.zeros(count, np.uint64))
    x = x * _K2 + data.fetch(0)
    blocks = (length - 1) // 64
    for block in range(int(blocks.max())):
        active = blocks > block
        s = np.minimum(block, blocks - 1) * 64
        nx = _rotate(x + y + v[0] + data.fetch(s + 8), 37) * _K1
        ny = _rotate(y + v[1] + data.fetch(s + 48), 42) * _K1
        nx ^= w[1]
        ny = ny + v[0] + data.fetch(s + 40)
        nz = _rotate(z + w[0], 33) * _K1
        nv = _weak_len32(data, s, v[1] * _K1, nx + w[0])
        nw = _weak_len32(data, s + 32, nz + w[1], ny + data.fetch(s + 16))
        x, y, z = (np.where(active, nz, x), np.where(active, ny, y),
                   np.where(active, nx, z))
        v = tuple(np.where(active, new, old) for new, old in zip(nv, v))
        w = tuple(np.where(active, new, old) for new, old in zip(nw, w))
    mul = _K1 + ((z & _u64(0xff)) << _u64(1))
    s = length - 64
    w0 = w[0] + ((length - 1) & 63).astype(np.uint64)
    v0 = v[0] + w0
    w0 = w0 + v0
    x = _rotate(x + y + v0 + data.fetch(s + 8), 37) * mul
    y = _rotate(y + v[1] + data.fetch(s + 48), 42) * mul
    x ^= w[1] * _u64(9)
    y = y + v0 * _u64(9) + data.fetch(s + 40)
    z = _rotate(z + w0, 33) * mul
    v = _weak_len32(data, s, v[1] * mul, x + w0)
    w = _weak_len32(data, s + 32, z + w[1], y + data.fetch(s + 16))
    x, z = z, x
    return _hash_len16(_hash_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z,
                       _hash_len16(v[1], w[1], mul) + x, mul)


# FarmHash's kernels by string length: (longest length a kernel takes, kernel).
_BY_LENGTH = ((16, _len_0_to_16), (32, _len_17_to_32), (64, _len_33_to_64),
              (None, _len_over_64))


def fingerprint64(strings):
    """FarmHash `Fingerprint64` of each string (TensorFlow's fast string hash).

    # Arguments
        strings: a sequence of `bytes`.

    # Returns
        A uint64 numpy array, one hash per string.
    """
    strings = list(strings)
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    result = np.zeros(len(strings), dtype=np.uint64)
    lower = -1
    with np.errstate(over='ignore'):
        for upper, kernel in _BY_LENGTH:
            chosen = np.flatnonzero((lengths > lower) & (
                lengths <= (upper if upper is not None else lengths.max(initial=0))))
            chosen = chosen[np.argsort(lengths[chosen], kind='stable')]
            for start in range(0, len(chosen), _GROUP):
                group = chosen[start:start + _GROUP]
                data = _Bytes([strings[i] for i in group])
                result[group] = kernel(data, data.lengths)
            lower = upper
    return result


def _rotl(value, shift):
    return ((value << shift) | (value >> (64 - shift))) & _MASK


def _sip_rounds(v, rounds):
    v0, v1, v2, v3 = v
    for _ in range(rounds):
        v0 = (v0 + v1) & _MASK
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & _MASK
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & _MASK
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & _MASK
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return [v0, v1, v2, v3]


def siphash(data, key):
    """SipHash-2-4 of `data` (bytes) with `key`, two 64-bit integers (TensorFlow's keyed
    string hash, `to_hash_bucket_strong`).

    # Returns
        The hash as a Python int in [0, 2**64).
    """
    k0, k1 = (int(k) & _MASK for k in key)
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]
    whole = len(data) - len(data) % 8
    for start in range(0, whole, 8):
        word = int.from_bytes(data[start:start + 8], 'little')
        v[3] ^= word
        v = _sip_rounds(v, 2)
        v[0] ^= word
    last = int.from_bytes(data[whole:], 'little') | ((len(data) & 0xff) << 56)
    v[3] ^= last
    v = _sip_rounds(v, 2)
    v[0] ^= last
    v[2] ^= 0xff
    v = _sip_rounds(v, 4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]
