"""torchk.tf, the `tf` subset tf.keras 2 scripts use, against TensorFlow itself.

Each case calls the same `tf.*` path on `torchk.tf` and on `tensorflow` with the same numpy
inputs; `oracle.compare` checks acceptance, shapes, dtypes and values, eagerly and, where a
case says so, through `K.function` on placeholders (a tf op in a Keras 2.3.1 model or loss).
"""
import importlib
import importlib.util

import numpy as np
import pytest

pytest.importorskip('tf_keras', reason='the TF oracle needs tensorflow-cpu and tf_keras '
                    "(pip install -e '.[oracle]')")

import tensorflow  # noqa: E402

import torchk.tf  # noqa: E402
from oracle import compare  # noqa: E402

RNG = np.random.RandomState(7)
X = RNG.uniform(-3, 3, (4, 5)).astype('float32')
Y = RNG.uniform(-3, 3, (4, 5)).astype('float32')
P = RNG.uniform(0.1, 4, (4, 5)).astype('float32')
W = RNG.uniform(-1, 1, (5, 3)).astype('float32')
B3 = RNG.uniform(-1, 1, (2, 4, 5)).astype('float32')
LABELS = np.array([2, 0, 1, 2])
ONEHOT = np.eye(5, dtype='float32')[[1, 4, 0, 2]]
BINARY = (Y > 0).astype('float32')
INTS = RNG.randint(-5, 5, (4, 5)).astype('int32')
MASK = X[:, 0] > 0
IMAGES = RNG.uniform(0, 1, (2, 4, 5, 3)).astype('float32')
PIXELS = RNG.randint(0, 256, (2, 3, 3)).astype('uint8')
SQUARE = (RNG.uniform(-1, 1, (2, 4, 4)) + 4 * np.eye(4)).astype('float32')

