"""tf.data pipelines on torchk.tf against TensorFlow: each case builds the same dataset with
the same `tf.*` calls on both, and the elements (structure, dtypes, values, order) and the
cardinality must be equal. Only deterministic pipelines (no unseeded or seeded shuffles:
torchk's random streams are not TF's)."""
import gzip

import numpy as np
import pytest

pytest.importorskip('tf_keras', reason='the TF oracle needs tensorflow-cpu and tf_keras '
                    "(pip install -e '.[oracle]')")

import tensorflow  # noqa: E402

import torchk.tf  # noqa: E402


def _plain(value):
    """An element as plain Python: nested tuples/dicts of (dtype name, value list)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return tuple(_plain(item) for item in value)
    array = np.asarray(value.numpy())
    dtype = 'string' if array.dtype == object or array.dtype.kind == 'S' else str(array.dtype)
    return dtype, array.tolist()


def _run(tf, build):
    dataset = build(tf)
    cardinality = int(dataset.cardinality())
    limit = 50 if cardinality < 0 else None
    elements = [_plain(e) for e in (dataset.take(limit) if limit else dataset)]
    return cardinality, elements


@pytest.fixture
def files(tmp_path):
    (tmp_path / 'a.txt').write_bytes(b'Line 1\nLine 2\r\nLine 3\n  ')
    (tmp_path / 'b.txt').write_bytes(b'b1\n\nb3\n')
    with gzip.open(tmp_path / 'g.txt.gz', 'wb') as f:
        f.write(b'g1\ng2\n')
    (tmp_path / 'm.csv').write_text('1,2,3,4\n,2,3,4\n1,,3,4\n1,2,,4\n1,2,3,\n,,,\n')
    (tmp_path / 't.csv').write_text(
        'survived,sex,age,fare,name\n0,male,22.0,7.25,"Braund, Mr. Owen"\n'
        '1,female,,71.2833,x\n1,female,26.0,7.925," a "\n0,male,35.0, 8.05 ,\n'
        '1,male,4.0,1e3,y\n')
    return tmp_path


def _repeated(tf):
    return lambda x: tf.data.Dataset.from_tensors(x).repeat(x)


CASES = {
    'interleave_2_2': lambda tf, d: tf.data.Dataset.range(1, 6).interleave(
        _repeated(tf), cycle_length=2, block_length=2),
    'interleave_parallel': lambda tf, d: tf.data.Dataset.range(1, 6).interleave(
        _repeated(tf), cycle_length=3, num_parallel_calls=2),
    'interleave_tuples': lambda tf, d: tf.data.Dataset.from_tensor_slices(
        ([1, 2, 3], [10, 20, 30])).interleave(
        lambda a, b: tf.data.Dataset.from_tensor_slices([a, b, a + b]), cycle_length=2),
    'flat_map': lambda tf, d: tf.data.Dataset.range(1, 4).flat_map(
        lambda x: tf.data.Dataset.range(x)),
    'window_batches': lambda tf, d: tf.data.Dataset.range(30).window(
        4, shift=3, stride=2).flat_map(lambda w: w.batch(4)),
    'window_dropping': lambda tf, d: tf.data.Dataset.range(30).window(
        4, shift=3, stride=2, drop_remainder=True).flat_map(lambda w: w.batch(4)),
    'window_tuples': lambda tf, d: tf.data.Dataset.from_tensor_slices(
        ([1, 2, 3], [4., 5., 6.])).window(2).flat_map(
        lambda a, b: tf.data.Dataset.zip((a.batch(2), b.batch(2)))),
    'counter_zip': lambda tf, d: tf.data.Dataset.zip((
        tf.data.experimental.Counter(start=3, step=2), tf.data.Dataset.range(4))),
    'counter': lambda tf, d: tf.data.Dataset.counter(dtype=tf.int32),
    'reduce_in_map': lambda tf, d: tf.data.Dataset.range(1, 5).map(
        lambda n: tf.data.Dataset.range(n).reduce(tf.constant(0, tf.int64),
                                                  lambda s, v: s + v)),
    'text_lines': lambda tf, d: tf.data.TextLineDataset(
        [str(d / 'a.txt'), str(d / 'b.txt')]).batch(3),
    'text_lines_parallel': lambda tf, d: tf.data.TextLineDataset(
        [str(d / 'a.txt'), str(d / 'b.txt')], num_parallel_reads=2),
    'text_lines_gzip': lambda tf, d: tf.data.TextLineDataset(
        str(d / 'g.txt.gz'), compression_type='GZIP'),
    'text_filter': lambda tf, d: tf.data.TextLineDataset(str(d / 't.csv')).skip(1).filter(
        lambda line: tf.not_equal(tf.strings.substr(line, 0, 1), '0')),
    'csv_defaults': lambda tf, d: tf.data.experimental.CsvDataset(
        str(d / 'm.csv'), [999, 999, 999, 999]),
    'csv_selected': lambda tf, d: tf.data.experimental.CsvDataset(
        str(d / 'm.csv'), [999, 0.5], select_cols=[1, 3]),
    'csv_typed': lambda tf, d: tf.data.experimental.CsvDataset(
        str(d / 't.csv'), [tf.int64, tf.string, -1., tf.float64, 'none'], header=True),
    'make_csv': lambda tf, d: tf.data.experimental.make_csv_dataset(
        str(d / 't.csv'), batch_size=2, label_name='survived', shuffle=False,
        num_epochs=1),
    'make_csv_selected': lambda tf, d: tf.data.experimental.make_csv_dataset(
        str(d / 't.csv'), batch_size=3, select_columns=['fare', 'name'], shuffle=False,
        num_epochs=2),
    'make_csv_forever': lambda tf, d: tf.data.experimental.make_csv_dataset(
        str(d / 't.csv'), batch_size=4, column_defaults=[0, '', 0., 0., ''], shuffle=False),
    'list_files': lambda tf, d: tf.data.Dataset.list_files(str(d / '*.*'), shuffle=False).map(
        lambda path: tf.strings.substr(path, len(str(d)), 100)),
    'generator_spec': lambda tf, d: tf.data.Dataset.from_generator(
        lambda: ((i, i + 1) for i in range(3)),
        output_signature=tf.TensorSpec(shape=(2,), dtype=tf.int64)),
    'py_function': lambda tf, d: tf.data.Dataset.range(4).map(
        lambda x: tf.py_function(lambda v: v * 3, [x], tf.int64)),
    'sample_weight_zero': lambda tf, d: tf.data.Dataset.sample_from_datasets(
        [tf.data.Dataset.range(3), tf.data.Dataset.range(100, 105)], [1., 0.], seed=1),
}


@pytest.mark.parametrize('case', sorted(CASES))
def test_tf_data_pipeline(case, files):
    expected = _run(tensorflow, lambda tf: CASES[case](tf, files))
    got = _run(torchk.tf, lambda tf: CASES[case](tf, files))
    assert got == expected


def test_reduce_and_tf_record_files(tmp_path):
    path = str(tmp_path / 'r.tfrecord')
    with tensorflow.io.TFRecordWriter(path) as writer:
        for record in (b'first', b'', b'x' * 300):
            writer.write(record)
    for tf in (tensorflow, torchk.tf):
        records = tf.data.TFRecordDataset([path, path], num_parallel_reads=2)
        assert [r.numpy() for r in records] == [b'first', b'first', b'', b'', b'x' * 300,
                                                b'x' * 300]
        total = tf.data.Dataset.from_tensor_slices([8, 3, 0, 8, 2, 1]).reduce(
            0, lambda state, value: state + value)
        assert (int(total), tf.as_dtype(total.dtype).name) == (22, 'int32')


def test_string_zeros():
    assert torchk.tf.zeros([2, 1], torchk.tf.string).numpy().tolist() == (
        tensorflow.zeros([2, 1], tensorflow.string).numpy().tolist())
