"""File formats of the stand-ins, written with the standard library and numpy: CSV, gzip,
zip and tar.gz archives, WAV, TFRecord files of `tf.train.Example`s; and JPEG/PNG images
through Pillow (imported when an image is made: the runners put it on the path)."""
import csv
import gzip
import io
import struct
import tarfile
import wave
import zipfile

import numpy as np

# Archives get one fixed time stamp, so that the same files make the same bytes.
_MTIME = 1700000000
_ZIP_DATE = (2023, 11, 14, 22, 13, 20)


def csv_text(header, rows, delimiter=','):
    """CSV text (str): a header line (none when `header` is None), then the rows."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator='\n')
    if header is not None:
        writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def gzip_bytes(data):
    """`data` (bytes) gzip-compressed, with a fixed time stamp."""
    return gzip.compress(data, mtime=_MTIME)


def zip_bytes(files):
    """A zip archive (bytes) of `files`, {path inside the archive: bytes or str}."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data.encode('utf-8') if isinstance(data, str) else data)
    return out.getvalue()


def tar_gz_bytes(files):
    """A gzip-compressed tar archive (bytes) of `files`, {path: bytes or str}; the
    directories on the paths get entries of their own, as `tar` writes them."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode='w', format=tarfile.PAX_FORMAT) as archive:
        directories = set()
        for path in files:
            parts = path.split('/')[:-1]
            for i in range(1, len(parts) + 1):
                directory = '/'.join(parts[:i])
                if directory not in directories:
                    directories.add(directory)
                    info = tarfile.TarInfo(directory)
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, _MTIME
                    archive.addfile(info)
            data = files[path]
            data = data.encode('utf-8') if isinstance(data, str) else data
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, _MTIME
            archive.addfile(info, io.BytesIO(data))
    return gzip_bytes(out.getvalue())


def image_bytes(pixels, format='JPEG'):
    """An image file (bytes) of `pixels`, uint8 (height, width) or (height, width, 3).

    # Arguments
        pixels: the image.
        format: 'JPEG' (baseline, JFIF) or 'PNG'.
    """
    from PIL import Image
    out = io.BytesIO()
    options = dict(quality=90) if format == 'JPEG' else {}
    Image.fromarray(np.asarray(pixels, dtype=np.uint8)).save(out, format=format, **options)
    return out.getvalue()


def wav_bytes(samples, rate=16000):
    """A mono 16-bit PCM WAV file (bytes) of `samples`, floats in [-1, 1]."""
    pcm = np.clip(np.round(np.asarray(samples) * 32767), -32768, 32767).astype('<i2')
    out = io.BytesIO()
    with wave.open(out, 'wb') as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(pcm.tobytes())
    return out.getvalue()


def _varint(value):
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, payload):
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _feature(values):
    """A `tf.train.Feature`: a BytesList of bytes/str, an Int64List of ints, a FloatList of
    floats."""
    values = list(values)
    if all(isinstance(v, (bytes, str)) for v in values):
        items = b''.join(_field(1, v.encode('utf-8') if isinstance(v, str) else v)
                         for v in values)
        return _field(1, items)
    if all(isinstance(v, (int, np.integer)) for v in values):
        return _field(3, _field(1, b''.join(_varint(int(v)) for v in values)))
    return _field(2, _field(1, struct.pack('<%df' % len(values), *values)))


def example_bytes(features):
    """A serialized `tf.train.Example` of `features`, {name: list of bytes, ints or
    floats}."""
    entries = b''.join(_field(1, _field(1, name.encode('utf-8')) + _field(2, _feature(values)))
                       for name, values in features.items())
    return _field(1, entries)


def _crc32c_table():
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli) of `data`."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked_crc(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_bytes(records):
    """A TFRecord file (bytes) of `records`, each bytes: length, its masked CRC-32C, the
    data, its masked CRC-32C."""
    out = bytearray()
    for record in records:
        length = struct.pack('<Q', len(record))
        out += length + struct.pack('<I', _masked_crc(length)) + record
        out += struct.pack('<I', _masked_crc(record))
    return bytes(out)
