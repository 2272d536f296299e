"""tf.keras' layer call conventions (torchk.keras.engine.base_layer): arguments after
`inputs`, keyword tensors, `training` and masks in nested calls, `add_weight`'s defaults."""
import os

import numpy as np
import pytest
import torch

import torchk.keras as keras
import torchk.tf as tf

A = np.arange(6, dtype='float32').reshape(2, 3)
B = np.ones((2, 3), 'float32')


class Combine(keras.layers.Layer):
    """`call(a, b, c, scale)`: tensors by position and by keyword, and a constant."""

    def call(self, a, b, c=None, scale=1.):
        return (a + 2. * b + (0. if c is None else 3. * c)) * scale


@pytest.mark.parametrize('args, kwargs, expected', [
    ((A, B), {}, A + 2 * B),
    ((A, B, A), {}, A + 2 * B + 3 * A),
    ((A,), {'b': B, 'c': A, 'scale': 2.}, (A + 2 * B + 3 * A) * 2),
    ((A, B), {'scale': -1.}, -(A + 2 * B)),
], ids=['positional', 'three_positional', 'keywords', 'constant'])
def test_extra_arguments_eager_and_symbolic(args, kwargs, expected):
    layer = Combine()
    np.testing.assert_allclose(np.asarray(layer(*args, **kwargs)), expected)
    symbols = [keras.Input((3,)) for _ in args]
    tensors = {k: keras.Input((3,)) for k, v in kwargs.items() if isinstance(v, np.ndarray)}
    constants = {k: v for k, v in kwargs.items() if k not in tensors}
    model = keras.Model(symbols + list(tensors.values()),
                        layer(*symbols, **dict(constants, **tensors)))
    fed = list(args) + [kwargs[k] for k in tensors]
    np.testing.assert_allclose(model.predict(fed), expected, rtol=1e-6)


def test_argument_given_twice_or_too_many():
    with pytest.raises(TypeError, match="argument 'b' both by position and by name"):
        Combine()(A, B, b=B)
    with pytest.raises(TypeError, match='takes 3 positional argument'):
        Combine()(A, B, A, 1., 2.)


class Endpoint(keras.layers.Layer):
    """keras-io's endpoint layer: the loss from the targets given as another argument (the
    class of tests/fixtures/make_tf_keras_semantics.py)."""

    def call(self, logits, targets, scale=1.):
        self.add_loss(tf.reduce_mean(tf.square(logits - targets)))
        return logits * scale


def _endpoint_model():
    inputs, targets = keras.Input((3,), name='x'), keras.Input((1,), name='t')
    logits = keras.layers.Dense(1, kernel_initializer='ones', name='dense')(inputs)
    return keras.Model([inputs, targets], Endpoint(name='endpoint')(logits, targets))


def test_endpoint_layer_trains():
    rng = np.random.RandomState(0)
    x, t = rng.randn(16, 3).astype('float32'), rng.randn(16, 1).astype('float32')
    model = _endpoint_model()
    model.compile(keras.optimizers.SGD(0.))
    history = model.fit([x, t], batch_size=16, epochs=1, verbose=0).history
    assert history['loss'][0] == pytest.approx(np.mean((x.sum(1, keepdims=True) - t) ** 2),
                                               rel=1e-5)
    outer = keras.Model(model.inputs, model(model.inputs))  # replayed on new tensors
    np.testing.assert_allclose(outer.predict([x, t]), x.sum(1, keepdims=True), rtol=1e-5)


def test_inputs_given_by_the_name_of_calls_first_parameter():
    layer = Endpoint()
    np.testing.assert_allclose(np.asarray(layer(logits=A, targets=B, scale=2.)), A * 2)
    with pytest.raises(TypeError, match=r'called without inputs \(`logits`\)'):
        layer(targets=B)


class RequiresTraining(keras.layers.Layer):
    def call(self, inputs, training):
        return keras.backend.in_train_phase(inputs * 2., inputs, training=training)


def test_a_required_training_argument_is_passed_when_not_given():
    layer = RequiresTraining()
    model = keras.Model(*(lambda i: (i, layer(i)))(keras.Input((3,))))
    np.testing.assert_allclose(model.predict(A), A)
    np.testing.assert_allclose(np.asarray(layer(A)), A)
    np.testing.assert_allclose(np.asarray(layer(A, training=True)), 2 * A)


