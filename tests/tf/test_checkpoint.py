"""`tf.train`'s checkpoints on torchk: files in TF's format that TF wrote read with TF's values
(tests/fixtures/tf_core, made by tests/fixtures/make_tf_core_api.py from
tests/core_api_cases.py), torchk's own files read back, TF's keys, deferred restoration,
`CheckpointManager`, the restore statuses, and what a bad path or file raises."""
import os
import shutil

import numpy as np
import pytest
import torch

import torchk.keras as keras
import torchk.tf as tf
from core_api_cases import X, checkpoint_objects, stats_module, subclassed_net, train_step
from torchk.saving import ModelFileError

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        'fixtures', 'tf_core')
TF_MANAGER = os.path.join(FIXTURES, 'checkpoint_manager')


@pytest.fixture(scope='module')
def tf_values():
    values = np.load(os.path.join(FIXTURES, 'checkpoint.npz'))
    return {key.replace('|', '/'): values[key] for key in values.files}


def _saved_keys(values):
    return sorted(key for key in values if not key.startswith('after_step'))


def test_tf_checkpoint_is_restored_with_tf_values_and_steps_on(tf_values):
    objects = checkpoint_objects(tf)
    for variable in objects['net'].trainable_variables:
        variable.assign(tf.zeros_like(variable))
    checkpoint = tf.train.Checkpoint(**objects)
    status = checkpoint.restore(tf.train.latest_checkpoint(TF_MANAGER))
    status.assert_existing_objects_matched()
    net, stats = objects['net'], objects['stats']
    restored = {'net/l1/kernel': net.l1.kernel, 'net/l1/bias': net.l1.bias,
                'net/l2/kernel': net.l2.kernel, 'net/l2/bias': net.l2.bias,
                'stats/v': stats.v, 'stats/items/0': stats.items[0],
                'stats/items/1/count': stats.items[1]['count'], 'step': objects['step'],
                'save_counter': checkpoint.save_counter,
                'optimizer/_iterations': objects['optimizer'].iterations}
    for path, variable in restored.items():
        expected = tf_values[path + '/.ATTRIBUTES/VARIABLE_VALUE']
        np.testing.assert_array_equal(np.asarray(variable.detach()), expected)
    train_step(tf, objects)  # Adam's slots are made now, and take the saved values
    status.assert_consumed()
    for i, variable in enumerate(net.trainable_variables):
        np.testing.assert_allclose(variable.numpy(), tf_values['after_step/%d' % i],
                                   rtol=1e-5, atol=1e-6)


def test_torchk_writes_tf_keys_and_reads_its_own_file(tmp_path, tf_values):
    objects = checkpoint_objects(tf)
    train_step(tf, objects)
    path = tf.train.Checkpoint(**objects).save(str(tmp_path / 'ckpt'))
    assert path == str(tmp_path / 'ckpt-1')
    keys = [key for key, _ in tf.train.list_variables(str(tmp_path))]
    assert keys == ['_CHECKPOINTABLE_OBJECT_GRAPH'] + _saved_keys(tf_values)
    shapes = dict(tf.train.list_variables(TF_MANAGER))
    assert dict(tf.train.list_variables(path)) == shapes
    fresh = checkpoint_objects(tf)
    status = tf.train.Checkpoint(**fresh).restore(path)
    for saved, restored in zip(objects['net'].variables, fresh['net'].variables):
        np.testing.assert_array_equal(saved.numpy(), restored.numpy())
    train_step(tf, objects)
    train_step(tf, fresh)
    status.assert_consumed()
    for saved, restored in zip(objects['net'].variables, fresh['net'].variables):
        np.testing.assert_allclose(saved.numpy(), restored.numpy(), rtol=1e-6)


def test_reader_of_a_tf_checkpoint(tf_values):
    reader = tf.train.load_checkpoint(TF_MANAGER)
    dtypes = reader.get_variable_to_dtype_map()
    shapes = reader.get_variable_to_shape_map()
    key = 'net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE'
    assert dtypes[key].name == 'float32' and dtypes['step/.ATTRIBUTES/VARIABLE_VALUE'] == 'int64'
    assert shapes[key] == list(tf_values[key].shape)
    np.testing.assert_array_equal(reader.get_tensor(key), tf_values[key])
    np.testing.assert_array_equal(tf.train.load_variable(TF_MANAGER, key + ':0'), tf_values[key])
    assert isinstance(reader.get_tensor('_CHECKPOINTABLE_OBJECT_GRAPH'), bytes)
    with pytest.raises(tf.errors.NotFoundError, match='Key missing not found'):
        reader.get_tensor('missing')


