"""Every public layer class of `keras.layers` (Keras 2.3.1) on torchk.

`LAYER_TABLE` maps each layer class to a minimal construction and input shapes. Every case is
checked the same way (`test_layer`):
- built on `Input`s: `K.int_shape(output)`, `layer.compute_output_shape` and
  `model.output_shape` agree, and `predict()` returns that shape with the batch filled in;
- one `train_on_batch` of `inputs -> layer -> (Flatten, or GlobalAveragePooling1D when the
  output is masked) -> Dense(1)` with mse moves every trainable weight of the layer (and of
  the head);
- `layer.__class__.from_config(layer.get_config())` rebuilds a layer with the same config
  that, given the same weights, predicts identically.

Layers whose training-time behaviour differs (dropout, noise, BatchNormalization) are checked
by `test_train_phase_differs_from_test_phase`; masks by the `test_mask*`/`test_*mask*` tests;
the advanced activation layers' values against numpy by `test_activation_layer_equals_numpy`.

Coverage: `test_every_public_layer_is_covered` enumerates the classes of `keras.layers`
and requires each to be in this table, in `test_convolutional.LAYER_CASES` (which checks
every conv / pool / padding / cropping / upsampling / locally-connected layer in both data
formats; this table keeps one representative of each family), or in `ABSTRACT` (bases not
meant to be instantiated). Recurrent layers are tested in depth (numerics, masks, dropout, stateful,
saving) in `test_recurrent.py`; here each gets the generic checks once.
"""
import copy
import warnings

import numpy as np
import pytest

import keras
import keras.layers as L
from keras import backend as K
from keras.engine.base_layer import Layer
from keras.engine.network import Network
from keras.models import Model, Sequential
from torchk.saving import safe_mode

from .conftest import assert_one_step_moves_weights
from .test_convolutional import LAYER_CASES as CONV_CASES


class Case(object):
    """One table entry.

    name: the layer class this case covers (also the test id, with `variant`);
    make: builds a fresh layer;
    shapes: input shape(s) without the batch axis (a list of tuples for multi-input layers);
    dtype: the input dtype ('int32' for Embedding);
    low, high: when given, inputs are integers drawn in [low, high);
    stochastic: the layer behaves differently in the training phase;
    also: further classes this case covers (e.g. RNN for RNN(cell));
    call_kwargs: keyword arguments of the layer's call (a SlicingOpLambda's slice).
    """

    def __init__(self, name, make, shapes, variant='', dtype='float32', low=None, high=None,
                 stochastic=False, also=(), call_kwargs=None):
        self.name = name
        self.make = make
        self.multi = isinstance(shapes, list)
        self.shapes = shapes if self.multi else [shapes]
        self.id = name + ('-' + variant if variant else '')
        self.dtype = dtype
        self.low, self.high = low, high
        self.stochastic = stochastic
        self.covers = (name,) + tuple(also)
        self.call_kwargs = call_kwargs or {}

    def data(self, batch, seed=0):
        rng = np.random.RandomState(seed)
        if self.low is not None:
            return [rng.randint(self.low, self.high, size=(batch,) + s).astype(self.dtype)
                    for s in self.shapes]
        return [rng.normal(size=(batch,) + s).astype(self.dtype) for s in self.shapes]

    def __repr__(self):
        return self.id


def double_first_two(x):
    return x[:, :2] * 2.