# id: (function of the tf module returning the op to compare, inputs, also through K.function)
CASES = {
    'reduce_mean': (lambda tf: lambda x: tf.reduce_mean(x, axis=1), [X], True),
    'reduce_mean_int': (lambda tf: lambda x: tf.reduce_mean(x, axis=0), [INTS], False),
    'reduce_sum_keepdims': (lambda tf: lambda x: tf.reduce_sum(x, 0, keepdims=True), [X], True),
    'reduce_max': (lambda tf: lambda x: tf.reduce_max(x, axis=[0, 1]), [X], True),
    'reduce_min': (lambda tf: lambda x: tf.reduce_min(x, axis=-1), [INTS], True),
    'reduce_prod': (lambda tf: lambda x: tf.reduce_prod(x, axis=1), [P], True),
    'reduce_any': (lambda tf: lambda x: tf.reduce_any(x > 2, axis=1), [X], True),
    'reduce_all': (lambda tf: lambda x: tf.reduce_all(x > -2.5), [X], True),
    'reduce_logsumexp': (lambda tf: lambda x: tf.math.reduce_logsumexp(x, 1), [X], True),
    'reduce_std': (lambda tf: lambda x: tf.math.reduce_std(x, 0), [X], True),
    'reduce_variance': (lambda tf: lambda x: tf.math.reduce_variance(x), [X], True),
    'exp': (lambda tf: tf.exp, [X], True),
    'math_log': (lambda tf: tf.math.log, [P], True),
    'log1p': (lambda tf: tf.math.log1p, [P], True),
    'sqrt': (lambda tf: tf.sqrt, [P], True),
    'square_int': (lambda tf: tf.square, [INTS], True),
    'abs': (lambda tf: tf.abs, [INTS], True),
    'pow': (lambda tf: lambda x: tf.pow(x, 1.5), [P], True),
    'maximum': (lambda tf: tf.maximum, [X, Y], True),
    'minimum_scalar': (lambda tf: lambda x: tf.minimum(x, 0.5), [X], True),
    'equal': (lambda tf: tf.equal, [INTS, INTS.T.copy().reshape(4, 5)], True),
    'not_equal': (lambda tf: lambda x: tf.not_equal(x, 0), [INTS], True),
    'greater': (lambda tf: tf.greater, [X, Y], True),
    'less': (lambda tf: tf.math.less, [X, Y], True),
    'divide_no_nan': (lambda tf: tf.math.divide_no_nan, [X, np.where(Y > 0, Y, 0)], True),
    'softplus': (lambda tf: tf.math.softplus, [X], True),
    'is_nan': (lambda tf: tf.math.is_nan, [np.log(X)], False),
    'is_finite': (lambda tf: tf.math.is_finite, [np.log(X)], False),
    'sigmoid': (lambda tf: tf.sigmoid, [X], True),
    'tanh': (lambda tf: tf.tanh, [X], True),
    'cast': (lambda tf: lambda x: tf.cast(x, tf.int32), [X], True),
    'cast_bool': (lambda tf: lambda x: tf.cast(x, tf.bool), [INTS], True),
    'concat': (lambda tf: lambda x, y: tf.concat([x, y], axis=-1), [X, Y], True),
    'stack': (lambda tf: lambda x, y: tf.stack([x, y], axis=1), [X, Y], True),
    'reshape': (lambda tf: lambda x: tf.reshape(x, [-1, 2]), [X], False),
    'expand_dims': (lambda tf: lambda x: tf.expand_dims(x, 1), [X], True),
    'squeeze': (lambda tf: lambda x: tf.squeeze(x[:, :1]), [X], False),
    'newaxis': (lambda tf: lambda x: x[:, tf.newaxis, 1:3], [X], True),
    'shape': (lambda tf: tf.shape, [B3], False),
    'size': (lambda tf: tf.size, [B3], False),
    'rank': (lambda tf: tf.rank, [B3], False),
    'where': (lambda tf: lambda x, y: tf.where(x > y, x, y), [X, Y], True),
    'gather': (lambda tf: lambda x: tf.gather(x, [3, 0, 0]), [X], True),
    'gather_axis': (lambda tf: lambda x: tf.gather(x, [4, 1], axis=1), [X], True),
    'one_hot': (lambda tf: lambda i: tf.one_hot(i, 3), [LABELS], False),
    'argmax': (lambda tf: lambda x: tf.argmax(x, axis=1), [X], True),
    'argmin': (lambda tf: lambda x: tf.math.argmin(x, axis=0), [X], True),
    'clip_by_value': (lambda tf: lambda x: tf.clip_by_value(x, -1., 2.), [X], True),
    'tensordot': (lambda tf: lambda x, w: tf.tensordot(x, w, axes=1), [X, W], True),
    'tensordot_pairs': (lambda tf: lambda x, y: tf.tensordot(x, y, axes=[[0], [0]]), [X, Y],
                        False),
    'matmul': (lambda tf: tf.matmul, [X, W], True),
    'matmul_transpose_b': (lambda tf: lambda x, y: tf.matmul(x, y, transpose_b=True), [X, Y],
                           True),
    'transpose': (lambda tf: tf.transpose, [B3], True),
    'transpose_perm': (lambda tf: lambda x: tf.transpose(x, perm=[1, 0, 2]), [B3], True),
    'ones_like': (lambda tf: tf.ones_like, [INTS], True),
    'zeros_like': (lambda tf: tf.zeros_like, [X], True),
    'ones': (lambda tf: lambda: tf.ones((2, 3)), [], False),
    'zeros_int': (lambda tf: lambda: tf.zeros([3], dtype=tf.int32), [], False),
    'fill': (lambda tf: lambda: tf.fill([2, 3], 1.5), [], False),
    'range': (lambda tf: lambda: tf.range(2, 11, 3), [], False),
    'range_float': (lambda tf: lambda: tf.range(0., 1., 0.125), [], False),
    'constant_list': (lambda tf: lambda: tf.constant([[1, 2], [3, 4]]), [], False),
    'constant_shape': (lambda tf: lambda: tf.constant(2., shape=[2, 2]), [], False),
    'tile': (lambda tf: lambda x: tf.tile(x, [2, 3]), [X], True),
    'pad': (lambda tf: lambda x: tf.pad(x, [[1, 2], [0, 1]]), [X], True),
    'split': (lambda tf: lambda x: tf.split(x, [2, 3], axis=1), [X], False),
    'unstack': (lambda tf: lambda x: tf.unstack(x, axis=1), [X], False),
    'boolean_mask': (lambda tf: tf.boolean_mask, [X, MASK], False),
    'relu': (lambda tf: tf.nn.relu, [X], True),
    'relu6': (lambda tf: lambda x: tf.nn.relu6(x * 3), [X], True),
    'softmax': (lambda tf: tf.nn.softmax, [X], True),
    'log_softmax': (lambda tf: lambda x: tf.nn.log_softmax(x, axis=0), [X], True),
    'nn_sigmoid': (lambda tf: tf.nn.sigmoid, [X], True),
    'nn_tanh': (lambda tf: tf.nn.tanh, [X], True),
    'gelu': (lambda tf: tf.nn.gelu, [X], True),
    'gelu_approximate': (lambda tf: lambda x: tf.nn.gelu(x, approximate=True), [X], True),
    'swish': (lambda tf: tf.nn.swish, [X], True),
    'silu': (lambda tf: tf.nn.silu, [X], True),
    'elu': (lambda tf: tf.nn.elu, [X], True),
    'leaky_relu': (lambda tf: lambda x: tf.nn.leaky_relu(x, alpha=0.3), [X], True),
    'sparse_softmax_ce': (lambda tf: lambda l, x: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=l, logits=x), [LABELS, X], False),
    'softmax_ce': (lambda tf: lambda l, x: tf.nn.softmax_cross_entropy_with_logits(
        labels=l, logits=x), [ONEHOT, X], True),
    'sigmoid_ce': (lambda tf: lambda l, x: tf.nn.sigmoid_cross_entropy_with_logits(
        labels=l, logits=x), [BINARY, X], True),
    'l2_normalize': (lambda tf: lambda x: tf.nn.l2_normalize(x, axis=1), [X], True),
    'moments': (lambda tf: lambda x: list(tf.nn.moments(x, axes=[0, 1])), [B3], False),
    'linalg_norm': (lambda tf: tf.linalg.norm, [X], True),
    'norm_axis': (lambda tf: lambda x: tf.norm(x, axis=1, keepdims=True), [X], True),
    'linalg_matmul': (lambda tf: tf.linalg.matmul, [X, W], True),
    'einsum': (lambda tf: lambda x, w: tf.einsum('ij,jk->ik', x, w), [X, W], False),
    'cumsum': (lambda tf: lambda x: tf.math.cumsum(x, axis=1), [X], True),
    'add_n': (lambda tf: lambda x, y: tf.add_n([x, y, x]), [X, Y], True),
    'sort': (lambda tf: lambda x: tf.sort(x, direction='DESCENDING'), [X], False),
    'argsort': (lambda tf: tf.argsort, [X], False),
    'sequence_mask': (lambda tf: lambda: tf.sequence_mask([1, 3, 0], 4), [], False),
    'top_k': (lambda tf: lambda x: list(tf.math.top_k(x, 2))[0], [X], True),
    'count_nonzero': (lambda tf: lambda x: tf.math.count_nonzero(x, axis=1), [INTS], False),
    'l2_loss': (lambda tf: tf.nn.l2_loss, [X], True),
    'embedding_lookup': (lambda tf: lambda w: tf.nn.embedding_lookup(w, [[0, 4], [2, 2]]), [W],
                         False),
    'confusion_matrix': (lambda tf: lambda: tf.math.confusion_matrix([0, 1, 2, 2, 1],
                                                                     [0, 2, 2, 1, 1]), [], False),
    'flip_left_right': (lambda tf: tf.image.flip_left_right, [IMAGES], False),
    'flip_up_down': (lambda tf: tf.image.flip_up_down, [IMAGES[0]], False),
    'convert_uint8_to_float': (lambda tf: lambda p: tf.image.convert_image_dtype(p, tf.float32),
                               [PIXELS], False),
    'convert_float_to_uint8': (lambda tf: lambda x: tf.image.convert_image_dtype(x, tf.uint8),
                               [IMAGES], False),
    'per_image_standardization': (lambda tf: tf.image.per_image_standardization, [IMAGES],
                                  False),
    'slice': (lambda tf: lambda x: tf.slice(x, [1, 2], [2, -1]), [X], True),
    'slice_3d': (lambda tf: lambda x: tf.slice(x, begin=[1, 0, 3], size=[1, 2, 2]), [B3],
                 False),
    'gather_nd': (lambda tf: lambda x: tf.gather_nd(x, [[0, 1], [3, 4], [0, 1]]), [X], True),
    'gather_nd_slices': (lambda tf: lambda x: tf.gather_nd(x, [[[1], [0]], [[1], [1]]]), [B3],
                         False),
    'gather_nd_ints': (lambda tf: lambda x: tf.gather_nd(x, [[1, 2, 0], [0, 3, 4]]),
                       [INTS.reshape(2, 2, 5)], False),
    'scatter_nd': (lambda tf: lambda u: tf.scatter_nd([[1], [3], [1]], u, [5, 5]),
                   [Y[:3].copy()], False),
    'scatter_nd_ints': (lambda tf: lambda: tf.scatter_nd(tf.constant([[0, 2], [1, 1]]),
                                                         tf.constant([4, 9]),
                                                         tf.constant([2, 3])), [], False),
    'tensor_scatter_nd_update': (lambda tf: lambda x: tf.tensor_scatter_nd_update(
        x, [[0, 1], [2, 3]], [1., -2.]), [X], True),
    'tensor_scatter_nd_add': (lambda tf: lambda x: tf.tensor_scatter_nd_add(
        x, [[0, 1], [2, 3], [0, 1]], [1., -2., 3.]), [X], False),
    'tensor_scatter_nd_sub_rows': (lambda tf: lambda x, u: tf.tensor_scatter_nd_sub(
        x, [[3], [1]], u), [X, Y[:2].copy()], False),
    'tensor_scatter_nd_min': (lambda tf: lambda x: tf.tensor_scatter_nd_min(
        x, [[0, 2], [1, 1], [2, 0]], [-6, -5, -4]), [INTS[:3, :3].copy()], False),
    'tensor_scatter_nd_max': (lambda tf: lambda x: tf.tensor_scatter_nd_max(
        x, [[0, 2], [1, 1], [2, 0]], [6, 5, 4]), [INTS[:3, :3].copy()], False),
    'meshgrid': (lambda tf: lambda x, y: tf.meshgrid(x, y), [X[0], Y[:, 1].copy()], False),
    'meshgrid_ij': (lambda tf: lambda x, y: tf.meshgrid(x, y, indexing='ij'),
                    [X[0], Y[:, 1].copy()], False),
    'svd_values': (lambda tf: lambda x: tf.linalg.svd(x, compute_uv=False), [B3], False),
    'svd_reconstructs': (lambda tf: lambda x: (lambda s, u, v: tf.matmul(
        u * s[..., None, :], v, adjoint_b=True))(*tf.linalg.svd(x)), [B3], False),
    'svd_vectors_up_to_sign': (lambda tf: lambda x: [tf.abs(t) for t in tf.linalg.svd(x)],
                               [X], False),
    'svd_full_matrices_shapes': (lambda tf: lambda x: [tf.shape(t) for t in tf.linalg.svd(
        x, full_matrices=True)], [B3], False),
    'linalg_diag': (lambda tf: tf.linalg.diag, [X], True),
    'linalg_diag_k': (lambda tf: lambda x: tf.linalg.diag(x, k=-1), [X[0]], False),
    'linalg_solve': (lambda tf: tf.linalg.solve, [SQUARE, B3[:, :, :3].copy()], False),
    'linalg_solve_adjoint': (lambda tf: lambda a, b: tf.linalg.solve(a, b, adjoint=True),
                             [SQUARE, B3[:, :, :3].copy()], False),
    'adjust_contrast': (lambda tf: lambda x: tf.image.adjust_contrast(x, 1.7), [IMAGES],
                        False),
    'adjust_contrast_uint8': (lambda tf: lambda p: tf.image.adjust_contrast(p, 0.4),
                              [PIXELS], False),
}

