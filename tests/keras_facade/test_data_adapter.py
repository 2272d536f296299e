"""tf.keras' data for fit/evaluate/predict where Keras 2.3.1 refuses it
(torchk/keras/engine/data_adapter.py): pandas' Series and DataFrames (TF's CSV tutorial)."""
import numpy as np
import pytest

import torchk.keras as keras

pd = pytest.importorskip('pandas')

RNG = np.random.RandomState(3)
FEATURES = RNG.rand(40, 3).astype('float32')
TARGETS = RNG.rand(40).astype('float32')


def _fit(x, y, run_eagerly):
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.layers.Dense(4, activation='relu'), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1), 'mse', run_eagerly=run_eagerly)
    history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    return history.history['loss'], model.get_weights(), model.evaluate(x, y, verbose=0)


@pytest.mark.parametrize('run_eagerly', [False, True])
def test_a_data_frame_and_a_series_are_arrays_the_series_a_column(run_eagerly):
    """tf.keras reads a DataFrame as its values and a Series as an (n, 1) column."""
    frame = pd.DataFrame(FEATURES, columns=['a', 'b', 'c'])
    got = _fit(frame, pd.Series(TARGETS, name='y'), run_eagerly)
    expected = _fit(FEATURES, TARGETS[:, None], run_eagerly)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-6)
    for a, b in zip(got[1], expected[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert got[2] == pytest.approx(expected[2], rel=1e-6)


def test_a_dict_of_columns_feeds_a_model_of_named_inputs():
    frame = pd.DataFrame({'size': FEATURES[:, 0], 'kind': ['x', 'y'] * 20})
    size = keras.Input((1,), name='size')
    kind = keras.Input((1,), name='kind', dtype='string')
    index = keras.layers.StringLookup(vocabulary=['x', 'y'], output_mode='int')(kind)
    both = keras.layers.Concatenate()([size, keras.layers.Lambda(
        lambda t: keras.backend.cast(t, 'float32'))(index)])
    model = keras.Model({'size': size, 'kind': kind}, both)
    predicted = model.predict(dict(frame), verbose=0)
    np.testing.assert_allclose(predicted[:, 0], FEATURES[:, 0], rtol=1e-6)
    np.testing.assert_array_equal(predicted[:, 1], [1., 2.] * 20)


def test_eager_tensors_as_validation_data_are_arrays():
    """TF's autoencoder tutorial validates on `tf.clip_by_value` results (eager tensors),
    which Keras 2.3.1 would take for symbolic data and refuse without `validation_steps`."""
    import torch

    def validated(x_val):
        keras.utils.set_random_seed(1)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile(keras.optimizers.SGD(0.1), 'mse')
        history = model.fit(FEATURES, TARGETS[:, None], batch_size=8, epochs=2, shuffle=False,
                            validation_data=(x_val, TARGETS[:, None]), verbose=0)
        return history.history['val_loss']
    np.testing.assert_allclose(validated(torch.from_numpy(FEATURES)), validated(FEATURES),
                               rtol=1e-6)


def test_normalization_adapts_to_a_data_frame_as_to_its_values():
    """TF's pandas tutorial adapts a `Normalization` layer to a DataFrame."""
    frame = pd.DataFrame(FEATURES, columns=['a', 'b', 'c'])
    from_frame = keras.layers.Normalization(axis=-1)
    from_frame.adapt(frame)
    from_values = keras.layers.Normalization(axis=-1)
    from_values.adapt(FEATURES)
    for got, want in zip(from_frame.get_weights(), from_values.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(from_frame(frame.iloc[:3]).numpy(),
                               (FEATURES[:3] - FEATURES.mean(0)) / FEATURES.std(0),
                               rtol=1e-4, atol=1e-5)


def test_a_model_of_named_inputs_called_on_a_dict_of_series():
    """`model(dict(df.iloc[:1]))` (TF's pandas tutorial): each column, numbers or text, is a
    tensor of its values."""
    import torchk.tf as tf
    frame = pd.DataFrame({'x': [1.5, -2.0], 'kind': ['a', 'c']})
    inputs = {'x': keras.Input(shape=(), name='x'),
              'kind': keras.Input(shape=(), name='kind', dtype=tf.string)}
    lookup = keras.layers.StringLookup(vocabulary=['a', 'b', 'c'], output_mode='one_hot')
    outputs = keras.layers.Concatenate()([inputs['x'][:, tf.newaxis],
                                          lookup(inputs['kind'][:, tf.newaxis])])
    got = keras.Model(inputs, outputs)(dict(frame)).numpy()
    np.testing.assert_array_equal(got, [[1.5, 0, 1, 0, 0], [-2, 0, 0, 0, 1]])


def test_steps_per_epoch_may_be_a_whole_float():
    """TF's imbalanced data tutorial gives `steps_per_epoch=np.ceil(2.0 * neg / BATCH_SIZE)`."""
    import torchk.tf as tf
    dataset = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS[:, None])).repeat().batch(8)
    seen = []
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1), 'mse')
    model.fit(dataset, steps_per_epoch=np.ceil(2.5), epochs=1, verbose=0,
              callbacks=[keras.callbacks.LambdaCallback(
                  on_train_batch_end=lambda batch, logs: seen.append(batch))])
    assert seen == [0, 1, 2]
    with pytest.raises(TypeError, match='whole number of steps; got 2.5'):
        model.fit(dataset, steps_per_epoch=2.5, epochs=1, verbose=0)