LAYER_TABLE = [
    # core
    Case('Dense', lambda: L.Dense(3), (5,)),
    Case('Dense', lambda: L.Dense(3, activation='relu'), (3, 5), variant='3d'),
    Case('Activation', lambda: L.Activation('tanh'), (5,)),
    Case('Dropout', lambda: L.Dropout(0.5), (6,), stochastic=True),
    Case('SpatialDropout1D', lambda: L.SpatialDropout1D(0.5), (4, 8), stochastic=True),
    Case('SpatialDropout2D', lambda: L.SpatialDropout2D(0.5), (3, 3, 8), stochastic=True),
    Case('SpatialDropout3D', lambda: L.SpatialDropout3D(0.5), (2, 2, 2, 8), stochastic=True),
    Case('Flatten', lambda: L.Flatten(), (3, 4)),
    Case('Reshape', lambda: L.Reshape((2, 6)), (3, 4)),
    Case('Reshape', lambda: L.Reshape((4, -1)), (3, 4), variant='minus1'),
    Case('Permute', lambda: L.Permute((2, 1)), (3, 4)),
    Case('RepeatVector', lambda: L.RepeatVector(3), (4,)),
    Case('Lambda', lambda: L.Lambda(lambda x: x[:, :2] * 2. + 1., output_shape=(2,)), (5,)),
    Case('Lambda', lambda: L.Lambda(double_first_two, output_shape=lambda s: (s[0], 2)), (5,),
         variant='named-function'),
    Case('ActivityRegularization', lambda: L.ActivityRegularization(l1=0.01, l2=0.01), (5,)),
    Case('Masking', lambda: L.Masking(0.), (4, 3)),
    Case('Embedding', lambda: L.Embedding(10, 3), (4,), dtype='int32', low=0, high=10),
    Case('Embedding', lambda: L.Embedding(10, 3, input_length=4), (4,), variant='input_length',
         dtype='int32', low=0, high=10),
    # merge
    Case('Add', lambda: L.Add(), [(4,), (4,)]),
    Case('Add', lambda: L.Add(), [(3, 4), (3, 4), (3, 4)], variant='three'),
    Case('Subtract', lambda: L.Subtract(), [(4,), (4,)]),
    Case('Multiply', lambda: L.Multiply(), [(4,), (4,)]),
    Case('Average', lambda: L.Average(), [(4,), (4,)]),
    Case('Maximum', lambda: L.Maximum(), [(4,), (4,)]),
    Case('Minimum', lambda: L.Minimum(), [(4,), (4,)]),
    Case('Concatenate', lambda: L.Concatenate(), [(3, 2), (3, 4)]),
    Case('Concatenate', lambda: L.Concatenate(axis=1), [(2, 4), (3, 4)], variant='axis1'),
    Case('Dot', lambda: L.Dot(axes=1), [(4,), (4,)]),
    Case('Dot', lambda: L.Dot(axes=2, normalize=True), [(3, 4), (5, 4)], variant='axes2-norm'),
    # noise
    Case('GaussianNoise', lambda: L.GaussianNoise(0.5), (6,), stochastic=True),
    Case('GaussianDropout', lambda: L.GaussianDropout(0.5), (6,), stochastic=True),
    Case('AlphaDropout', lambda: L.AlphaDropout(0.5), (6,), stochastic=True),
    # normalization
    Case('BatchNormalization', lambda: L.BatchNormalization(), (5,), stochastic=True),
    Case('BatchNormalization', lambda: L.BatchNormalization(axis=1, center=False), (3, 4, 4),
         variant='axis1-nocenter', stochastic=True),
    # advanced activations
    Case('LeakyReLU', lambda: L.LeakyReLU(0.2), (5,)),
    Case('PReLU', lambda: L.PReLU(), (5,)),
    Case('PReLU', lambda: L.PReLU(shared_axes=[1]), (3, 4), variant='shared_axes'),
    Case('ELU', lambda: L.ELU(0.5), (5,)),
    Case('ThresholdedReLU', lambda: L.ThresholdedReLU(0.5), (5,)),
    Case('Softmax', lambda: L.Softmax(axis=1), (3, 4)),
    Case('ReLU', lambda: L.ReLU(max_value=1., negative_slope=0.1, threshold=0.2), (5,)),
    # wrappers
    Case('TimeDistributed', lambda: L.TimeDistributed(L.Dense(2)), (3, 4)),
    Case('TimeDistributed', lambda: L.TimeDistributed(L.Conv1D(2, 2)), (3, 5, 2),
         variant='conv1d'),
    Case('Bidirectional', lambda: L.Bidirectional(L.SimpleRNN(2, return_sequences=True)),
         (3, 4)),
    Case('Bidirectional', lambda: L.Bidirectional(L.LSTM(2), merge_mode='sum'), (3, 4),
         variant='lstm-sum'),
    # convolutional / pooling / local: one per family (all of them: test_convolutional.py)
    Case('Conv1D', lambda: L.Conv1D(2, 3, padding='causal'), (6, 2)),
    Case('Conv2D', lambda: L.Conv2D(2, 3, strides=2, padding='same'), (5, 5, 2)),
    Case('Conv3D', lambda: L.Conv3D(2, 2), (3, 3, 3, 1)),
    Case('SeparableConv2D', lambda: L.SeparableConv2D(2, 3), (5, 5, 2)),
    Case('DepthwiseConv2D', lambda: L.DepthwiseConv2D(3, depth_multiplier=2), (5, 5, 2)),
    Case('Conv2DTranspose', lambda: L.Conv2DTranspose(2, 3, strides=2), (3, 3, 2)),
    Case('LocallyConnected1D', lambda: L.LocallyConnected1D(2, 2), (5, 2)),
    Case('MaxPooling2D', lambda: L.MaxPooling2D(), (4, 4, 2)),
    Case('AveragePooling1D', lambda: L.AveragePooling1D(2), (6, 2)),
    Case('GlobalAveragePooling1D', lambda: L.GlobalAveragePooling1D(), (6, 2)),
    Case('GlobalMaxPooling2D', lambda: L.GlobalMaxPooling2D(), (4, 4, 2)),
    Case('ZeroPadding2D', lambda: L.ZeroPadding2D(1), (3, 3, 2)),
    Case('Cropping1D', lambda: L.Cropping1D(1), (5, 2)),
    Case('UpSampling2D', lambda: L.UpSampling2D(), (3, 3, 2)),
    # recurrent (in depth: test_recurrent.py)
    Case('SimpleRNN', lambda: L.SimpleRNN(3), (4, 2)),
    Case('GRU', lambda: L.GRU(3, return_sequences=True), (4, 2)),
    Case('GRU', lambda: L.GRU(3, reset_after=True), (4, 2), variant='reset_after'),
    Case('LSTM', lambda: L.LSTM(3), (4, 2)),
    Case('ConvLSTM2D', lambda: L.ConvLSTM2D(2, 3, padding='same'), (2, 4, 4, 1)),
    Case('SimpleRNNCell', lambda: L.RNN(L.SimpleRNNCell(3)), (4, 2), also=('RNN',)),
    Case('GRUCell', lambda: L.RNN(L.GRUCell(3), return_sequences=True), (4, 2), also=('RNN',)),
    Case('LSTMCell', lambda: L.RNN(L.LSTMCell(3), go_backwards=True), (4, 2), also=('RNN',)),
    Case('StackedRNNCells', lambda: L.RNN(L.StackedRNNCells([L.LSTMCell(3), L.GRUCell(2)])),
         (4, 2), also=('RNN',)),
    Case('ConvLSTM2D', lambda: L.ConvLSTM2D(2, 2, return_sequences=True), (2, 4, 4, 1),
         variant='return_sequences', also=('ConvLSTM2DCell',)),  # the cell ConvLSTM2D runs
    # legacy layers still exported by keras.layers (deprecated in Keras 2)
    Case('Highway', lambda: L.Highway(), (5,)),
    Case('MaxoutDense', lambda: L.MaxoutDense(3, nb_feature=2), (5,)),
    # torchk.layers: tf.keras 2 layers, and the CuDNN layers on any device
    Case('CuDNNLSTM', lambda: L.CuDNNLSTM(3, return_sequences=True), (4, 2)),
    Case('CuDNNGRU', lambda: L.CuDNNGRU(3), (4, 2)),
    Case('LayerNormalization', lambda: L.LayerNormalization(), (3, 4)),
    Case('GroupNormalization', lambda: L.GroupNormalization(groups=2), (3, 4)),
    Case('Attention', lambda: L.Attention(use_scale=True), [(3, 4), (5, 4)]),
    Case('AdditiveAttention', lambda: L.AdditiveAttention(), [(3, 4), (5, 4)]),
    Case('MultiHeadAttention', lambda: L.MultiHeadAttention(2, 3), [(3, 4), (5, 4)]),
    Case('TFOpLambda', lambda: L.TFOpLambda('nn.relu6'), (3, 4)),
    Case('SlicingOpLambda', lambda: L.SlicingOpLambda('__operators__.getitem'), (3, 4),
         call_kwargs={'call_structure': {
             'args': {'class_name': '__tensor__', 'index': 0},
             'kwargs': {'slice_spec': [{'start': None, 'stop': None, 'step': None},
                                       {'start': 1, 'stop': None, 'step': 2}]}}}),
    Case('Rescaling', lambda: L.Rescaling(0.5, offset=1.), (3, 4)),
    Case('Normalization', lambda: L.Normalization(mean=[0., 1., 2., 3.],
                                                  variance=[1., 2., 3., 4.]), (3, 4),
         variant='constant'),
    Case('Normalization', lambda: L.Normalization(axis=(1, 2)), (3, 4), variant='weights'),
    Case('Resizing', lambda: L.Resizing(4, 5, 'bicubic'), (6, 8, 2)),
    Case('CenterCrop', lambda: L.CenterCrop(4, 5), (6, 8, 2)),
    Case('RandomCrop', lambda: L.RandomCrop(4, 5), (6, 8, 2)),
    Case('RandomFlip', lambda: L.RandomFlip(), (6, 8, 2), stochastic=True),
    Case('RandomContrast', lambda: L.RandomContrast(0.5), (6, 8, 2), stochastic=True),
    Case('RandomBrightness', lambda: L.RandomBrightness(0.5, value_range=(-10, 10)),
         (6, 8, 2), stochastic=True),
    Case('RandomRotation', lambda: L.RandomRotation(0.2), (6, 8, 2)),
    Case('RandomZoom', lambda: L.RandomZoom(0.2), (6, 8, 2)),
    Case('RandomTranslation', lambda: L.RandomTranslation(0.1, 0.2), (6, 8, 2)),
    Case('RandomHeight', lambda: L.RandomHeight(0.2), (6, 8, 2)),
    Case('RandomWidth', lambda: L.RandomWidth(0.2), (6, 8, 2)),
    Case('Conv1DTranspose', lambda: L.Conv1DTranspose(3, 3, strides=2, padding='same'),
         (5, 2)),
    Case('GlobalAveragePooling2D', lambda: L.GlobalAveragePooling2D(keepdims=True), (4, 4, 2),
         variant='keepdims'),
    Case('GlobalMaxPooling1D', lambda: L.GlobalMaxPooling1D(keepdims=True), (4, 2),
         variant='keepdims'),
    Case('SyncBatchNormalization', lambda: L.SyncBatchNormalization(), (3, 4)),
    Case('Identity', lambda: L.Identity(), (3, 4)),
    Case('UnitNormalization', lambda: L.UnitNormalization(), (3, 4)),
]