SIGNALS = RNG.uniform(-1, 1, (2, 300)).astype('float32')
SPECTRA = np.fft.rfft(B3).astype('complex64')
CASES.update({
    'signal_rfft': (lambda tf: tf.signal.rfft, [X], True),
    'signal_rfft_float64': (lambda tf: tf.signal.rfft, [X.astype('float64')], False),
    'signal_rfft_padded': (lambda tf: lambda x: tf.signal.rfft(x, fft_length=[8]), [B3], True),
    'signal_rfft_cropped': (lambda tf: lambda x: tf.signal.rfft(x, [3]), [X], True),
    'signal_irfft': (lambda tf: tf.signal.irfft, [SPECTRA], False),
    'signal_irfft_length': (lambda tf: lambda x: tf.signal.irfft(x, [5]), [SPECTRA], False),
    'signal_fft': (lambda tf: tf.signal.fft, [SPECTRA], False),
    'signal_ifft': (lambda tf: tf.signal.ifft, [SPECTRA], False),
    'signal_frame': (lambda tf: lambda x: tf.signal.frame(x, 3, 2), [B3], True),
    'signal_frame_pad_end': (lambda tf: lambda x: tf.signal.frame(
        x, 4, 3, pad_end=True, pad_value=7.), [X], True),
    'signal_frame_axis': (lambda tf: lambda x: tf.signal.frame(x, 2, 1, axis=1), [B3], True),
    'signal_frame_short': (lambda tf: lambda x: tf.signal.frame(x, 6, 2), [X], False),
    'signal_hann_window_odd': (lambda tf: lambda: tf.signal.hann_window(7), [], False),
    'signal_hann_window_even': (lambda tf: lambda: tf.signal.hann_window(8), [], False),
    'signal_hann_window_symmetric': (lambda tf: lambda: tf.signal.hann_window(
        8, periodic=False), [], False),
    'signal_hamming_window': (lambda tf: lambda: tf.signal.hamming_window(
        6, dtype=tf.float64), [], False),
    'signal_stft_odd_frame': (lambda tf: lambda x: tf.signal.stft(
        x, frame_length=255, frame_step=128), [SIGNALS], True),
    'signal_stft_even_frame': (lambda tf: lambda x: tf.signal.stft(x, 64, 32), [SIGNALS],
                               True),
    'signal_stft_pad_end': (lambda tf: lambda x: tf.signal.stft(
        x, 50, 40, fft_length=128, pad_end=True), [SIGNALS], True),
    'signal_stft_hamming': (lambda tf: lambda x: tf.signal.stft(
        x, 32, 16, window_fn=tf.signal.hamming_window), [SIGNALS[0]], False),
    'signal_stft_no_window': (lambda tf: lambda x: tf.signal.stft(
        x, 16, 16, window_fn=None), [SIGNALS], False),
    'signal_stft_magnitude': (lambda tf: lambda x: tf.abs(tf.signal.stft(x, 40, 20)),
                              [SIGNALS], True),
})


