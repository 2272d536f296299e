"""Every Keras 2.3.1 optimizer, and one written with `K` ops, trained with and without the
update fusion pass (torchk/passes/fusion.py): weights and optimizer state agree after many steps.

Fusion only changes where results are written, never which kernels run, so the runs agree
exactly; the comparison allows float32 rounding all the same.
"""
import numpy as np
import pytest

from keras import backend as K
from keras import optimizers
from keras.layers import Dense
from keras.models import Sequential
from torchk.passes import adam_fusion, fusion

STEPS = 25


class ScaledSign(optimizers.Optimizer):
    """A user's optimizer written with `K` ops: a decaying step along the gradient's sign,
    with a running mean of |g| kept as state, and a constraint on the kernel."""

    def __init__(self, learning_rate=0.01, **kwargs):
        super(ScaledSign, self).__init__(**kwargs)
        self.learning_rate = K.variable(learning_rate, name='learning_rate')
        self.iterations = K.variable(0, dtype='int64', name='iterations')

    def get_updates(self, loss, params):
        grads = self.get_gradients(loss, params)
        self.updates = [K.update_add(self.iterations, 1)]
        means = [K.zeros(K.int_shape(p)) for p in params]
        self.weights = [self.iterations] + means
        lr = self.learning_rate / K.sqrt(K.cast(self.iterations, 'float32') + 1.)
        for p, g, mean in zip(params, grads, means):
            mean_t = 0.5 * mean + 0.5 * K.abs(g)
            self.updates.append(K.update(mean, mean_t))
            self.updates.append(K.update(p, p - lr * K.sign(g) * mean_t))
        return self.updates


OPTIMIZERS = {
    'sgd': lambda: optimizers.SGD(0.05),
    'sgd_momentum_decay': lambda: optimizers.SGD(0.05, momentum=0.9, decay=0.01),
    'sgd_nesterov_clipnorm': lambda: optimizers.SGD(0.05, momentum=0.8, nesterov=True,
                                                    clipnorm=0.5),
    'rmsprop_clipvalue': lambda: optimizers.RMSprop(0.01, clipvalue=0.05),
    'adagrad_decay': lambda: optimizers.Adagrad(0.05, decay=0.02),
    'adadelta': lambda: optimizers.Adadelta(1.0),
    'adam': lambda: optimizers.Adam(0.01),
    'adam_amsgrad_decay': lambda: optimizers.Adam(0.01, amsgrad=True, decay=0.01),
    'adamax_clipnorm': lambda: optimizers.Adamax(0.01, clipnorm=1.0),
    'nadam': lambda: optimizers.Nadam(0.01),
    'custom': lambda: ScaledSign(0.01),
}


def _train(make_optimizer, fused, initial, x, y):
    fusion.set_enabled(fused)
    # Adam's own fusion (tests/integration/test_adam_fusion.py) would leave this pass nothing
    adam_fusion.set_enabled(False)
    try:
        model = Sequential([Dense(16, activation='tanh', input_shape=(6,)),
                            Dense(3, activation='softmax')])
        model.compile(make_optimizer(), 'categorical_crossentropy', metrics=['accuracy'])
        model.set_weights(initial)
        losses = [model.train_on_batch(x, y)[0] for _ in range(STEPS)]
    finally:
        fusion.set_enabled(None)
        adam_fusion.set_enabled(None)
    state = K.batch_get_value(model.optimizer.weights)
    return model.get_weights(), state, losses, model.train_function._program.source


@pytest.mark.parametrize('name', sorted(OPTIMIZERS))
def test_fused_and_unfused_training_agree(name):
    rng = np.random.RandomState(3)
    x = rng.randn(32, 6).astype('float32')
    y = np.eye(3, dtype='float32')[rng.randint(0, 3, 32)]
    initial = Sequential([Dense(16, input_shape=(6,)), Dense(3)]).get_weights()
    fused = _train(OPTIMIZERS[name], True, initial, x, y)
    unfused = _train(OPTIMIZERS[name], False, initial, x, y)
    assert 'out=' in fused[3] and 'out=' not in unfused[3]
    for a, b in zip(fused[0] + fused[1], unfused[0] + unfused[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(fused[2], unfused[2], rtol=1e-6)
    assert not np.allclose(fused[0][0], initial[0])
    assert fused[2][-1] < fused[2][0]
