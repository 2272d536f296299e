"""The `tf` names keras-io's scripts use that torchk.tf added for them: `tf.random.gamma`,
the initializer classes, `tf.map_fn`, `tf.image` patches and boxes, `tf.nn.conv2d`,
`tf.range` on symbols, `tf.summary`, `tf.experimental.numpy`, XLA's `dynamic_update_slice`;
against numpy (TF's numbers for the image ops and conv2d are in
tests/layers/test_tf_keras_models.py)."""
import numpy as np
import pytest
import torch

import torchk.tf as tf


def test_gamma_has_the_moments_of_its_concentration_and_rate():
    tf.random.set_seed(0)
    sample = tf.random.gamma([40000], alpha=[0.5, 3.0], beta=[2.0, 0.5]).numpy()
    assert sample.shape == (40000, 2) and (sample > 0).all()
    np.testing.assert_allclose(sample.mean(0), [0.25, 6.0], rtol=0.03)
    np.testing.assert_allclose(sample.var(0), [0.125, 12.0], rtol=0.06)
    assert tf.random.gamma([3, 2], 1.0, dtype=tf.float64).dtype == torch.float64


def test_initializer_classes():
    tf.random.set_seed(1)
    normal = tf.random_normal_initializer(mean=1.0, stddev=0.5)(shape=(200, 50))
    assert abs(float(normal.mean()) - 1.0) < 0.01 and abs(float(normal.std()) - 0.5) < 0.01
    uniform = tf.random_uniform_initializer(-2.0, 2.0)((1000,), dtype=tf.float64)
    assert uniform.dtype == torch.float64 and -2 <= float(uniform.min()) < float(
        uniform.max()) < 2
    assert tf.zeros_initializer()((2, 3)).numpy().tolist() == [[0.0] * 3] * 2
    assert tf.ones_initializer()((2,), dtype=tf.int32).numpy().tolist() == [1, 1]
    assert tf.constant_initializer([1, 2, 3, 4])((2, 2)).numpy().tolist() == [[1, 2], [3, 4]]
    assert tf.random_normal_initializer.from_config(
        tf.random_normal_initializer(0.0, 2.0, seed=3).get_config()).stddev == 2.0
    with pytest.raises(ValueError, match='cannot fill'):
        tf.constant_initializer([1, 2, 3])((2, 2))


def test_map_fn_over_a_structure():
    x = tf.constant([[1., 2.], [3., 4.], [5., 6.]])
    y = tf.constant([10., 20., 30.])
    total, first = tf.map_fn(lambda pair: (tf.reduce_sum(pair[0]) + pair[1], pair[0][0]),
                             (x, y))
    assert total.numpy().tolist() == [13., 27., 41.] and first.numpy().tolist() == [1., 3., 5.]
    with pytest.raises(ValueError, match='different lengths'):
        tf.map_fn(lambda p: p[0], (x, tf.constant([1.])))


def _numpy_patches(images, rows, cols, stride_r, stride_c, rate_r, rate_c):
    """VALID patches, each flattened in (row, column, channel) order."""
    batch, height, width, channels = images.shape
    extent_r, extent_c = (rows - 1) * rate_r + 1, (cols - 1) * rate_c + 1
    out = []
    for top in range(0, height - extent_r + 1, stride_r):
        line = []
        for left in range(0, width - extent_c + 1, stride_c):
            patch = images[:, top:top + extent_r:rate_r, left:left + extent_c:rate_c, :]
            line.append(patch.reshape(batch, -1))
        out.append(np.stack(line, 1))
    return np.stack(out, 1)


@pytest.mark.parametrize('sizes, strides, rates', [
    ((2, 3), (1, 1), (1, 1)), ((3, 2), (2, 3), (1, 1)), ((2, 2), (1, 2), (2, 1))])
def test_extract_patches_valid_against_numpy(sizes, strides, rates):
    images = np.random.RandomState(0).normal(size=(2, 7, 8, 3)).astype('float32')
    result = tf.image.extract_patches(images, [1, *sizes, 1], [1, *strides, 1],
                                      [1, *rates, 1], 'VALID')
    np.testing.assert_array_equal(result.numpy(), _numpy_patches(images, *sizes, *strides,
                                                                 *rates))


def test_extract_patches_same_pads_as_tf():
    images = np.arange(1 * 4 * 5 * 1, dtype='float32').reshape(1, 4, 5, 1) + 1
    result = tf.image.extract_patches(images, [1, 3, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1],
                                      'SAME').numpy()
    assert result.shape == (1, 2, 3, 9)
    # TF pads the odd total at the end: rows 0 + 1 (at the bottom), columns 1 + 1, so the
    # first patch starts one column before the image (zeros) in its first row.
    assert result[0, 0, 0].tolist() == [0, 1, 2, 0, 6, 7, 0, 11, 12]