# Layers whose inputs or arguments this table's generic cases cannot give (text, categories,
# einsum equations), each checked against TensorFlow's outputs in the file named.
TESTED_ELSEWHERE = {
    'TextVectorization': 'tests/layers/test_text.py (string inputs)',
    'StringLookup': 'tests/layers/test_text.py (string inputs)',
    'IntegerLookup': 'tests/layers/test_text.py',
    'Hashing': 'tests/layers/test_text.py',
    'CategoryEncoding': 'tests/layers/test_text.py',
    'Discretization': 'tests/layers/test_text.py, tests/saving/test_text_model_files.py',
    'EinsumDense': 'tests/keras_facade/test_tf2_names.py',
    'DepthwiseConv1D': 'tests/keras_facade/test_tf2_names.py',
    'RandomFourierFeatures': 'tests/keras_facade/test_tf2_names.py',
}

# Classes not meant to be built as layers of their own.
ABSTRACT = {
    'Layer': 'the base class',
    'InputLayer': 'made by Input() in every case here',
    'Recurrent': 'the abstract base of the legacy Keras 1 recurrent layers',
    'ConvRecurrent2D': 'the abstract base of the legacy convolutional recurrent layers',
    'AbstractRNNCell': 'the abstract base of tf.keras 2 RNN cells',
}
# Keras 2.2.4 also exports two bases, tested through their subclasses.
ABSTRACT.update({name: why for name, why in [
    ('Wrapper', 'the abstract base of Bidirectional and TimeDistributed'),
    ('ConvRNN2D', 'the base of ConvLSTM2D')] if hasattr(L, name)})

