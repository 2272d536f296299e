"""Backend-heavy Keras 2 programs on torchk, in small versions on synthetic data.

The well-known patterns people wrote against `keras.backend` (issue 6): gradients with respect
to the *input* driving an input-optimization loop (deep dream / filter visualization), a VAE
with a sampling `Lambda` and an `add_loss` KL term, a GAN whose discriminator is frozen in the
combined model by toggling `trainable` between compiles, a siamese network with a distance
`Lambda` and contrastive loss, `fit_generator`/`predict_generator` on a `keras.utils.Sequence`
with worker threads, a training loop built only from `K.function` and
`optimizer.get_updates`, and `Lambda` layers without `output_shape`.

Every test states its assertions (accuracy, loss ratio, equality) in the code.
"""
import threading
import warnings

import numpy as np
import pytest
import torch

import keras
from keras import backend as K
from keras.layers import Conv2D, Dense, Flatten, Input, Lambda
from keras.models import Model, Sequential
from keras.utils import Sequence

from .conftest import KERAS_2_2, blobs, linear_data, linear_model, mlp, np_mse_grads, one_hot


# ------------------------------------------------------------------------------------------
# Gradients with respect to the input placeholder.

def normalize(grads):
    """The deep-dream / filter-visualization normalization of Keras' examples."""
    return grads / (K.sqrt(K.mean(K.square(grads))) + 1e-5)


def test_filter_visualization_gradient_ascent_on_the_input():
    model = Sequential([
        Conv2D(6, 3, activation='relu', input_shape=(10, 10, 1)),
        Conv2D(4, 3, activation='relu'),
        Flatten(),
        Dense(2),
    ])
    img = (0.5 + 0.1 * np.random.RandomState(0).normal(size=(1, 10, 10, 1))).astype('float32')
    layer = model.layers[1]
    # Visualize the filter that responds most to the starting image (relu filters can be
    # dead on it).
    f = int(K.function([model.input], [layer.output])([img])[0].mean(axis=(0, 1, 2)).argmax())
    loss = K.mean(layer.output[..., f])
    grads = K.gradients(loss, model.input)[0]
    assert K.int_shape(grads) == (None, 10, 10, 1)
    grads /= (K.sqrt(K.mean(K.square(grads))) + 1e-5)  # records an op; mutates nothing
    iterate = K.function([model.input], [loss, grads])
    weights = model.get_weights()

    losses = []
    for _ in range(20):
        loss_value, grads_value = iterate([img])
        assert grads_value.shape == img.shape
        # Normalized gradients have RMS 1 (up to the 1e-5 in the denominator).
        assert np.sqrt(np.mean(grads_value ** 2)) == pytest.approx(1., rel=1e-2)
        losses.append(float(loss_value))
        img = img + 0.1 * grads_value
    losses.append(float(iterate([img])[0]))
    assert losses[0] > 0.
    assert losses[-1] > 3. * losses[0]
    # Monotonic-ish: the loss rises in at least 90% of the steps.
    assert np.mean(np.diff(losses) > 0) >= 0.9
    # Only the input moved: the weights were not touched.
    for before, after in zip(weights, model.get_weights()):
        np.testing.assert_array_equal(before, after)


