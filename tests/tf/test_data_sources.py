"""tf.data's file sources (torchk/tf/data_sources.py): the elements are TensorFlow's
(tensorflow 2.21), written here as TF gives them for the same files."""
import gzip
import zlib

import numpy as np
import pytest
import torch

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


@pytest.fixture
def csvs(tmp_path):
    (tmp_path / 'm.csv').write_text('1,2,3,4\n,2,3,4\n1,,3,4\n1,2,,4\n1,2,3,\n,,,\n')
    (tmp_path / 't.csv').write_text(
        'survived,sex,age,fare,name\n0,male,22.0,7.25,"Braund, Mr. Owen"\n'
        '1,female,,71.2833,x\n1,female,26.0,7.925," a "\n0,male,35.0, 8.05 ,\n')
    return tmp_path


def _rows(dataset):
    return [tuple(v.tolist() if hasattr(v, 'tolist') else v for v in row)
            for row in dataset.as_numpy_iterator()]


def test_csv_records_with_defaults_and_selected_columns(csvs):
    CsvDataset = tf.data.experimental.CsvDataset
    # TF's records (the data guide's missing.csv example):
    assert _rows(CsvDataset(str(csvs / 'm.csv'), [999, 999, 999, 999])) == [
        (1, 2, 3, 4), (999, 2, 3, 4), (1, 999, 3, 4), (1, 2, 999, 4), (1, 2, 3, 999),
        (999, 999, 999, 999)]
    assert _rows(CsvDataset(str(csvs / 'm.csv'), [999, 999], select_cols=[1, 3])) == [
        (2, 4), (2, 4), (999, 4), (2, 4), (2, 999), (999, 999)]
    assert _rows(CsvDataset(str(csvs / 'm.csv'), [tf.int64, 0.5],
                            exclude_cols=[0, 1]).take(3)) == [(3, 4.)] * 3
    dataset = CsvDataset(str(csvs / 't.csv'), [tf.int32, tf.string, 0., tf.float64, 'none'],
                         header=True)
    rows = _rows(dataset)
    assert rows[0] == (0, b'male', 22., 7.25, b'Braund, Mr. Owen')
    assert rows[1][2] == 0. and rows[2][4] == b' a '
    assert rows[3] == (0, b'male', 35., 8.05, b'none')  # spaces around numbers allowed
    assert dataset.element_spec == (
        tf.TensorSpec((), tf.int32), tf.TensorSpec((), tf.string),
        tf.TensorSpec((), tf.float32), tf.TensorSpec((), tf.float64),
        tf.TensorSpec((), tf.string))


@pytest.mark.parametrize('defaults,header,message', [
    ([999, 999, 999], False, 'expected 3 fields'),             # TF: Expect 3 fields
    ([tf.int32] * 4, False, 'field 0 is required but missing'),  # TF: Field 0 is required
    ([tf.int32, tf.int32, 0., tf.float64, 'none'], True,
     'field 1 in record 1 is not a valid int32'),                # TF: not a valid int32: male
])
def test_csv_errors_are_tf_s(csvs, defaults, header, message):
    name = 't.csv' if header else 'm.csv'
    dataset = tf.data.experimental.CsvDataset(str(csvs / name), defaults, header=header)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        list(dataset)


def _batches(dataset):
    return [({k: v.numpy().tolist() for k, v in features.items()}, label.numpy().tolist())
            for features, label in dataset]


def test_make_csv_dataset_infers_columns_and_batches(csvs):
    # TF: dtypes int32, string, float32, float32, string; a missing age is 0.
    dataset = tf.data.experimental.make_csv_dataset(
        str(csvs / 't.csv'), batch_size=3, label_name='survived', shuffle=False, num_epochs=1)
    batches = _batches(dataset)
    assert [list(f) for f, _ in batches] == [['sex', 'age', 'fare', 'name']] * 2
    assert batches[0][0]['sex'] == [b'male', b'female', b'female']
    assert batches[0][0]['age'] == [22., 0., 26.]
    np.testing.assert_array_equal(batches[0][0]['fare'],
                                  np.array([7.25, 71.2833, 7.925], 'float32'))
    assert batches[0][1] == [0, 1, 1] and batches[1][1] == [0]
    assert batches[1][0]['name'] == [b'']
    features, label = next(iter(dataset))
    assert label.dtype == torch.int32 and features['age'].dtype == torch.float32


def test_make_csv_dataset_selects_and_repeats(csvs):
    # TF: num_epochs=2 gives 3 + 3 + 2 rows (cardinality -2); None repeats forever (-1)
    # with full batches.
    dataset = tf.data.experimental.make_csv_dataset(
        str(csvs / 't.csv'), batch_size=3, select_columns=['fare', 'sex'], shuffle=False,
        num_epochs=2)
    sexes = [f['sex'].numpy().tolist() for f in dataset]
    assert sexes == [[b'male', b'female', b'female'], [b'male', b'male', b'female'],
                     [b'female', b'male']]
    assert list(next(iter(dataset))) == ['sex', 'fare']
    forever = tf.data.experimental.make_csv_dataset(str(csvs / 't.csv'), batch_size=3,
                                                    shuffle=False)
    assert int(forever.cardinality()) == tf.data.INFINITE_CARDINALITY
    second = list(forever.take(2))[1]
    assert second['survived'].tolist() == [0, 0, 1] and second['age'].tolist() == [35., 22., 0.]
    with pytest.raises(ValueError, match='label_name'):
        tf.data.experimental.make_csv_dataset(str(csvs / 't.csv'), 2, label_name='nope')
    with pytest.raises(ValueError, match='no files match'):
        tf.data.experimental.make_csv_dataset(str(csvs / '*.tsv'), 2)


def test_list_files(tmp_path):
    for folder in ('b', 'a'):
        (tmp_path / folder).mkdir()
        for name in ('2.jpg', '1.jpg', '.h'):
            (tmp_path / folder / name).write_text('x')

    def names(dataset):
        return [p[len(str(tmp_path)):] for p in dataset.as_numpy_iterator()]
    # TF: sorted, hidden files included, cardinality 6, string scalars.
    dataset = tf.data.Dataset.list_files(str(tmp_path / '*' / '*'), shuffle=False)
    assert names(dataset) == [b'/a/.h', b'/a/1.jpg', b'/a/2.jpg', b'/b/.h', b'/b/1.jpg',
                              b'/b/2.jpg']
    assert int(dataset.cardinality()) == 6
    assert dataset.element_spec == tf.TensorSpec((), tf.string)
    # TF: the matches of several patterns sorted together.
    assert names(tf.data.Dataset.list_files(
        [str(tmp_path / 'b' / '*'), str(tmp_path / 'a' / '1*')], shuffle=False)) == [
        b'/a/1.jpg', b'/b/.h', b'/b/1.jpg', b'/b/2.jpg']
    shuffled = tf.data.Dataset.list_files(str(tmp_path / '*' / '*'), seed=3)
    assert sorted(names(shuffled)) == names(dataset) and int(shuffled.cardinality()) == 6
    with pytest.raises(tf.errors.InvalidArgumentError, match='no files match'):
        tf.data.Dataset.list_files(str(tmp_path / 'nope*'))
