"""tf.data's file sources (torchk/tf/data_sources.py): the elements are TensorFlow's
(tensorflow 2.21), written here as TF gives them for the same files."""
import gzip
import zlib

import pytest

import torchk.tf as tf


@pytest.fixture
def texts(tmp_path):
    (tmp_path / 'a.txt').write_bytes(b'Line 1\nLine 2\r\nLine 3\n  ')
    (tmp_path / 'b.txt').write_bytes(b'b1\n\nb3\n')
    (tmp_path / 'c.txt').write_bytes(b'')
    return tmp_path


def _lines(dataset):
    return list(dataset.as_numpy_iterator())


def test_text_lines_without_their_endings(texts):
    # TF: [b'Line 1', b'Line 2', b'Line 3', b'  '], cardinality -2, spec ((), string)
    dataset = tf.data.TextLineDataset(str(texts / 'a.txt'))
    assert _lines(dataset) == [b'Line 1', b'Line 2', b'Line 3', b'  ']
    assert isinstance(dataset, tf.data.Dataset) and isinstance(dataset, tf.data.TextLineDataset)
    assert int(dataset.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    assert dataset.element_spec == tf.TensorSpec((), tf.string)
    # TF: batch(2) -> [b'Line 1', b'Line 2'], [b'Line 3', b'  ']
    assert [b.tolist() for b in dataset.batch(2).as_numpy_iterator()] == [
        [b'Line 1', b'Line 2'], [b'Line 3', b'  ']]


def test_files_in_turn_or_interleaved(texts):
    paths = [str(texts / name) for name in ('a.txt', 'c.txt', 'b.txt')]
    # TF: file after file; an empty file gives nothing; an empty line is b''.
    assert _lines(tf.data.TextLineDataset(paths)) == [
        b'Line 1', b'Line 2', b'Line 3', b'  ', b'b1', b'', b'b3']
    # TF: num_parallel_reads=2 and interleave(TextLineDataset, cycle_length=2) both give
    two = [paths[0], paths[2]]
    interleaved = [b'Line 1', b'b1', b'Line 2', b'', b'Line 3', b'b3', b'  ']
    assert _lines(tf.data.TextLineDataset(two, num_parallel_reads=2)) == interleaved
    files = tf.data.Dataset.from_tensor_slices(two)
    assert _lines(files.interleave(tf.data.TextLineDataset, cycle_length=2)) == interleaved
    assert _lines(tf.data.TextLineDataset(tf.constant([paths[2]]))) == [b'b1', b'', b'b3']
    assert _lines(tf.data.TextLineDataset(texts / 'b.txt')) == [b'b1', b'', b'b3']


def test_compressed_files(tmp_path):
    with gzip.open(tmp_path / 'g.gz', 'wb') as f:
        f.write(b'g1\ng2\n')
    (tmp_path / 'z.zz').write_bytes(zlib.compress(b'z1\r\nz2'))
    # TF: [b'g1', b'g2'] and [b'z1', b'z2']
    assert _lines(tf.data.TextLineDataset(str(tmp_path / 'g.gz'),
                                          compression_type='GZIP')) == [b'g1', b'g2']
    assert _lines(tf.data.TextLineDataset(str(tmp_path / 'z.zz'),
                                          compression_type='ZLIB')) == [b'z1', b'z2']
    with pytest.raises(ValueError, match='compression_type'):
        tf.data.TextLineDataset(str(tmp_path / 'g.gz'), compression_type='BZIP')


def test_a_missing_file_raises_not_found_when_read(tmp_path):
    dataset = tf.data.TextLineDataset(str(tmp_path / 'nope.txt'))
    with pytest.raises(tf.errors.NotFoundError, match='nope.txt'):
        list(dataset)


# TF's bytes: tf.io.TFRecordWriter writing b'first', b'', b'x' * 300 (hex), and b'zipped' with
# options='GZIP'.
RECORDS = bytes.fromhex(
    '0500000000000000eab2043e666972737455ff23e5000000000000000029039807d8ea82a22c010000000000'
    '00f2fe5b9d' + '78' * 300 + 'cd829421')
ZIPPED = bytes.fromhex('1f8b080000000000000363638080e2ccabe655990505a929d3dae7bc03004e24f183'
                       '16000000')


def test_tf_record_files(tmp_path):
    (tmp_path / 'r.tfrecord').write_bytes(RECORDS)
    (tmp_path / 'g.tfrecord').write_bytes(ZIPPED)
    dataset = tf.data.TFRecordDataset([str(tmp_path / 'r.tfrecord')])
    assert _lines(dataset) == [b'first', b'', b'x' * 300]
    assert int(dataset.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    assert dataset.element_spec == tf.TensorSpec((), tf.string)
    assert _lines(tf.data.TFRecordDataset(str(tmp_path / 'g.tfrecord'),
                                          compression_type='GZIP')) == [b'zipped']
    both = [str(tmp_path / 'r.tfrecord'), str(tmp_path / 'r.tfrecord')]
    assert _lines(tf.data.TFRecordDataset(both, num_parallel_reads=2)) == [
        b'first', b'first', b'', b'', b'x' * 300, b'x' * 300]


def test_truncated_or_corrupted_records_raise_data_loss(tmp_path):
    # TF: DataLossError 'truncated record at 37' and 'corrupted record at 12'
    (tmp_path / 't.tfrecord').write_bytes(RECORDS[:-3])
    with pytest.raises(tf.errors.DataLossError, match='truncated'):
        list(tf.data.TFRecordDataset(str(tmp_path / 't.tfrecord')))
    corrupted = bytearray(RECORDS)
    corrupted[14] ^= 1
    (tmp_path / 'b.tfrecord').write_bytes(bytes(corrupted))
    dataset = tf.data.TFRecordDataset(str(tmp_path / 'b.tfrecord'))
    with pytest.raises(tf.errors.DataLossError, match='corrupted'):
        list(dataset)