def test_input_gradients_equal_torch_autograd():
    model = Sequential([Dense(6, activation='tanh', input_shape=(4,)), Dense(3)])
    f = 1
    loss = K.mean(model.layers[-1].output[..., f] ** 2)
    grads = K.gradients(loss, model.input)[0]
    iterate = K.function([model.input], [loss, grads, normalize(grads)])
    x = np.random.RandomState(0).normal(size=(5, 4)).astype('float32')
    loss_value, grads_value, normalized = iterate([x])

    w1, b1, w2, b2 = [torch.tensor(w, dtype=torch.float64) for w in model.get_weights()]
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    out = torch.tanh(xt @ w1 + b1) @ w2 + b2
    torch_loss = (out[..., f] ** 2).mean()
    torch_loss.backward()
    want = xt.grad.numpy()
    assert float(loss_value) == pytest.approx(torch_loss.item(), rel=1e-5)
    np.testing.assert_allclose(grads_value, want, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(normalized, want / (np.sqrt(np.mean(want ** 2)) + 1e-5),
                               rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------------------------------
# VAE: sampling Lambda with K.random_normal, KL term through add_loss, compile(loss=None).

def vae_data(samples=512, dim=16, seed=0):
    """Points of a 2-d latent space pushed through a fixed random map and a sigmoid (values
    in (0, 1), mostly near 0 or 1)."""
    rng = np.random.RandomState(seed)
    z = rng.normal(size=(samples, 2))
    w = np.random.RandomState(42).normal(size=(2, dim)) * 4.
    return (1. / (1. + np.exp(-z.dot(w)))).astype('float32')


def test_vae_trains_with_add_loss_and_samples_anew_each_call():
    original_dim, latent_dim = 16, 2
    x = Input(shape=(original_dim,))
    h = Dense(16, activation='relu')(x)
    z_mean = Dense(latent_dim)(h)
    z_log_var = Dense(latent_dim)(h)

    def sampling(args):
        z_mean, z_log_var = args
        epsilon = K.random_normal(shape=(K.shape(z_mean)[0], latent_dim), mean=0., stddev=1.)
        return z_mean + K.exp(0.5 * z_log_var) * epsilon

    z = Lambda(sampling, output_shape=(latent_dim,))([z_mean, z_log_var])
    assert K.int_shape(z) == (None, latent_dim)
    decoder_h = Dense(16, activation='relu')
    decoder_out = Dense(original_dim, activation='sigmoid')
    x_decoded = decoder_out(decoder_h(z))
    vae = Model(x, x_decoded)

    reconstruction = original_dim * keras.losses.binary_crossentropy(x, x_decoded)
    kl = -0.5 * K.sum(1. + z_log_var - K.square(z_mean) - K.exp(z_log_var), axis=-1)
    vae.add_loss(K.mean(reconstruction + kl))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # "Output ... missing from loss dictionary"
        vae.compile(optimizer=keras.optimizers.Adam(lr=0.01), loss=None)

    data = vae_data()
    initial = vae.evaluate(data, None, batch_size=512, verbose=0)
    history = vae.fit(data, None, epochs=15, batch_size=64, shuffle=True, verbose=0)
    losses = history.history['loss']
    assert all(np.isfinite(losses))
    assert losses[-1] < losses[0]
    assert vae.evaluate(data, None, batch_size=512, verbose=0) < 0.75 * initial

    # evaluate gives the add_loss value too (a fresh sample, so only close to the last epoch).
    held_out = vae_data(seed=1)
    assert vae.evaluate(held_out, None, batch_size=128, verbose=0) == pytest.approx(
        losses[-1], rel=0.15)

    # The sampling draws anew on every call; z_mean is deterministic.
    encoder = Model(x, [z_mean, z_log_var, z])
    mean_1, log_var_1, z_1 = encoder.predict(held_out)
    mean_2, _, z_2 = encoder.predict(held_out)
    np.testing.assert_array_equal(mean_1, mean_2)
    assert not np.allclose(z_1, z_2)
    # ...from N(z_mean, exp(z_log_var)): the standardized draws are ~ N(0, 1).
    eps = np.concatenate([(z_1 - mean_1) / np.exp(0.5 * log_var_1),
                          (z_2 - mean_1) / np.exp(0.5 * log_var_1)])
    assert abs(eps.mean()) < 0.1
    assert abs(eps.std() - 1.) < 0.1

    # The decoder alone generates from the prior.
    z_in = Input(shape=(latent_dim,))
    generator = Model(z_in, decoder_out(decoder_h(z_in)))
    generated = generator.predict(np.random.RandomState(2).normal(size=(8, latent_dim)))
    assert generated.shape == (8, original_dim)
    assert np.all((generated >= 0.) & (generated <= 1.))


# ------------------------------------------------------------------------------------------
# GAN: discriminator frozen inside the combined model by toggling `trainable`.

def test_gan_trainable_toggle_between_compiles():
    latent, dim = 4, 2
    generator = Sequential([Dense(16, activation='relu', input_shape=(latent,)), Dense(dim)],
                           name='generator')
    discriminator = Sequential([Dense(16, activation='relu', input_shape=(dim,)),
                                Dense(1, activation='sigmoid')], name='discriminator')
    # The Keras 2 pattern: compile the discriminator while trainable, then freeze it and
    # compile the combined model.
    discriminator.trainable = True
    discriminator.compile(keras.optimizers.Adam(lr=0.005), 'binary_crossentropy')
    discriminator.trainable = False
    z = Input(shape=(latent,))
    combined = Model(z, discriminator(generator(z)))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # Keras warns about the trainable discrepancy
        combined.compile(keras.optimizers.Adam(lr=0.005), 'binary_crossentropy')
    # The combined model shares the layers and trains only the generator's weights.
    assert combined.layers[1] is generator and combined.layers[2] is discriminator
    assert len(combined._collected_trainable_weights) == len(generator.trainable_weights)

    rng = np.random.RandomState(0)
    real_center = np.array([2., -1.], 'float32')

    def real(n):
        return (real_center + 0.3 * rng.normal(size=(n, dim))).astype('float32')

    def noise(n):
        return rng.normal(size=(n, latent)).astype('float32')

    batch = 32
    probe = noise(256)
    start_distance = np.linalg.norm(generator.predict(probe).mean(0) - real_center)
    distances, fooled_more = [], []
    for step in range(150):
        fake = generator.predict(noise(batch))
        # Discriminator step: its own weights change, the generator's do not.
        d_before, g_before = discriminator.get_weights(), generator.get_weights()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            discriminator.train_on_batch(np.concatenate([real(batch), fake]),
                                         np.concatenate([np.ones((batch, 1)),
                                                         np.zeros((batch, 1))]))
        d_after, g_after = discriminator.get_weights(), generator.get_weights()
        assert all(np.any(a != b) for a, b in zip(d_before, d_after))
        assert all(np.array_equal(a, b) for a, b in zip(g_before, g_after))
        # Combined step: the generator's weights change, the discriminator's do not, and the
        # frozen discriminator rates the generator's samples as more real than before.
        z_batch = noise(batch)
        fooled_before = discriminator.predict(generator.predict(z_batch)).mean()
        d_before, g_before = d_after, g_after
        combined.train_on_batch(z_batch, np.ones((batch, 1)))
        d_after, g_after = discriminator.get_weights(), generator.get_weights()
        assert all(np.array_equal(a, b) for a, b in zip(d_before, d_after))
        assert all(np.any(a != b) for a, b in zip(g_before, g_after))
        fooled_more.append(discriminator.predict(generator.predict(z_batch)).mean() >
                           fooled_before)
        if step % 10 == 9:
            distances.append(np.linalg.norm(generator.predict(probe).mean(0) - real_center))
    assert np.mean(fooled_more) >= 0.9
    # GAN training oscillates; the generator's samples do reach the real data on the way
    # (the mean of its samples comes within half the starting distance of the real mean).
    assert min(distances) < 0.5 * start_distance

    # Toggling back and recompiling makes the discriminator trainable in a combined model.
    discriminator.trainable = True
    combined.compile(keras.optimizers.Adam(lr=0.005), 'binary_crossentropy')
    d_before = discriminator.get_weights()
    combined.train_on_batch(noise(batch), np.ones((batch, 1)))
    assert all(np.any(a != b) for a, b in zip(d_before, discriminator.get_weights()))


# ------------------------------------------------------------------------------------------
# Siamese network: shared base, distance Lambda with output_shape, contrastive loss.

def euclidean_distance(vects):
    x, y = vects
    sum_square = K.sum(K.square(x - y), axis=1, keepdims=True)
    return K.sqrt(K.maximum(sum_square, K.epsilon()))


def eucl_dist_output_shape(shapes):
    shape1, shape2 = shapes
    return (shape1[0], 1)


def contrastive_loss(y_true, y_pred):
    """Hadsell et al. 2006, as in Keras' mnist_siamese example: 1 = same class."""
    margin = 1
    square_pred = K.square(y_pred)
    margin_square = K.square(K.maximum(margin - y_pred, 0))
    return K.mean(y_true * square_pred + (1 - y_true) * margin_square)


def make_pairs(x, labels, seed):
    """Alternating positive and negative pairs, one of each per sample."""
    rng = np.random.RandomState(seed)
    by_class = [np.flatnonzero(labels == c) for c in range(labels.max() + 1)]
    left, right, same = [], [], []
    for i, c in enumerate(labels):
        left.append(x[i]), right.append(x[rng.choice(by_class[c])]), same.append(1.)
        other = rng.choice([k for k in range(len(by_class)) if k != c])
        left.append(x[i]), right.append(x[rng.choice(by_class[other])]), same.append(0.)
    return np.array(left), np.array(right), np.array(same, 'float32')


def test_siamese_network_with_contrastive_loss():
    features = 8
    x_train, y_train = blobs(samples=300, features=features, classes=4, seed=0)
    x_test, y_test = blobs(samples=200, features=features, classes=4, seed=1)
    tr_a, tr_b, tr_y = make_pairs(x_train, y_train, seed=0)
    te_a, te_b, te_y = make_pairs(x_test, y_test, seed=1)

    base = Sequential([Dense(16, activation='relu', input_shape=(features,)), Dense(8)])
    a, b = Input(shape=(features,)), Input(shape=(features,))
    distance = Lambda(euclidean_distance, output_shape=eucl_dist_output_shape)(
        [base(a), base(b)])
    assert K.int_shape(distance) == (None, 1)
    model = Model([a, b], distance)
    # The two branches share the base's weights.
    assert len(model.trainable_weights) == len(base.trainable_weights) == 4

    def accuracy(y_true, y_pred):
        return K.mean(K.equal(y_true, K.cast(y_pred < 0.5, y_true.dtype)))

    model.compile(loss=contrastive_loss, optimizer=keras.optimizers.RMSprop(lr=0.005),
                  metrics=[accuracy])
    history = model.fit([tr_a, tr_b], tr_y, batch_size=64, epochs=10, verbose=0)
    assert history.history['loss'][-1] < 0.2 * history.history['loss'][0]

    pred = model.predict([te_a, te_b]).ravel()
    test_accuracy = np.mean((pred < 0.5) == (te_y == 1.))
    assert test_accuracy >= 0.9
    # The metric agrees with the numpy accuracy.
    _, metric = model.evaluate([te_a, te_b], te_y, batch_size=len(te_y), verbose=0)
    assert metric == pytest.approx(test_accuracy, abs=1e-6)
    # The distance is symmetric.
    np.testing.assert_allclose(model.predict([te_b, te_a]).ravel(), pred, rtol=1e-5)


# ------------------------------------------------------------------------------------------
# fit_generator / predict_generator on a Sequence with worker threads.

class ArraySequence(Sequence):
    """Batches of arrays, recording which threads served them."""

    def __init__(self, x, y=None, batch_size=16):
        self.x, self.y, self.batch_size = x, y, batch_size
        self.threads = set()
        self.epochs_ended = 0

    def __len__(self):
        return int(np.ceil(len(self.x) / float(self.batch_size)))

    def __getitem__(self, idx):
        self.threads.add(threading.current_thread().name)
        window = slice(idx * self.batch_size, (idx + 1) * self.batch_size)
        if self.y is None:
            return self.x[window]
        return self.x[window], self.y[window]

    def on_epoch_end(self):
        self.epochs_ended += 1


def test_fit_and_predict_generator_with_thread_workers():
    x, labels = blobs(samples=200, features=8, classes=3, seed=0)
    y = one_hot(labels, 3)

    torch.manual_seed(7)
    model = mlp()
    model.compile(keras.optimizers.SGD(lr=0.05), 'categorical_crossentropy')
    initial = model.get_weights()
    twin = mlp()
    twin.set_weights(initial)
    twin.compile(keras.optimizers.SGD(lr=0.05), 'categorical_crossentropy')

    train_seq = ArraySequence(x, y, batch_size=16)
    history = model.fit_generator(train_seq, epochs=3, workers=2, use_multiprocessing=False,
                                  shuffle=False, verbose=0)
    assert history.history['loss'][-1] < history.history['loss'][0]
    # 2.2.x calls the last epoch's on_epoch_end from the enqueuer's thread, racing with the
    # stop of fit_generator (2.2.5 data_utils.py:586); 2.3.0 waits for it.
    assert train_seq.epochs_ended >= (2 if KERAS_2_2 else 3)
    assert any(name != threading.current_thread().name for name in train_seq.threads)

    # The same batches in the same order through fit: the same weights.
    twin.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    for got, want in zip(model.get_weights(), twin.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

    # predict_generator (ordered, threads) equals predict on the same data.
    predict_seq = ArraySequence(x, batch_size=16)
    predicted = model.predict_generator(predict_seq, workers=2, use_multiprocessing=False)
    np.testing.assert_allclose(predicted, model.predict(x, batch_size=16), rtol=1e-6,
                               atol=1e-7)
    # evaluate_generator equals evaluate.
    # evaluate_generator: the metric equals evaluate's; the loss is, in Keras 2.3.1
    # (training_generator.py: `averages = [float(outs_per_batch[-1][0])]`), the last batch's.
    model.compile(keras.optimizers.SGD(lr=0.05), 'categorical_crossentropy',
                  metrics=['accuracy'])
    evaluated = model.evaluate_generator(ArraySequence(x, y, batch_size=20), workers=2,
                                         use_multiprocessing=False)
    loss, accuracy = model.evaluate(x, y, batch_size=20, verbose=0)
    assert evaluated[1] == pytest.approx(accuracy, rel=1e-6)
    if hasattr(model, 'reset_metrics'):  # Keras >= 2.3
        model.reset_metrics()
        last_batch_loss, _ = model.test_on_batch(x[180:], y[180:])
        assert evaluated[0] == pytest.approx(float(last_batch_loss), rel=1e-5)
    else:  # Keras 2.2 averages the batch losses
        assert evaluated[0] == pytest.approx(loss, rel=1e-5)
    assert accuracy == pytest.approx(np.mean(predicted.argmax(1) == labels), abs=1e-6)


# ------------------------------------------------------------------------------------------
# A training loop built only from K.function and optimizer.get_updates.

def test_custom_training_loop_from_get_updates():
    x, labels = blobs(samples=256, features=8, classes=3, seed=0)
    y = one_hot(labels, 3)
    model = mlp()
    inp = model.input
    target = K.placeholder(shape=(None, 3))
    loss = K.mean(K.categorical_crossentropy(target, model.output))
    opt = keras.optimizers.Adam(lr=0.01)
    updates = opt.get_updates(loss=loss, params=model.trainable_weights)
    train = K.function([inp, target], [loss], updates)
    evaluate = K.function([inp, target], [loss])

    initial = float(evaluate([x, y])[0])
    for epoch in range(10):
        for start in range(0, len(x), 32):
            train([x[start:start + 32], y[start:start + 32]])
    final = float(evaluate([x, y])[0])
    assert final < 0.05 * initial
    assert int(K.get_value(opt.iterations)) == 80
    accuracy = np.mean(model.predict(x).argmax(1) == labels)
    assert accuracy >= 0.95


def test_get_updates_step_equals_the_sgd_formula():
    kernel = np.random.RandomState(0).normal(size=(4, 2)).astype('float32')
    bias = np.array([0.5, -0.5], 'float32')
    model = linear_model(4, 2, kernel, bias)
    x, y = linear_data(samples=32)
    target = K.placeholder(shape=(None, 2))
    loss = K.mean(K.square(model.output - target))
    lr = 0.1
    opt = keras.optimizers.SGD(lr=lr)
    train = K.function([model.input, target], [loss],
                       opt.get_updates(loss=loss, params=model.trainable_weights))
    loss_value = train([x, y])[0]
    # The loss is computed before the update...
    assert float(loss_value) == pytest.approx(np.mean((x.dot(kernel) + bias - y) ** 2),
                                              rel=1e-5)
    # ...and the update is one SGD step.
    grad_kernel, grad_bias = np_mse_grads(kernel, bias, x, y)
    new_kernel, new_bias = model.get_weights()
    np.testing.assert_allclose(new_kernel, kernel - lr * grad_kernel, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new_bias, bias - lr * grad_bias, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------
# Lambda without output_shape: the inferred static shape wins.

def test_lambda_without_output_shape_builds_the_next_layer_from_the_inferred_shape():
    x, y = linear_data(samples=128, in_dim=6, out_dim=3, noise=0.)
    inp = Input(shape=(6,))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # Keras warns that it cannot infer the shape
        squared = Lambda(lambda t: K.concatenate([t, K.square(t)], axis=-1))(inp)
        first_two = Lambda(lambda t: t[:, :2])(inp)
        seq = Lambda(lambda t: K.reshape(t, (-1, 3, 2)))(inp)
        pooled = Lambda(lambda t: K.sum(t, axis=1))(seq)
    assert K.int_shape(squared) == (None, 12)
    assert K.int_shape(first_two) == (None, 2)
    assert K.int_shape(seq) == (None, 3, 2)
    assert K.int_shape(pooled) == (None, 2)

    wide, narrow, tail = Dense(3), Dense(3), Dense(3)
    out = keras.layers.add([wide(squared), narrow(first_two), tail(pooled)])
    assert K.int_shape(wide.kernel) == (12, 3)
    assert K.int_shape(narrow.kernel) == (2, 3)
    assert K.int_shape(tail.kernel) == (2, 3)
    model = Model(inp, out)
    assert model.output_shape == (None, 3)
    model.compile(keras.optimizers.Adam(lr=0.02), 'mse')
    history = model.fit(x, y, batch_size=32, epochs=30, verbose=0)
    assert history.history['loss'][-1] < 0.1 * history.history['loss'][0]
    assert model.predict(x).shape == (128, 3)


def test_lambda_without_output_shape_in_a_sequential_model():
    model = Sequential()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        model.add(Lambda(lambda t: t[:, ::2] * 2., input_shape=(8,)))
    model.add(Dense(1))
    assert K.int_shape(model.layers[1].kernel) == (4, 1)
    assert model.output_shape == (None, 1)
    model.compile('sgd', 'mse')
    x = np.random.RandomState(0).normal(size=(16, 8)).astype('float32')
    loss = model.train_on_batch(x, np.zeros((16, 1), 'float32'))
    assert np.isfinite(loss)


def test_lambda_without_output_shape_reports_the_inferred_shape_like_tf():
    inp = Input(shape=(6,))
    lam = Lambda(lambda t: K.concatenate([t, t], axis=-1))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        lam(inp)
    assert lam.output_shape == (None, 12)
    assert lam.compute_output_shape((None, 6)) == (None, 12)
