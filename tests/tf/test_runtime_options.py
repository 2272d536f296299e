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


@pytest.fixture
def fresh_devices(monkeypatch):
    monkeypatch.setattr(runtime, '_logical_configurations', {})


def test_the_cpu_splits_into_logical_devices_as_in_tf(fresh_devices):
    # TF 2.21 on a CPU machine: three configurations on the physical CPU list
    # /device:CPU:0 to /device:CPU:2; tf.device('CPU:1') then computes; CPU:3 is unknown.
    (cpu,) = tf.config.list_physical_devices('CPU')
    assert [d.name for d in tf.config.list_logical_devices('CPU')] == ['/device:CPU:0']
    with pytest.raises(ValueError, match="No matching devices found for 'CPU:1'"):
        tf.config.experimental.get_memory_info('CPU:1')
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(3)])
    assert [d.name for d in tf.config.list_logical_devices('CPU')] == [
        '/device:CPU:0', '/device:CPU:1', '/device:CPU:2']
    assert len(tf.config.get_logical_device_configuration(cpu)) == 3
    assert tf.config.experimental.get_memory_info('/device:CPU:2') == {'current': 0, 'peak': 0}
    with tf.device('CPU:1'):
        assert (tf.constant([1., 2.]) * 2).tolist() == [2., 4.]
    with pytest.raises(ValueError, match="No matching devices found for 'CPU:3'"):
        tf.config.experimental.get_memory_info('CPU:3')
    with pytest.raises(ValueError, match='No matching devices'):
        tf.config.experimental.get_memory_info('/physical_device:CPU:1')