BATCH = 3

def param(value, id):
    """A pytest.param for `value` (a tuple is several arguments) with the test id `id`."""
    if isinstance(value, tuple):
        return pytest.param(*value, id=id)
    return pytest.param(value, id=id)


def make_layer(case):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # the deprecated legacy layers warn
        return case.make()


def apply(case, layer):
    """Fresh Inputs and the layer's output on them."""
    inputs = [L.Input(shape=s, dtype=case.dtype) for s in case.shapes]
    out = layer(inputs if case.multi else inputs[0], **case.call_kwargs)
    return inputs, out


def with_batch(shape, batch):
    return (batch,) + tuple(shape[1:])


def public_layer_classes():
    """{class name: class} for every class exported by keras.layers that is a Layer
    (aliases such as Convolution2D are the same class and count once)."""
    found = {}
    for name, value in vars(L).items():
        # keras.layers.deserialize adds Model and Sequential to the module's globals.
        if (isinstance(value, type) and issubclass(value, Layer)
                and not issubclass(value, Network) and not name.startswith('_')):
            found[value.__name__] = value
    return found


# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize('case', [param(c, c.id) for c in LAYER_TABLE])
def test_layer(case):
    layer = make_layer(case)
    assert type(layer).__name__ in case.covers
    inputs, out = apply(case, layer)
    input_shapes = [(None,) + s for s in case.shapes]
    declared = layer.compute_output_shape(input_shapes if case.multi else input_shapes[0])
    declared = tuple(declared)
    assert declared[0] is None

    # Static shapes: the backend's inferred shape, the layer's and the model's agree.
    assert K.int_shape(out) == declared
    features = Model(inputs, out)
    assert features.output_shape == declared

    # Run-time shape.
    x = case.data(BATCH)
    y = features.predict(x)
    assert y.shape == with_batch(declared, BATCH)
    assert np.all(np.isfinite(y))

    # One training step through the layer moves each of its trainable weights.
    if output_mask(layer) is not None:  # Flatten does not take a mask: pool instead
        flat = L.GlobalAveragePooling1D()(out)
    else:
        flat = L.Flatten()(out) if len(declared) > 2 else out
    assert_one_step_moves_weights(inputs, flat, layer, x, BATCH)
    trained = features.predict(x)
    assert trained.shape == y.shape
    if layer.trainable_weights:
        assert not np.allclose(trained, y)

    # get_config / from_config rebuilds an equivalent layer.
    config = layer.get_config()
    with warnings.catch_warnings(), safe_mode.scope(False):  # the test's own Lambdas
        warnings.simplefilter('ignore')
        # (Wrapper and RNN from_config pop the inner layer's config: pass a copy.)
        clone = layer.__class__.from_config(copy.deepcopy(config))
    assert type(clone) is type(layer)
    clone_inputs, clone_out = apply(case, clone)
    assert K.int_shape(clone_out) == declared
    clone_model = Model(clone_inputs, clone_out)
    assert len(clone.weights) == len(layer.weights)
    clone_model.set_weights(features.get_weights())
    np.testing.assert_allclose(clone_model.predict(x), trained, rtol=1e-6, atol=1e-6)
    clone_config = clone.get_config()
    if case.name == 'Lambda':
        # A Lambda's config holds its functions' marshalled bytecode: compare the rest.
        for key in ('function', 'output_shape'):
            clone_config.pop(key)
            config.pop(key)
    assert clone_config == config


