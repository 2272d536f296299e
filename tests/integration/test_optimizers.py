"""Every Keras 2.3.1 optimizer on torchk.

The exact tests run three `train_on_batch` steps of a linear model with the 'mse' loss, whose
gradients numpy computes in closed form, and compare the weights after every step with a numpy
re-implementation of the update rule of keras/optimizers.py. They prove that deferred
expressions are recomputed on every step: the decayed learning rate
`lr / (1 + decay * iterations)`, Adam's bias correction at step t, Nadam's momentum schedule,
and that all updates of a step read the state from before the step.
"""
import numpy as np
import pytest

from keras import backend as K
from keras import optimizers

from .conftest import blobs, linear_data, linear_model, lr_of, mlp, np_mse_grads, one_hot

EPS = 1e-7  # K.epsilon(), the optimizers' default epsilon


class NumpyOptimizer(object):
    """The update rules of keras/optimizers.py (2.3.1) in float64 numpy."""

    def __init__(self, name, lr, decay=0., clipnorm=0., clipvalue=0., **hyper):
        self.name, self.lr, self.decay = name, lr, decay
        self.clipnorm, self.clipvalue, self.hyper = clipnorm, clipvalue, hyper
        self.iterations = 0
        self.slots = None
        self.m_schedule = 1.

    def _clip(self, grads):
        if self.clipnorm > 0:  # Optimizer.get_gradients / clip_norm
            norm = np.sqrt(sum(np.sum(g ** 2) for g in grads))
            if norm >= self.clipnorm:
                grads = [g * self.clipnorm / norm for g in grads]
        if self.clipvalue > 0:
            grads = [np.clip(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    def step(self, params, grads):
        grads = self._clip(grads)
        if self.slots is None:
            self.slots = [[np.zeros_like(p) for p in params] for _ in range(3)]
        lr = self.lr / (1. + self.decay * self.iterations)  # iterations before the step
        t = self.iterations + 1.
        h = self.hyper
        new_params = []
        for i, (p, g) in enumerate(zip(params, grads)):
            s0, s1, s2 = (slot[i] for slot in self.slots)
            if self.name == 'sgd':
                v = h['momentum'] * s0 - lr * g
                s0[...] = v
                p = p + h['momentum'] * v - lr * g if h['nesterov'] else p + v
            elif self.name == 'rmsprop':
                s0[...] = h['rho'] * s0 + (1. - h['rho']) * g ** 2
                p = p - lr * g / (np.sqrt(s0) + EPS)
            elif self.name == 'adagrad':
                s0[...] = s0 + g ** 2
                p = p - lr * g / (np.sqrt(s0) + EPS)
            elif self.name == 'adadelta':
                s0[...] = h['rho'] * s0 + (1. - h['rho']) * g ** 2
                update = g * np.sqrt(s1 + EPS) / np.sqrt(s0 + EPS)
                p = p - lr * update
                s1[...] = h['rho'] * s1 + (1. - h['rho']) * update ** 2
            elif self.name == 'adam':
                b1, b2 = h['beta_1'], h['beta_2']
                lr_t = lr * np.sqrt(1. - b2 ** t) / (1. - b1 ** t)
                s0[...] = b1 * s0 + (1. - b1) * g
                s1[...] = b2 * s1 + (1. - b2) * g ** 2
                if h['amsgrad']:
                    s2[...] = np.maximum(s2, s1)
                    p = p - lr_t * s0 / (np.sqrt(s2) + EPS)
                else:
                    p = p - lr_t * s0 / (np.sqrt(s1) + EPS)
            elif self.name == 'adamax':
                b1, b2 = h['beta_1'], h['beta_2']
                lr_t = lr / (1. - b1 ** t)
                s0[...] = b1 * s0 + (1. - b1) * g
                s1[...] = np.maximum(b2 * s1, np.abs(g))
                p = p - lr_t * s0 / (s1 + EPS)
            elif self.name == 'nadam':
                b1, b2, sd = h['beta_1'], h['beta_2'], 0.004
                cache_t = b1 * (1. - 0.5 * 0.96 ** (t * sd))
                cache_t_1 = b1 * (1. - 0.5 * 0.96 ** ((t + 1) * sd))
                schedule_new = self.m_schedule * cache_t
                schedule_next = self.m_schedule * cache_t * cache_t_1
                g_prime = g / (1. - schedule_new)
                s0[...] = b1 * s0 + (1. - b1) * g
                m_prime = s0 / (1. - schedule_next)
                s1[...] = b2 * s1 + (1. - b2) * g ** 2
                v_prime = s1 / (1. - b2 ** t)
                m_bar = (1. - cache_t) * g_prime + cache_t_1 * m_prime
                p = p - self.lr * m_bar / (np.sqrt(v_prime) + EPS)
            new_params.append(p)
        if self.name == 'nadam':
            self.m_schedule *= b1 * (1. - 0.5 * 0.96 ** (t * 0.004))
        self.iterations += 1
        return new_params


# (id, keras optimizer, numpy reference). Learning rates are large enough that three steps
# move the weights far beyond the float32 tolerance; decays are large enough to matter.
CASES = [
    ('sgd', lambda: optimizers.SGD(0.1),
     lambda: NumpyOptimizer('sgd', 0.1, momentum=0., nesterov=False)),
    ('sgd_momentum_decay', lambda: optimizers.SGD(0.1, momentum=0.9, decay=0.5),
     lambda: NumpyOptimizer('sgd', 0.1, decay=0.5, momentum=0.9, nesterov=False)),
    ('sgd_nesterov', lambda: optimizers.SGD(0.05, momentum=0.8, nesterov=True),
     lambda: NumpyOptimizer('sgd', 0.05, momentum=0.8, nesterov=True)),
    ('rmsprop_decay', lambda: optimizers.RMSprop(0.01, rho=0.8, decay=0.3),
     lambda: NumpyOptimizer('rmsprop', 0.01, decay=0.3, rho=0.8)),
    ('adagrad', lambda: optimizers.Adagrad(0.1),
     lambda: NumpyOptimizer('adagrad', 0.1)),
    ('adadelta', lambda: optimizers.Adadelta(1.0, rho=0.9),
     lambda: NumpyOptimizer('adadelta', 1.0, rho=0.9)),
    ('adam_decay', lambda: optimizers.Adam(0.05, beta_1=0.8, beta_2=0.9, decay=0.5),
     lambda: NumpyOptimizer('adam', 0.05, decay=0.5, beta_1=0.8, beta_2=0.9, amsgrad=False)),
    ('adam_amsgrad', lambda: optimizers.Adam(0.05, amsgrad=True),
     lambda: NumpyOptimizer('adam', 0.05, beta_1=0.9, beta_2=0.999, amsgrad=True)),
    ('adamax_decay', lambda: optimizers.Adamax(0.05, decay=0.2),
     lambda: NumpyOptimizer('adamax', 0.05, decay=0.2, beta_1=0.9, beta_2=0.999)),
    ('nadam', lambda: optimizers.Nadam(0.02),
     lambda: NumpyOptimizer('nadam', 0.02, beta_1=0.9, beta_2=0.999)),
    ('sgd_clipnorm', lambda: optimizers.SGD(0.1, clipnorm=0.5),
     lambda: NumpyOptimizer('sgd', 0.1, clipnorm=0.5, momentum=0., nesterov=False)),
    ('adam_clipvalue', lambda: optimizers.Adam(0.05, clipvalue=0.1),
     lambda: NumpyOptimizer('adam', 0.05, clipvalue=0.1, beta_1=0.9, beta_2=0.999,
                            amsgrad=False)),
]


@pytest.mark.parametrize('make_keras, make_numpy', [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_three_steps_match_numpy(make_keras, make_numpy):
    x, y = linear_data(48, in_dim=4, out_dim=3, seed=0)
    rng = np.random.RandomState(7)
    params = [rng.normal(0., 0.5, size=(4, 3)), rng.normal(0., 0.5, size=(3,))]
    model = linear_model(4, 3, *params)
    model.compile(make_keras(), 'mse')
    reference = make_numpy()
    for step in range(3):
        xb, yb = x[step * 16:(step + 1) * 16], y[step * 16:(step + 1) * 16]
        grads = np_mse_grads(params[0], params[1], xb.astype('float64'), yb.astype('float64'))
        if reference.clipnorm:  # the clip must actually bite in this test
            assert np.sqrt(sum(np.sum(g ** 2) for g in grads)) > reference.clipnorm
        if reference.clipvalue:
            assert max(np.abs(g).max() for g in grads) > reference.clipvalue
        loss = model.train_on_batch(xb, yb)
        # The loss reported is the loss before the step.
        expected_loss = np.mean((xb.dot(params[0]) + params[1] - yb) ** 2)
        assert float(loss) == pytest.approx(expected_loss, rel=1e-5)
        params = reference.step(params, grads)
        for got, want in zip(model.get_weights(), params):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                       err_msg='after step %d' % (step + 1))
    assert int(K.get_value(model.optimizer.iterations)) == 3


def test_decay_lowers_the_effective_step():
    # With decay the k-th step of plain SGD moves the weights by lr / (1 + decay * k) times
    # the gradient, and the gradient of a linear model at the same point is the same: so
    # resetting the weights before each step isolates the decayed learning rate.
    x, y = linear_data(16, 4, 3, seed=1)
    start = [np.full((4, 3), 0.1, 'float32'), np.zeros(3, 'float32')]
    model = linear_model(4, 3, *start)
    model.compile(optimizers.SGD(0.1, decay=1.0), 'mse')
    steps = []
    for _ in range(4):
        model.set_weights(start)
        model.train_on_batch(x, y)
        steps.append(np.abs(model.get_weights()[0] - start[0]).sum())
    ratios = np.array(steps) / steps[0]
    np.testing.assert_allclose(ratios, [1., 1. / 2., 1. / 3., 1. / 4.], rtol=1e-4)
    assert lr_of(model) == pytest.approx(0.1)  # the variable itself is not changed


ALL_OPTIMIZERS = [
    ('sgd_momentum', lambda: optimizers.SGD(0.05, momentum=0.9)),
    ('sgd_nesterov', lambda: optimizers.SGD(0.05, momentum=0.9, nesterov=True)),
    ('rmsprop', lambda: optimizers.RMSprop(0.005)),
    ('adagrad', lambda: optimizers.Adagrad(0.05)),
    ('adadelta', lambda: optimizers.Adadelta()),
    ('adam', lambda: optimizers.Adam(0.01)),
    ('adam_amsgrad', lambda: optimizers.Adam(0.01, amsgrad=True)),
    ('adamax', lambda: optimizers.Adamax(0.02)),
    ('nadam', lambda: optimizers.Nadam(0.01)),
    ('sgd_clipnorm', lambda: optimizers.SGD(0.05, momentum=0.9, clipnorm=1.0)),
    ('rmsprop_clipvalue', lambda: optimizers.RMSprop(0.005, clipvalue=0.5)),
    ('adam_decay', lambda: optimizers.Adam(0.01, decay=1e-3)),
]


@pytest.mark.parametrize('make', [c[1] for c in ALL_OPTIMIZERS],
                         ids=[c[0] for c in ALL_OPTIMIZERS])
def test_optimizer_trains_a_classifier(make):
    x, labels = blobs(256, 8, 3, seed=0)
    y = one_hot(labels, 3)
    model = mlp(8, 16, 3)
    model.compile(make(), 'categorical_crossentropy', metrics=['accuracy'])
    before = model.evaluate(x, y, batch_size=256, verbose=0)[0]
    model.fit(x, y, batch_size=32, epochs=8, verbose=0)
    after, accuracy = model.evaluate(x, y, batch_size=256, verbose=0)
    assert after < 0.3 * before, (before, after)
    assert accuracy >= 0.9
    assert int(K.get_value(model.optimizer.iterations)) == 8 * 8


@pytest.mark.parametrize('name', ['sgd', 'rmsprop', 'adagrad', 'adadelta', 'adam', 'adamax',
                                  'nadam'])
def test_optimizer_by_name(name):
    x, y = linear_data(64, 4, 2, seed=0)
    model = linear_model(4, 2, np.zeros((4, 2)), np.zeros(2))
    model.compile(name, 'mse')
    assert type(model.optimizer).__name__.lower() == name
    history = model.fit(x, y, batch_size=16, epochs=5, verbose=0)
    assert history.history['loss'][-1] < history.history['loss'][0]