class DictEndpointModel(keras.Model):
    """keras-io's subclassed endpoint model: one dict of inputs (data and targets), its
    only loss from `add_loss`, compiled without a loss."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1, kernel_initializer='ones')
        self.endpoint = Endpoint()

    def call(self, inputs):
        return self.endpoint(logits=self.dense(inputs['x']), targets=inputs['t'])


def test_subclassed_model_fits_a_dict_of_inputs_with_add_loss_only():
    rng = np.random.RandomState(0)
    x, t = rng.randn(16, 3).astype('float32'), rng.randn(16, 1).astype('float32')
    model = DictEndpointModel()
    model.compile(keras.optimizers.SGD(0.))
    history = model.fit({'t': t, 'x': x}, batch_size=16, epochs=1, verbose=0).history
    assert history['loss'][0] == pytest.approx(np.mean((x.sum(1, keepdims=True) - t) ** 2),
                                               rel=1e-5)
    np.testing.assert_allclose(model.predict({'x': x, 't': t}), x.sum(1, keepdims=True),
                               rtol=1e-5)


@pytest.mark.parametrize('form', ['h5', 'keras', 'json'])
def test_endpoint_model_saved_as_tf_keras_saves_it(tmp_path, form):
    """The targets are saved in the node's keyword arguments, as tf.keras writes them."""
    x = np.random.RandomState(1).randn(4, 3).astype('float32')
    model = _endpoint_model()
    node = [layer for layer in model.get_config()['layers']
            if layer['name'] == 'endpoint'][0]['inbound_nodes']
    assert node == [[['dense', 0, 0, {'targets': ['t', 0, 0]}]]]
    objects = {'Endpoint': Endpoint}
    if form == 'json':
        loaded = keras.models.model_from_json(model.to_json(), custom_objects=objects)
        loaded.set_weights(model.get_weights())
    else:
        path = str(tmp_path / ('endpoint.' + form))
        model.save(path)
        loaded = keras.models.load_model(path, custom_objects=objects)
    np.testing.assert_allclose(loaded.predict([x, np.zeros((4, 1))]), x.sum(1, keepdims=True),
                               rtol=1e-5)


def test_endpoint_model_saved_by_tf_keras_loads():
    fixtures = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            'fixtures', 'tf_keras', 'semantics')
    model = keras.models.load_model(os.path.join(fixtures, 'endpoint_model.h5'),
                                    custom_objects={'Endpoint': Endpoint})
    with np.load(os.path.join(fixtures, 'endpoint_model.npz')) as reference:
        inputs = [reference['x'], reference['t']]
        np.testing.assert_allclose(model.predict(inputs), reference['y'], rtol=1e-5)
        model(inputs)
        assert float(model.losses[0]) == pytest.approx(float(reference['loss']), rel=1e-5)


def test_multi_head_attention_by_keyword_is_its_input_list():
    rng = np.random.RandomState(0)
    query, value = rng.randn(2, 4, 3).astype('float32'), rng.randn(2, 5, 3).astype('float32')
    layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=2)
    by_list = np.asarray(layer([query, value]))
    np.testing.assert_allclose(np.asarray(layer(query, value)), by_list, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(layer(query, value=value, key=value)), by_list,
                               rtol=1e-6)
    mask = np.ones((2, 4, 5), bool)
    np.testing.assert_allclose(np.asarray(layer(query, value, attention_mask=mask)), by_list,
                               rtol=1e-6)
    # keras-io's transformer examples give every input by keyword.
    np.testing.assert_allclose(np.asarray(layer(query=query, value=value, key=value,
                                                attention_mask=mask)), by_list, rtol=1e-6)


class AddsOneInTraining(keras.layers.Layer):
    def call(self, x, training=None):
        return x + 1. if training else x


@pytest.mark.parametrize('training, expected', [(True, 1.), (False, 0.), (None, 0.)])
def test_training_reaches_layers_of_a_functional_model(training, expected):
    inputs = keras.Input((2,))
    model = keras.Model(inputs, AddsOneInTraining()(keras.layers.Dense(
        2, kernel_initializer='zeros')(inputs)))
    np.testing.assert_allclose(np.asarray(model(B[:, :2], training=training)),
                               np.full((2, 2), expected))


class Block(keras.Model):
    def __init__(self):
        super().__init__()
        self.inner = AddsOneInTraining()

    def call(self, x):
        return self.inner(x)