STOCHASTIC = [c for c in LAYER_TABLE if c.stochastic]


@pytest.mark.parametrize('case', [param(c, c.id) for c in STOCHASTIC])
def test_train_phase_differs_from_test_phase(case):
    layer = make_layer(case)
    inputs, out = apply(case, layer)
    model = Model(inputs, out)
    assert model.uses_learning_phase
    x = case.data(64)
    first = model.predict(x)
    np.testing.assert_array_equal(model.predict(x), first)  # predict is deterministic

    f = K.function(inputs + [K.learning_phase()], [out])
    test_phase = f(x + [0])[0]
    np.testing.assert_allclose(test_phase, first, rtol=1e-6, atol=1e-6)
    if case.name != 'BatchNormalization':
        # Noise and dropout layers are the identity at test time.
        np.testing.assert_allclose(test_phase, x[0], rtol=1e-6, atol=1e-6)
    train_phase = f(x + [1])[0]
    assert train_phase.shape == test_phase.shape
    assert np.mean(np.abs(train_phase - test_phase) > 1e-4) > 0.2
    if case.name != 'BatchNormalization':
        # ...and draw new noise on every training-phase call.
        assert not np.allclose(f(x + [1])[0], train_phase)


def np_softmax(z, axis):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# Activation layers against numpy (Keras 2.3.1 definitions, advanced_activations.py).
ACTIVATIONS = [
    ('LeakyReLU', lambda: L.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    ('ELU', lambda: L.ELU(0.5), lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1.))),
    ('ThresholdedReLU', lambda: L.ThresholdedReLU(0.5), lambda x: np.where(x > 0.5, x, 0.)),
    ('Softmax', lambda: L.Softmax(axis=1), lambda x: np_softmax(x, axis=1)),
    ('ReLU', lambda: L.ReLU(max_value=1., negative_slope=0.1, threshold=0.2),
     lambda x: np.where(x >= 1., 1., np.where(x >= 0.2, x, 0.1 * (x - 0.2)))),
    ('ReLU', lambda: L.ReLU(max_value=0.5), lambda x: np.clip(x, 0., 0.5)),
    ('PReLU', lambda: L.PReLU(alpha_initializer=keras.initializers.Constant(0.3)),
     lambda x: np.where(x > 0, x, 0.3 * x)),
]