def test_bounding_boxes():
    image = np.arange(4 * 5 * 2, dtype='float32').reshape(4, 5, 2)
    np.testing.assert_array_equal(tf.image.crop_to_bounding_box(image, 1, 2, 2, 3).numpy(),
                                  image[1:3, 2:5])
    padded = tf.image.pad_to_bounding_box(image[None], 1, 2, 6, 8).numpy()
    expected = np.zeros((1, 6, 8, 2), 'float32')
    expected[0, 1:5, 2:7] = image
    np.testing.assert_array_equal(padded, expected)
    with pytest.raises(ValueError, match='not inside'):
        tf.image.crop_to_bounding_box(image, 3, 0, 2, 2)
    with pytest.raises(ValueError, match='do not fit'):
        tf.image.pad_to_bounding_box(image, 3, 0, 6, 5)


def test_conv2d_strides_and_formats():
    rng = np.random.RandomState(1)
    x, kernel = rng.normal(size=(2, 5, 5, 3)).astype('float32'), rng.normal(
        size=(3, 3, 3, 4)).astype('float32')
    valid = tf.nn.conv2d(x, kernel, strides=[1, 1, 1, 1], padding='VALID').numpy()
    expected = np.einsum('bhwc,hwco->bo', x[:, :3, :3], kernel)
    np.testing.assert_allclose(valid[:, 0, 0], expected, rtol=1e-5, atol=1e-5)
    first = tf.nn.conv2d(x.transpose(0, 3, 1, 2), kernel, 2, 'SAME', data_format='NCHW')
    np.testing.assert_allclose(first.numpy().transpose(0, 2, 3, 1),
                               tf.nn.conv2d(x, kernel, [2, 2], 'SAME').numpy(), rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(ValueError, match='explicit paddings'):
        tf.nn.conv2d(x, kernel, 1, [[0, 0], [1, 1], [1, 1], [0, 0]])


def test_range_records_on_a_symbol():
    import keras
    from keras import backend as K

    assert tf.range(4).dtype == torch.int32 and tf.range(0.5, 2).numpy().tolist() == [0.5, 1.5]
    inputs = keras.Input((None,))
    positions = tf.range(start=0, limit=K.shape(inputs)[1], delta=2)
    function = K.function([inputs], [positions])
    assert function([np.zeros((1, 7))])[0].tolist() == [0, 2, 4, 6]


def test_summary_writes_scalars_to_the_default_writer(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    writer = tf.summary.create_file_writer(str(tmp_path))
    assert tf.summary.scalar('loss', 1.0, step=0) is False  # no default writer
    with writer.as_default():
        for step in range(3):
            assert tf.summary.scalar('loss', tf.constant(0.5 * step), step=step)
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars('loss')] == [(0, 0.0), (1, 0.5),
                                                                    (2, 1.0)]


def test_experimental_numpy_and_xla():
    tnp = tf.experimental.numpy
    x = tnp.asarray([[1., -2.], [3., 4.]])
    assert tnp.mean(tnp.square(x), axis=0).numpy().tolist() == [5.0, 10.0]
    assert tnp.maximum(x, 0.).numpy().tolist() == [[1., 0.], [3., 4.]]
    assert tnp.matmul(x, x).numpy().tolist() == (x.numpy() @ x.numpy()).tolist()
    update = tf.compiler.tf2xla.python.xla.dynamic_update_slice
    assert update(tf.zeros([5]), tf.constant([7., 8.]), [4]).numpy().tolist() == [
        0, 0, 0, 7, 8]  # the start is clamped so that the update fits


def test_a_list_of_tensors_is_packed_into_one():
    """TF converts a list holding tensors with `tf.stack` (keras-io's attention MIL layer
    takes `tf.math.softmax` of a list of per-instance scores)."""
    import torchk.keras as keras
    a = np.array([[1., 2.], [0., -1.]], 'float32')
    b = np.array([[3., 0.], [1., 1.]], 'float32')
    stacked = np.stack([a, b])
    expected = np.exp(stacked) / np.exp(stacked).sum(0)
    np.testing.assert_allclose(
        tf.math.softmax([tf.constant(a), tf.constant(b)], axis=0).numpy(), expected,
        rtol=1e-6)
    inputs = [keras.Input((2,)), keras.Input((2,))]
    model = keras.Model(inputs, keras.layers.Lambda(
        lambda xs: tf.math.softmax(list(xs), axis=0)[0])(inputs))
    np.testing.assert_allclose(model.predict([a, b]), expected[0], rtol=1e-6)
    np.testing.assert_allclose(tf.reduce_sum([[tf.constant(a)], [tf.constant(b)]],
                                             axis=0).numpy(), [a + b], rtol=1e-6)