# tf.experimental.numpy (numpy's dtypes: Python floats are float64; its sqrt of integers
# needs TF's numpy behaviour, which would change the other cases: tests/tf checks it against
# numpy), tf.vectorized_map and tf.debugging.check_numerics.
CASES.update({
    'tnp_add_numbers': (lambda tf: lambda: tf.experimental.numpy.add(1., 2.), [], False),
    'tnp_add_tensor_number': (lambda tf: lambda x: tf.experimental.numpy.add(x, 1.5), [X],
                              True),
    'tnp_sqrt': (lambda tf: tf.experimental.numpy.sqrt, [P], True),
    'tnp_copy': (lambda tf: tf.experimental.numpy.copy, [X], True),
    'tnp_expand_dims': (lambda tf: lambda x: tf.experimental.numpy.expand_dims(x, 0), [X],
                        True),
    'tnp_ones': (lambda tf: lambda: tf.experimental.numpy.ones([2, 3]), [], False),
    'tnp_ones_float32': (lambda tf: lambda: tf.experimental.numpy.ones(
        4, dtype=tf.experimental.numpy.float32), [], False),
    'tnp_zeros': (lambda tf: lambda: tf.experimental.numpy.zeros((3,)), [], False),
    'tnp_arange': (lambda tf: lambda: tf.experimental.numpy.arange(24), [], False),
    'tnp_arange_float': (lambda tf: lambda: tf.experimental.numpy.arange(1., 4., 0.5), [],
                         False),
    'tnp_asarray_int': (lambda tf: lambda: tf.experimental.numpy.asarray(1), [], False),
    'tnp_asarray_floats': (lambda tf: lambda: tf.experimental.numpy.asarray([1., 2.]), [],
                           False),
    'tnp_asarray_dtype': (lambda tf: lambda: tf.experimental.numpy.asarray(
        3, dtype=tf.experimental.numpy.int32), [], False),
    'vectorized_map': (lambda tf: lambda x, y: list(tf.vectorized_map(
        lambda row: (tf.reduce_sum(row[0] * row[1]), row[0] * 2.), (x, y))), [X, Y], False),
    'check_numerics': (lambda tf: lambda x: tf.debugging.check_numerics(x, 'bad'), [X],
                       False),
})