@pytest.mark.parametrize('make, reference',
                         [param((m, r), '%s-%d' % (n, i))
                          for i, (n, m, r) in enumerate(ACTIVATIONS)])
def test_activation_layer_equals_numpy(make, reference):
    x = np.random.RandomState(0).normal(size=(4, 3, 5)).astype('float32')
    inp = L.Input(shape=(3, 5))
    got = Model(inp, make()(inp)).predict(x)
    np.testing.assert_allclose(got, reference(x), rtol=1e-5, atol=1e-6)


def test_every_public_layer_is_covered():
    exported = set(public_layer_classes())
    covered = set()
    for case in LAYER_TABLE:
        covered.update(case.covers)
    conv_covered = {name.split('-')[0] for name, _, _, _, _ in CONV_CASES}
    missing = exported - covered - conv_covered - set(ABSTRACT) - set(TESTED_ELSEWHERE)
    assert missing == set(), 'layers without a case: %s' % sorted(missing)
    # The lists do not name classes that keras.layers does not export.
    assert (covered | set(ABSTRACT) | set(TESTED_ELSEWHERE)) - exported == set()
    assert len(exported) >= 80


def test_conv_lstm_2d_runs_its_cell():
    layer = L.ConvLSTM2D(2, 3, padding='same', input_shape=(3, 5, 5, 1))
    model = Sequential([layer])
    assert isinstance(layer.cell, L.ConvLSTM2DCell)
    assert model.predict(np.ones((2, 3, 5, 5, 1), 'float32')).shape == (2, 5, 5, 2)


@pytest.mark.parametrize('name', ['Recurrent', 'ConvRecurrent2D'])
def test_legacy_recurrent_bases_leave_the_step_to_subclasses(name):
    base = getattr(L, name)
    assert issubclass(base, Layer)
    with pytest.raises(NotImplementedError):
        base.step(None, None, None)


# ------------------------------------------------------------------------------------------
# Masks.

def eval_mask(tensor_mask, inputs, x):
    return K.function(inputs, [tensor_mask])(x)[0]


def padded_sequences(batch=4, timesteps=5, features=3, seed=0):
    """Float sequences whose trailing time steps are all zeros (lengths 5, 3, 1, 4)."""
    x = np.random.RandomState(seed).normal(size=(batch, timesteps, features)).astype('float32')
    lengths = [5, 3, 1, 4][:batch]
    for i, n in enumerate(lengths):
        x[i, n:] = 0.
    return x, np.arange(timesteps)[None, :] < np.array(lengths)[:, None]


def output_mask(layer):
    return layer.get_output_mask_at(0)