@pytest.mark.parametrize('training, expected', [(True, 1.), (False, 0.)])
def test_training_reaches_layers_called_by_a_subclassed_model(training, expected):
    np.testing.assert_allclose(np.asarray(Block()(np.zeros((1, 2), 'float32'),
                                                  training=training)),
                               np.full((1, 2), expected))


def test_nested_model_called_with_training_false_stays_in_inference():
    """The transfer-learning pattern: `base(x, training=False)` keeps batch normalization
    in inference mode, its moving statistics unchanged, while the outer model trains."""
    base = keras.Sequential([keras.Input((2,)), keras.layers.BatchNormalization()])
    inputs = keras.Input((2,))
    model = keras.Model(inputs, keras.layers.Dense(1)(base(inputs, training=False)))
    model.compile(keras.optimizers.SGD(0.01), 'mse')
    x = np.random.RandomState(0).uniform(3, 5, (32, 2)).astype('float32')
    model.fit(x, np.zeros((32, 1)), batch_size=8, epochs=1, verbose=0)
    norm = base.layers[0]
    np.testing.assert_array_equal(keras.backend.get_value(norm.moving_mean), [0., 0.])
    gamma, beta = (keras.backend.get_value(w) for w in (norm.gamma, norm.beta))
    np.testing.assert_allclose(np.asarray(base(x[:4])), x[:4] / np.sqrt(1. + 1e-3) * gamma + beta,
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(base(x[:4], training=True)).mean(0), beta,
                               atol=1e-5)  # called in training mode, it normalises the batch


class SumsUnmasked(keras.layers.Layer):
    def call(self, x, mask=None):
        return tf.reduce_sum(x * tf.cast(mask, x.dtype)[..., None], axis=1)


def test_eager_outputs_carry_their_mask_to_the_next_call():
    embedding = keras.layers.Embedding(5, 2, embeddings_initializer='ones', mask_zero=True)
    tokens = np.array([[1, 2, 0, 0], [3, 0, 0, 0]])
    embedded = embedding(tokens)
    np.testing.assert_array_equal(embedded._keras_mask.cpu().numpy(), tokens != 0)
    np.testing.assert_allclose(np.asarray(SumsUnmasked()(embedded)), [[2., 2.], [1., 1.]])


def test_a_layer_without_masking_drops_the_mask():
    """tf.keras: `Embedding(mask_zero=True)` then `Flatten` (no masking) works; Keras 2.3.1
    raises in `Flatten.compute_mask`."""
    inputs = keras.Input((3,))
    flat = keras.layers.Flatten()(keras.layers.Embedding(5, 2, mask_zero=True)(inputs))
    model = keras.Model(inputs, flat)
    assert model.predict(np.array([[1, 0, 0]])).shape == (1, 6)


class Weights(keras.layers.Layer):
    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], 50))
        self.count = self.add_weight(shape=(3,), dtype='int32', trainable=False)
        self.scalar = self.add_weight(name='scalar', initializer='ones',
                                      aggregation='only_first_replica')

    def call(self, x):
        return tf.matmul(x, self.kernel)


def test_add_weight_defaults():
    layer = Weights()
    layer(np.ones((1, 40), 'float32'))
    kernel = keras.backend.get_value(layer.kernel)
    limit = np.sqrt(6. / (40 + 50))  # glorot_uniform
    assert np.abs(kernel).max() <= limit and kernel.std() > limit / 3
    np.testing.assert_array_equal(keras.backend.get_value(layer.count), [0, 0, 0])
    assert layer.count.dtype == torch.int32
    assert tuple(layer.scalar.shape) == () and keras.backend.get_value(layer.scalar) == 1.
    with pytest.raises(TypeError, match=r"unexpected arguments \['colour'\]"):
        keras.layers.Dense(1).add_weight(shape=(1,), colour='red')


def test_a_keras_tensor_carries_its_mask():
    inputs = keras.Input((None,), dtype='int32')
    embedded = keras.layers.Embedding(5, 2, mask_zero=True)(inputs)
    assert inputs._keras_mask is None
    mask = keras.backend.function([inputs], [embedded._keras_mask])([np.array([[1, 0, 3]])])[0]
    np.testing.assert_array_equal(mask, [[True, False, True]])


def test_a_tuple_of_keras_tensors_is_the_layers_input_list():
    class Sum(keras.layers.Layer):
        def call(self, inputs):
            first, second = inputs
            return first + second

    a, b = keras.Input((3,)), keras.Input((3,))
    model = keras.Model([a, b], Sum()((a, b)))
    np.testing.assert_allclose(model.predict([A, B]), A + B)