@pytest.mark.parametrize('case', sorted(CASES))
def test_tf_subset_op(case):
    make, inputs, through_graph = CASES[case]
    compare(make(torchk.tf), make(tensorflow), *inputs, graph=through_graph)


@pytest.mark.parametrize('value', [1, 1.5, [1, 2], [[1., 2.]], True, np.arange(3),
                                   np.ones(2, 'float64'), np.float32(2.)])
def test_constant_dtype(value):
    assert torchk.tf.as_dtype(torchk.tf.constant(value).dtype).name == \
        tensorflow.constant(value).dtype.name


@pytest.mark.parametrize('number', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 17, 18, 19, 22, 23])
def test_dtype_of_tensorflows_enum_number(number):
    assert torchk.tf.as_dtype(number).name == tensorflow.as_dtype(number).name


def test_namespaces_exist_in_tensorflow():
    """Every name torchk.tf lists is a name of TensorFlow (torchk adds none of its own)."""
    from torchk.tf import namespaces
    own = {'tf': {'install_import_hook'}}
    for path, names in namespaces.provided().items():
        # TF's internal packages (tf.compiler, which scripts import) are modules, not
        # attributes of the public API.
        module = tensorflow
        for part in path.split('.')[1:]:
            module = getattr(module, part, None) or importlib.import_module(
                '%s.%s' % (module.__name__, part))
        for name in names:
            if name in own.get(path, ()):
                continue
            name = name.rstrip('.*')
            assert hasattr(module, name) or importlib.util.find_spec(
                '%s.%s' % (module.__name__, name)), '%s.%s' % (path, name)