def test_masking_computes_the_mask():
    x, expected = padded_sequences()
    inp = L.Input(shape=x.shape[1:])
    masking = L.Masking(0.)
    out = masking(inp)
    mask = masking.compute_mask(inp)
    assert mask is not None
    assert K.int_shape(mask) == (None, 5)
    np.testing.assert_array_equal(eval_mask(mask, [inp], [x]), expected)
    # The mask Keras recorded for the layer's output is the same.
    np.testing.assert_array_equal(eval_mask(output_mask(masking), [inp], [x]), expected)
    # Masked time steps are zeroed in the output.
    np.testing.assert_array_equal(Model(inp, out).predict(x), x * expected[..., None])


def test_embedding_mask_zero_computes_the_mask():
    tokens = np.array([[3, 1, 0, 0], [2, 0, 5, 0]], 'int32')
    inp = L.Input(shape=(4,), dtype='int32')
    masked, plain = L.Embedding(6, 2, mask_zero=True), L.Embedding(6, 2)
    masked(inp), plain(inp)
    mask = masked.compute_mask(inp)
    assert mask is not None
    np.testing.assert_array_equal(eval_mask(mask, [inp], [tokens]), tokens != 0)
    np.testing.assert_array_equal(eval_mask(output_mask(masked), [inp], [tokens]),
                                  tokens != 0)
    assert plain.compute_mask(inp) is None
    assert output_mask(plain) is None


# Layers that keep the time axis and support masking pass the mask through unchanged.
PASS_THROUGH = [
    ('Activation', lambda: L.Activation('relu')),
    ('Dense', lambda: L.Dense(2)),
    ('Dropout', lambda: L.Dropout(0.3)),
    ('SpatialDropout1D', lambda: L.SpatialDropout1D(0.3)),
    ('GaussianNoise', lambda: L.GaussianNoise(0.1)),
    ('GaussianDropout', lambda: L.GaussianDropout(0.1)),
    ('AlphaDropout', lambda: L.AlphaDropout(0.1)),
    ('BatchNormalization', lambda: L.BatchNormalization()),
    ('LeakyReLU', lambda: L.LeakyReLU()),
    ('PReLU', lambda: L.PReLU()),
    ('ELU', lambda: L.ELU()),
    ('ThresholdedReLU', lambda: L.ThresholdedReLU()),
    ('Softmax', lambda: L.Softmax()),
    ('ReLU', lambda: L.ReLU()),
    ('ActivityRegularization', lambda: L.ActivityRegularization(l1=0.1)),
    ('TimeDistributed-Dense', lambda: L.TimeDistributed(L.Dense(2))),
    ('LSTM-return_sequences', lambda: L.LSTM(2, return_sequences=True)),
    ('Bidirectional-return_sequences',
     lambda: L.Bidirectional(L.GRU(2, return_sequences=True))),
]


@pytest.mark.parametrize('make', [param(m, n) for n, m in PASS_THROUGH])
def test_mask_passes_through(make):
    x, expected = padded_sequences()
    inp = L.Input(shape=x.shape[1:])
    masked = L.Masking(0.)(inp)
    layer = make()
    out = layer(masked)
    mask = output_mask(layer)
    assert mask is not None
    np.testing.assert_array_equal(eval_mask(mask, [inp], [x]), expected)
    # ...and the model downstream of the mask runs.
    assert Model(inp, out).predict(x).shape[:2] == x.shape[:2]


def test_mask_is_consumed_by_rnn_and_pooling():
    x, expected = padded_sequences()
    inp = L.Input(shape=x.shape[1:])
    masked = L.Masking(0.)(inp)
    lstm = L.LSTM(2)
    pool = L.GlobalAveragePooling1D()
    lstm(masked), pool(masked)
    assert output_mask(lstm) is None
    assert output_mask(pool) is None
    # The masked average ignores padded steps.
    mean = Model(inp, pool.output).predict(x)
    want = (x * expected[..., None]).sum(1) / expected.sum(1, keepdims=True)
    np.testing.assert_allclose(mean, want, rtol=1e-5, atol=1e-6)


