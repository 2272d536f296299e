"""`tf.config.optimizer`'s options and `tf.debugging.check_numerics`, against TF 2.21's
answers: the options start as `{'disable_model_pruning': False, 'disable_meta_optimizer':
False}`, a set updates (unknown names ignored) and they come back in TF's order; a NaN or
an infinity raises InvalidArgumentError with "<message> : Tensor had NaN values"."""
import pytest

import torchk.tf as tf
from torchk.tf import runtime


@pytest.fixture
def fresh_options(monkeypatch):
    monkeypatch.setattr(runtime, '_optimizer_options',
                        {'disable_model_pruning': False, 'disable_meta_optimizer': False})


def test_optimizer_options_are_recorded_as_tf_reports_them(fresh_options):
    options = tf.config.optimizer
    assert options.get_experimental_options() == {
        'disable_model_pruning': False, 'disable_meta_optimizer': False}
    options.set_experimental_options({'constant_folding': False})
    options.set_experimental_options({'debug_stripper': True, 'bogus': True})
    options.set_experimental_options({})
    options.set_experimental_options({'layout_optimizer': 1})
    got = options.get_experimental_options()
    assert list(got.items()) == [
        ('layout_optimizer', True), ('constant_folding', False), ('debug_stripper', True),
        ('disable_model_pruning', False), ('disable_meta_optimizer', False)]


def test_check_numerics_eager_and_in_a_function():
    assert tf.debugging.check_numerics(tf.constant([1., 2.]), 'Bad!').tolist() == [1., 2.]
    with pytest.raises(tf.errors.InvalidArgumentError, match='Bad! : Tensor had NaN values'):
        tf.debugging.check_numerics(tf.constant([1., float('nan')]), 'Bad!')
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.debugging.check_numerics(tf.constant([1, 2]), 'Bad!')

    @tf.function
    def checked(x):
        return tf.debugging.check_numerics(x * 2., 'Bad!')

    assert float(checked(tf.constant(1.5))) == 3.
    with pytest.raises(tf.errors.InvalidArgumentError, match='Bad! : Tensor had Inf values'):
        checked(tf.constant(float('inf')))
