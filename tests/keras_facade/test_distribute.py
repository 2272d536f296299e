"""torchk.keras models under a tf.distribute strategy in one process (one replica), and the
engine behaviours distributed training relies on: the compiled step and tf.keras' loop
train alike (regularization, shuffling) and a model compiled for the loop saves.
Two replicas are tested in tests/integration/test_tf_distribute.py."""
import numpy as np
import pytest

import torchk.keras as keras
import torchk.tf as tf

RNG = np.random.RandomState(0)
X = RNG.randn(40, 5).astype('float32')
Y = RNG.randint(0, 3, 40)


def _model(run_eagerly, optimizer=None):
    tf.random.set_seed(3)
    model = keras.Sequential([
        keras.layers.Dense(6, activation='tanh', input_shape=(5,),
                           kernel_regularizer=keras.regularizers.l2(0.01)),
        keras.layers.Dense(3, activation='softmax')])
    model.compile(optimizer or keras.optimizers.SGD(0.1, momentum=0.9),
                  'sparse_categorical_crossentropy', metrics=['accuracy'],
                  run_eagerly=run_eagerly)
    return model


def _fit(run_eagerly, strategy=None):
    if strategy is None:
        model = _model(run_eagerly)
    else:
        with strategy.scope():
            model = _model(run_eagerly, keras.optimizers.SGD(0.1, momentum=0.9))
    np.random.seed(5)
    history = model.fit(X, Y, batch_size=8, epochs=3, verbose=0, validation_split=0.2)
    return model.get_weights(), history.history


def test_compiled_step_and_train_step_loop_train_alike():
    """The same seeded script gives the same weights with Keras' compiled step and with
    tf.keras' loop (`run_eagerly`): regularization counted once, batches shuffled alike."""
    compiled, compiled_logs = _fit(False)
    eager, eager_logs = _fit(True)
    for got, expected in zip(eager, compiled):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(eager_logs['loss'], compiled_logs['loss'], rtol=1e-5)
    np.testing.assert_allclose(eager_logs['val_loss'], compiled_logs['val_loss'], rtol=1e-5)


@pytest.mark.parametrize('run_eagerly', [False, True])
def test_one_replica_strategy_trains_as_no_strategy(single_process, run_eagerly):
    alone, _ = _fit(run_eagerly)
    mirrored, _ = _fit(run_eagerly, tf.distribute.MirroredStrategy())
    for got, expected in zip(mirrored, alone):
        np.testing.assert_array_equal(got, expected)


def test_models_belong_to_the_strategy_they_are_made_in(single_process):
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        inside = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    outside = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    assert inside.distribute_strategy is strategy
    assert outside.distribute_strategy is tf.distribute.get_strategy()
    with strategy.scope():
        assert outside.distribute_strategy is strategy


def test_a_model_compiled_for_the_train_step_loop_saves_its_training_configuration(tmp_path):
    model = _model(True)
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    path = str(tmp_path / 'model.h5')
    model.save(path)
    loaded = keras.models.load_model(path)
    assert type(loaded.optimizer).__name__ == 'SGD'
    np.testing.assert_allclose(loaded.optimizer.get_weights()[1],
                               model.optimizer.get_weights()[1])
    np.testing.assert_allclose(loaded.predict(X), model.predict(X), rtol=1e-6)