def test_time_distributed_masking_computes_a_mask_per_step():
    """TimeDistributed(Masking) on (batch, time, steps, features): the inner Masking's mask per
    outer time step, shaped (batch, time, steps)."""
    rng = np.random.RandomState(0)
    x = rng.normal(size=(2, 3, 4, 2)).astype('float32')
    x[0, 1, 2:] = 0.
    x[1, 2, :1] = 0.
    inp = L.Input(shape=(3, 4, 2))
    td = L.TimeDistributed(L.Masking(0.))
    td(inp)
    mask = output_mask(td)
    assert mask is not None
    np.testing.assert_array_equal(eval_mask(mask, [inp], [x]), np.any(x != 0., axis=-1))


def test_merge_masks_follow_keras():
    xa, mask_a = padded_sequences(seed=0)
    xb = np.random.RandomState(5).normal(size=xa.shape).astype('float32')
    xb[0, 2:] = 0.
    xb[3, :1] = 0.
    mask_b = np.any(xb != 0., axis=-1)
    a, b = L.Input(shape=xa.shape[1:]), L.Input(shape=xb.shape[1:])
    ma, mb = L.Masking(0.)(a), L.Masking(0.)(b)
    feeds = [xa, xb]

    # Element-wise merges of two masked inputs: the mask is their AND.
    for cls in (L.Add, L.Subtract, L.Multiply, L.Average, L.Maximum, L.Minimum):
        layer = cls()
        layer([ma, mb])
        np.testing.assert_array_equal(eval_mask(output_mask(layer), [a, b], feeds),
                                      mask_a & mask_b, err_msg=cls.__name__)
    # ...of one masked and one unmasked input: the masked one's mask.
    add = L.Add()
    add([ma, b])
    np.testing.assert_array_equal(eval_mask(output_mask(add), [a, b], feeds), mask_a)
    # ...of two unmasked inputs: no mask.
    add = L.Add()
    add([a, b])
    assert output_mask(add) is None

    # Concatenate on the feature axis: AND of the masks; an unmasked input counts as all-ones.
    cat = L.Concatenate()
    cat([ma, mb])
    np.testing.assert_array_equal(eval_mask(output_mask(cat), [a, b], feeds), mask_a & mask_b)
    cat = L.Concatenate()
    cat([ma, b])
    np.testing.assert_array_equal(eval_mask(output_mask(cat), [a, b], feeds), mask_a)
    # Concatenate on the time axis: the masks are concatenated.
    cat = L.Concatenate(axis=1)
    cat([ma, mb])
    np.testing.assert_array_equal(eval_mask(output_mask(cat), [a, b], feeds),
                                  np.concatenate([mask_a, mask_b], axis=1))
    # Dot drops the mask.
    dot = L.Dot(axes=2)
    dot([ma, mb])
    assert output_mask(dot) is None


def test_masked_model_trains_with_merge_and_time_distributed():
    """Embedding(mask_zero) -> TimeDistributed(Dense) and a second masked branch -> Add ->
    LSTM: trains, and the padded steps of the input do not change the prediction."""
    rng = np.random.RandomState(0)
    tokens = rng.randint(1, 8, size=(32, 6)).astype('int32')
    tokens[::2, 4:] = 0
    y = (tokens[:, 0] > 4).astype('float32')[:, None]
    inp = L.Input(shape=(6,), dtype='int32')
    emb = L.Embedding(8, 4, mask_zero=True)(inp)
    branch_a = L.TimeDistributed(L.Dense(4))(emb)
    branch_b = L.Dense(4)(emb)
    merged = L.Add()([branch_a, branch_b])
    out = L.Dense(1, activation='sigmoid')(L.LSTM(3)(merged))
    model = Model(inp, out)
    model.compile(keras.optimizers.Adam(lr=0.02), 'binary_crossentropy')
    first = model.train_on_batch(tokens, y)
    for _ in range(15):
        last = model.train_on_batch(tokens, y)
    assert last < first
    # Changing the embedding of token 0 (the padding) does not change predictions.
    before = model.predict(tokens)
    emb_layer = model.layers[1]
    table = emb_layer.get_weights()[0]
    table[0] += 10.
    emb_layer.set_weights([table])
    np.testing.assert_allclose(model.predict(tokens), before, rtol=1e-5, atol=1e-6)