def test_manager_keeps_max_to_keep_and_resumes_numbering(tmp_path):
    directory = str(tmp_path / 'ckpts')
    step = tf.Variable(0)
    checkpoint = tf.train.Checkpoint(step=step)
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    assert manager.latest_checkpoint is None and manager.checkpoints == []
    for _ in range(3):
        step.assign_add(1)
        manager.save()
    prefixes = [os.path.join(directory, 'ckpt-%d' % i) for i in (2, 3)]
    assert manager.checkpoints == prefixes and manager.latest_checkpoint == prefixes[1]
    assert not os.path.exists(os.path.join(directory, 'ckpt-1.index'))
    assert tf.train.latest_checkpoint(directory) == prefixes[1]
    state = tf.train.get_checkpoint_state(directory)
    assert state.all_model_checkpoint_paths == prefixes
    resumed = tf.train.Checkpoint(step=tf.Variable(0))
    again = tf.train.CheckpointManager(resumed, directory, max_to_keep=2)
    assert again.restore_or_initialize() == prefixes[1]
    assert int(resumed.step) == 3 and int(resumed.save_counter) == 3
    assert again.save() == os.path.join(directory, 'ckpt-4')
    assert again.checkpoints == prefixes[1:] + [os.path.join(directory, 'ckpt-4')]
    assert again.save(checkpoint_number=10).endswith('ckpt-10')


def test_manager_reads_tf_state_file():
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(), TF_MANAGER, max_to_keep=2)
    assert manager.checkpoints == [os.path.join(TF_MANAGER, 'ckpt-%d' % i) for i in (2, 3)]


def test_manager_checkpoint_interval(tmp_path):
    counter = tf.Variable(0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(c=counter), str(tmp_path), 5,
                                         step_counter=counter, checkpoint_interval=2)
    saved = []
    for _ in range(5):
        saved.append(manager.save() is not None)
        counter.assign_add(1)
    assert saved == [True, False, True, False, True]
    with pytest.raises(ValueError, match='step_counter'):
        tf.train.CheckpointManager(tf.train.Checkpoint(), str(tmp_path), 1,
                                   checkpoint_interval=2)
    with pytest.raises(ValueError, match='max_to_keep'):
        tf.train.CheckpointManager(tf.train.Checkpoint(), str(tmp_path), 0)