@pytest.mark.parametrize('method', ['jacobian', 'batch_jacobian'])
def test_tape_jacobians_match_tensorflow(method):
    def jacobian(tf):
        x, w = tf.constant(X), tf.constant(W)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.tanh(tf.matmul(x, w)) * tf.reduce_sum(x, axis=1, keepdims=True)
        result = getattr(tape, method)(y, x)
        return result.numpy() if hasattr(result, 'numpy') else result
    expected, got = jacobian(tensorflow), jacobian(torchk.tf)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_adjust_contrast_has_no_gradient_as_in_tensorflow():
    """TF defines no gradient for tf.image.adjust_contrast: a tape raises LookupError."""
    for tf in (tensorflow, torchk.tf):
        image, factor = tf.Variable(IMAGES[0]), tf.Variable(0.1)
        with tf.GradientTape() as tape:
            adjusted = tf.image.adjust_contrast(image, factor)
        with pytest.raises(LookupError):
            tape.gradient(adjusted, [image, factor])


def _custom_gradient_scenarios(tf):
    """Gradients through `tf.custom_gradient` functions: an override of the upstream
    gradient, a stable gradient whose own gradient is taken (nested tapes), a function of
    two arguments with two results, and one reading a variable (`variables=`)."""
    @tf.custom_gradient
    def clip_gradients(y):
        def backward(dy):
            return tf.clip_by_norm(dy, 0.5)
        return y, backward

    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(upstream):
            return upstream * (1 - 1 / (1 + e))
        return tf.math.log(1 + e), grad

    @tf.custom_gradient
    def pair(a, b):
        def grad(d_sum, d_product):
            return d_sum + d_product * b * 2., d_sum - d_product * a
        return (a + b, a * b), grad

    w = tf.Variable(W[:, 0])

    @tf.custom_gradient
    def weighted(x):
        def grad(dy, variables=None):
            return dy * w * 3., [tf.reduce_sum(dy * x, axis=0) * 10.]
        return x * w, grad

    v = tf.Variable(2.0)
    x = tf.constant(X[:, :4] * 10.)
    a, b = tf.constant(X[0]), tf.constant(Y[0])
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, a, b])
            clipped = clip_gradients(v * v)
            stable = tf.reduce_sum(log1pexp(x) ** 2)
            total, product = pair(a, b)
            paired = tf.reduce_sum(total * 3. + product)
            weights = tf.reduce_sum(weighted(tf.constant(X)) ** 2)
        first = tape.gradient(stable, x)
    results = [tape.gradient(clipped, v), first, outer.gradient(first, x),
               *tape.gradient(paired, [a, b]), *tape.gradient(weights, [w])]
    return [r.numpy() for r in results]