def test_deferred_restoration_as_in_tf_guide(tmp_path):
    """TF's checkpoint guide: values reach variables made or attached after `restore`."""
    net = subclassed_net(tf)
    net(tf.constant(X))
    saved = tf.train.Checkpoint(net=net, listed=[tf.Variable(1.)], mapped={'one': tf.Variable(2.)})
    path = saved.save(str(tmp_path / 'ckpt'))

    bias = tf.Variable(tf.zeros([5]))
    fake_layer = tf.train.Checkpoint(bias=bias)
    root = tf.train.Checkpoint(net=tf.train.Checkpoint(l1=fake_layer))
    status = root.restore(path)
    np.testing.assert_array_equal(bias.numpy(), net.l1.bias.numpy())
    status.assert_existing_objects_matched()
    kernel = tf.Variable(tf.zeros([4, 5]))
    fake_layer.kernel = kernel
    np.testing.assert_array_equal(kernel.numpy(), net.l1.kernel.numpy())

    restore = tf.train.Checkpoint()
    restore.mapped = {'one': tf.Variable(0.)}
    restore.restore(path)
    assert restore.mapped['one'].numpy() == 2.
    restore.listed = []
    later = tf.Variable(0.)
    restore.listed.append(later)
    assert later.numpy() == 1.

    unbuilt = subclassed_net(tf)
    tf.train.Checkpoint(net=unbuilt).restore(path)
    unbuilt(tf.constant(X))  # weights made now get their values
    for a, b in zip(net.variables, unbuilt.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_statuses(tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable(1.), w=tf.Variable(2.)).write(str(tmp_path / 'c'))
    assert path == str(tmp_path / 'c') and not os.path.exists(str(tmp_path / 'checkpoint'))
    partial = tf.train.Checkpoint(v=tf.Variable(0.)).read(path)
    with pytest.raises(AssertionError, match='Unresolved object in checkpoint .*: w'):
        partial.assert_consumed()
    partial.assert_existing_objects_matched().assert_nontrivial_match()
    assert partial.expect_partial() is partial
    extra = tf.train.Checkpoint(v=tf.Variable(0.), u=tf.Variable(0.)).read(path)
    with pytest.raises(AssertionError, match='not bound to checkpointed values'):
        extra.assert_existing_objects_matched()
    nothing = tf.train.Checkpoint(x=tf.Variable(0.)).read(path)
    with pytest.raises(AssertionError, match='Nothing except the root'):
        nothing.assert_nontrivial_match()
    with pytest.raises(AssertionError, match='No checkpoint specified'):
        tf.train.Checkpoint(v=tf.Variable(0.)).restore(None).assert_consumed()


def test_checkpoint_of_a_root_object(tmp_path):
    module = stats_module(tf)
    path = tf.train.Checkpoint(module, extra=tf.Variable(3.)).save(str(tmp_path / 'r'))
    keys = [key for key, _ in tf.train.list_variables(path)]
    assert keys == ['_CHECKPOINTABLE_OBJECT_GRAPH', 'extra/.ATTRIBUTES/VARIABLE_VALUE',
                    'items/0/.ATTRIBUTES/VARIABLE_VALUE',
                    'items/1/count/.ATTRIBUTES/VARIABLE_VALUE',
                    'save_counter/.ATTRIBUTES/VARIABLE_VALUE', 'v/.ATTRIBUTES/VARIABLE_VALUE']
    other = stats_module(tf)
    other.v.assign([0., 0.])
    extra = tf.Variable(0.)
    tf.train.Checkpoint(other, extra=extra).restore(path).assert_consumed()
    np.testing.assert_array_equal(other.v.numpy(), module.v.numpy())
    assert extra.numpy() == 3.


def test_dataset_iterator_resumes_at_its_position(tmp_path):
    dataset = tf.data.Dataset.range(10).batch(2)
    iterator = iter(dataset)
    next(iterator), next(iterator)
    path = tf.train.Checkpoint(iterator=iterator).write(str(tmp_path / 'it'))
    resumed = iter(dataset)
    tf.train.Checkpoint(iterator=resumed).read(path).assert_consumed()
    np.testing.assert_array_equal(next(resumed).numpy(), [4, 5])


def test_errors_name_what_is_wrong(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match='missing'):
        tf.train.Checkpoint(v=tf.Variable(1.)).restore(str(tmp_path / 'missing'))
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.list_variables(str(tmp_path))
    with pytest.raises(ValueError, match='expecting v to be a trackable object'):
        tf.train.Checkpoint(v=3)
    path = tf.train.Checkpoint(v=tf.Variable([1., 2.])).write(str(tmp_path / 'c'))
    with pytest.raises(ValueError, match=r'incompatible tensor with shape \(2,\).*shape \(3,\)'):
        tf.train.Checkpoint(v=tf.Variable([1., 2., 3.])).restore(path)
    damaged = str(tmp_path / 'damaged')
    for suffix in ('.index', '.data-00000-of-00001'):
        shutil.copy(path + suffix, damaged + suffix)
    with open(damaged + '.index', 'r+b') as f:
        f.seek(10)
        f.write(b'\xff\xff')
    with pytest.raises(ModelFileError, match='damaged.index'):
        tf.train.Checkpoint(v=tf.Variable([1., 2.])).restore(damaged)


def test_keras_optimizer_slots_restore_when_made(tmp_path):
    """An optimizer restored before its first step gets its slots' values when it makes them
    (here through `fit`, Keras' compiled training function)."""
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])
    model.compile(keras.optimizers.Adam(0.1), 'mse')
    model.fit(X, X[:, :2], verbose=0)
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / 'm'))
    fresh = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])
    fresh.compile(keras.optimizers.Adam(0.1), 'mse')
    tf.train.Checkpoint(model=fresh).read(path)
    model.fit(X, X[:, :2], verbose=0)
    fresh.fit(X, X[:, :2], verbose=0)
    for a, b in zip(model.optimizer.weights, fresh.optimizer.weights):
        np.testing.assert_allclose(np.asarray(a.detach()), np.asarray(b.detach()), rtol=1e-6)
    np.testing.assert_allclose(model.predict(X), fresh.predict(X), rtol=1e-5)
    assert torch.equal(model.optimizer.iterations.detach(), fresh.optimizer.iterations.detach())