def test_custom_gradient_matches_tensorflow():
    expected = _custom_gradient_scenarios(tensorflow)
    got = _custom_gradient_scenarios(torchk.tf)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def _reset_scenarios(tf):
    """Gradients of tapes reset while recording (TF's advanced autodiff guide): what was
    computed before `reset` is a constant to the tape."""
    x, y = tf.Variable(2.0), tf.Variable(3.0)
    c = tf.constant(X[0])
    results = []
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(c)
        before = x * y + tf.reduce_sum(c * c)
        tape.reset()
        tape.watch(c)
        after = before * x + y * y + tf.reduce_sum(c * before)
    results += tape.gradient(after, [x, y, c, before])
    with tf.GradientTape() as tape:
        only_before = y * y
        tape.reset()
        total = x * x + only_before
    results += tape.gradient(total, [x, y])
    return [None if r is None else r.numpy() for r in results]


def test_tape_reset_matches_tensorflow():
    expected, got = _reset_scenarios(tensorflow), _reset_scenarios(torchk.tf)
    assert [g is None for g in got] == [e is None for e in expected]
    for g, e in zip(got, expected):
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=1e-5)


@pytest.mark.parametrize('channels, samples', [(-1, -1), (1, 9), (2, 3)])
def test_decode_wav_matches_tensorflow(tmp_path, channels, samples):
    import wave
    frames = RNG.randint(-32768, 32768, (6, 1)).astype('<i2')
    path = str(tmp_path / 'a.wav')
    with wave.open(path, 'wb') as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes(frames.tobytes())
    results = [tf.audio.decode_wav(tf.io.read_file(path), desired_channels=channels,
                                   desired_samples=samples) for tf in (torchk.tf, tensorflow)]
    (audio, rate), (expected, expected_rate) = results
    np.testing.assert_array_equal(audio.numpy(), expected.numpy())
    assert audio.numpy().dtype == expected.numpy().dtype and int(rate) == int(expected_rate)
@pytest.mark.parametrize('name', ['uint16', 'uint32', 'uint64'])
def test_wide_unsigned_dtypes(name):
    mine, theirs = getattr(torchk.tf, name), getattr(tensorflow, name)
    assert (mine.name, mine.is_unsigned, mine.max, mine.min, mine.size) == (
        theirs.name, theirs.is_unsigned, theirs.max, theirs.min, theirs.size)
    values = [0, 7, int(theirs.max)]
    got = torchk.tf.constant(values, dtype=mine)
    assert got.numpy().dtype == tensorflow.constant(values, dtype=theirs).numpy().dtype
    assert got.numpy().tolist() == values
