"""`tf.saved_model.save` / `load` on torchk, as TF's guide "Using the SavedModel format" uses
them: a `tf.Module`'s `tf.function`s (each traced signature, `input_signature`, variable
writes), signatures, Keras models, gradients through restored functions; the reading of the
functions file refuses what it does not run, and TF's own SavedModels are refused by name."""
import json
import os

import numpy as np
import pytest

import torchk.keras as keras
import torchk.tf as tf
from core_api_cases import X
from torchk.saving import ModelFileError
from saving.saved_model_files import unpack, DIALECTS


class CustomModule(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable(1.)
        self.traces = 0

    @tf.function
    def __call__(self, x):
        self.traces += 1
        return x * self.v

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def mutate(self, new_v):
        self.v.assign(new_v)


class OutputName(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable(2.)

    @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
    def __call__(self, x):
        return {'custom_output_name': x * self.v}


def test_module_functions_restore_and_train_as_in_the_guide(tmp_path):
    module = CustomModule()
    module(tf.constant(0.))
    module(tf.constant([1., 2.]))
    tf.saved_model.save(module, str(tmp_path / 'module'))
    assert sorted(os.listdir(str(tmp_path / 'module'))) == [
        'assets', 'assets.extra', 'saved_model.pb', 'variables']
    imported = tf.saved_model.load(str(tmp_path / 'module'))
    assert imported(tf.constant(3.)).numpy() == 3
    np.testing.assert_array_equal(imported(tf.constant([1., 2.])).numpy(), [1., 2.])
    imported.mutate(tf.constant(2.))
    assert imported(tf.constant(3.)).numpy() == 6 and module.v.numpy() == 1.
    assert len(imported.signatures) == 0
    with pytest.raises(ValueError, match='Could not find matching concrete function'):
        imported(tf.constant([[1., 2.]]))
    optimizer = keras.optimizers.SGD(0.05)
    v, losses = 2., []
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = (10. - imported(tf.constant(2.))) ** 2
        variables = tape.watched_variables()
        assert variables == (imported.v,)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        losses.append(float(loss.detach()))
        expected_loss = (10. - 2. * v) ** 2
        v -= 0.05 * -4. * (10. - 2. * v)  # gradient descent on (10 - 2v)^2
        assert losses[-1] == pytest.approx(expected_loss, rel=1e-5)
        assert imported.v.numpy() == pytest.approx(v, rel=1e-5)


def test_signatures(tmp_path):
    module = CustomModule()
    call = module.__call__.get_concrete_function(tf.TensorSpec(None, tf.float32))
    assert call.structured_input_signature == (
        (tf.TensorSpec(None, tf.float32, name='x'),), {})
    signatures = {'serving_default': call, 'array_input': module.__call__.get_concrete_function(
        tf.TensorSpec([None], tf.float32))}
    tf.saved_model.save(module, str(tmp_path / 'multiple'), signatures=signatures)
    imported = tf.saved_model.load(str(tmp_path / 'multiple'))
    assert sorted(imported.signatures) == ['array_input', 'serving_default']
    serving = imported.signatures['serving_default']
    assert serving.structured_input_signature == ((), {'x': tf.TensorSpec(None, tf.float32)})
    np.testing.assert_array_equal(serving(x=tf.constant([1., 2.]))['output_0'].numpy(), [1., 2.])
    assert serving(tf.constant(4.))['output_0'].numpy() == 4.
    with pytest.raises(ValueError, match='array_input'):
        imported.signatures['array_input'](x=tf.constant(1.))

    output = OutputName()
    tf.saved_model.save(output, str(tmp_path / 'named'))  # its one input_signature: default
    named = tf.saved_model.load(str(tmp_path / 'named')).signatures['serving_default']
    assert named.structured_outputs == {'custom_output_name': tf.TensorSpec(
        None, tf.float32, name='custom_output_name')}
    np.testing.assert_array_equal(named(x=tf.constant([[1.], [2.]]))['custom_output_name'],
                                  [[2.], [4.]])


def test_signature_must_be_concrete(tmp_path):
    module = CustomModule()
    with pytest.raises(ValueError, match='without input_signature'):
        tf.saved_model.save(module, str(tmp_path / 'm'), signatures=module.__call__)


def _conv_model():
    model = keras.Sequential([keras.layers.Conv2D(2, 3, input_shape=(6, 6, 1)),
                              keras.layers.BatchNormalization(), keras.layers.Flatten(),
                              keras.layers.Dense(3, activation='softmax', name='probabilities')])
    model.compile('adam', 'categorical_crossentropy')
    model.fit(np.random.RandomState(0).rand(8, 6, 6, 1), np.eye(3)[[0, 1, 2, 0, 1, 2, 0, 1]],
              verbose=0)  # moving statistics away from their initial values
    return model


def test_keras_model(tmp_path):
    model = _conv_model()
    tf.saved_model.save(model, str(tmp_path / 'model'))
    loaded = tf.saved_model.load(str(tmp_path / 'model'))
    x = np.random.RandomState(1).rand(5, 6, 6, 1).astype('float32')
    infer = loaded.signatures['serving_default']
    assert list(infer.structured_outputs) == ['probabilities']
    assert infer.structured_input_signature[1] == {
        model.input_names[0]: tf.TensorSpec((None, 6, 6, 1), tf.float32)}
    np.testing.assert_allclose(infer(tf.constant(x))['probabilities'].numpy(),
                               model.predict(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loaded(x[:2]).numpy(), model.predict(x[:2]), rtol=1e-5,
                               atol=1e-6)
    assert [v.name for v in loaded.trainable_variables] == [
        w.name for w in model.trainable_weights]
    assert len(loaded.variables) == len(model.weights) == len(loaded.trainable_variables) + 2
    status = tf.train.Checkpoint(model).read(str(tmp_path / 'model'))  # its variables/
    status.assert_existing_objects_matched()


def test_functions_file_runs_only_aten(tmp_path):
    path = str(tmp_path / 'module')
    tf.saved_model.save(OutputName(), path)
    functions_file = os.path.join(path, 'assets.extra', 'torchk_functions.json')
    with open(functions_file) as f:
        original = json.load(f)
    targets = {node.get('target') for entry in original['functions'].values()
               for node in entry['graph']['nodes']}
    assert targets == {None, 'aten.mul.Tensor'}

    def load_with(edit):
        content = json.loads(json.dumps(original))
        for entry in content['functions'].values():
            edit(entry['graph']['nodes'])
        with open(functions_file, 'w') as f:
            json.dump(content, f)
        return tf.saved_model.load(path)

    def call_target(target):
        return lambda nodes: nodes[-1].update(target=target)
    for target in ('builtins.eval', 'os.system', 'aten.from_file.default', 'aten.nothing.x'):
        with pytest.raises(ModelFileError, match='torchk_functions.json: .*operation'):
            load_with(call_target(target))
    with pytest.raises(ModelFileError, match='does not precede it'):
        load_with(lambda nodes: nodes[-1].update(args=[{'node': 99}, {'node': 0}]))
    with open(functions_file, 'w') as f:
        f.write('{"format": "other"}')
    with pytest.raises(ModelFileError, match='not a torchk functions file'):
        tf.saved_model.load(path)


def test_tensorflow_saved_model_is_refused_by_name(tmp_path):
    path = unpack(DIALECTS[0], 'mlp', tmp_path)
    with pytest.raises(NotImplementedError, match='TensorFlow graphs'):
        tf.saved_model.load(path)
    with pytest.raises(OSError, match='SavedModel file does not exist'):
        tf.saved_model.load(str(tmp_path / 'nothing'))
    assert tf.saved_model.contains_saved_model(path)


def test_keras_layer_inside_a_module(tmp_path):
    class WithLayer(tf.Module):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)
            self.dense.build((None, 4))

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
        def __call__(self, x):
            return self.dense(x)

    module = WithLayer()
    tf.saved_model.save(module, str(tmp_path / 'm'))
    imported = tf.saved_model.load(str(tmp_path / 'm'))
    np.testing.assert_allclose(imported(X).numpy(), module.dense(X).numpy(), rtol=1e-6)
    assert imported.signatures['serving_default'](x=X)['output_0'].shape == (len(X), 2)


@pytest.mark.parametrize('name', ['sequential', 'functional'])
def test_model_save_folder_loads_with_its_optimizer(name, tmp_path):
    """`model.save('dir')` as tf.keras 2.15: a SavedModel that `load_model` reads back with the
    optimizer's state (the next step matches) and `tf.saved_model.load` serves."""
    from core_api_cases import Y, trained_keras_model
    model = trained_keras_model(tf, name)
    path = str(tmp_path / 'saved')
    model.save(path)
    loaded = keras.models.load_model(path)
    expected = model.predict(X)
    np.testing.assert_allclose(loaded.predict(X), expected, rtol=1e-6)
    assert type(loaded.optimizer).__name__ == type(model.optimizer).__name__
    model.train_on_batch(X, Y)
    loaded.train_on_batch(X, Y)
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    served = tf.saved_model.load(path).signatures['serving_default']
    np.testing.assert_allclose(served(X)[model.output_names[0]].numpy(), expected,
                               rtol=1e-5, atol=1e-6)


def test_subclassed_model_save_folder(tmp_path):
    from core_api_cases import subclassed_net
    model = subclassed_net(tf)
    model(tf.constant(X))
    model.save(str(tmp_path / 'saved'), include_optimizer=False)
    with pytest.raises(ModelFileError, match='subclassed model'):
        keras.models.load_model(str(tmp_path / 'saved'))
    restored = tf.train.Checkpoint(model=subclassed_net(tf))
    restored.model(tf.constant(X))
    tf.train.Checkpoint(restored.model).read(str(tmp_path / 'saved')).assert_consumed()
    np.testing.assert_array_equal(restored.model(X).numpy(), model(X).numpy())


class _OneHotExport(tf.Module):
    """TF's core quickstart's export module: a signature of unknown sizes, whose function
    needs its inputs to have 7 columns (one-hot encoded to 9, normalized per column)."""

    def __init__(self):
        self.mean = tf.constant(np.arange(9, dtype='float32'))

    @tf.function(input_signature=[tf.TensorSpec(shape=[None, None], dtype=tf.float32)])
    def __call__(self, x):
        origin = tf.one_hot(tf.cast(x[:, -1], tf.int32) - 1, 3)
        return tf.concat([x[:, :-1], origin], axis=1) - self.mean


def test_a_signature_of_unknown_sizes_whose_function_needs_one(tmp_path):
    rng = np.random.RandomState(0)
    x = np.concatenate([rng.rand(5, 6), rng.randint(1, 4, (5, 1))], axis=1).astype('float32')
    expected = np.concatenate([x[:, :-1], np.eye(3)[x[:, -1].astype(int) - 1]], axis=1)
    expected -= np.arange(9)
    tf.saved_model.save(_OneHotExport(), str(tmp_path / 'export'))
    loaded = tf.saved_model.load(str(tmp_path / 'export'))
    np.testing.assert_allclose(loaded(tf.constant(x)).numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(loaded(tf.constant(x[:2])).numpy(), expected[:2], rtol=1e-6)


class ExportModel(tf.Module):
    """TF's audio tutorial's export module: signatures asked for with get_concrete_function
    (a file name, and a batch of waveforms) and never called before saving."""

    def __init__(self):
        super().__init__()
        self.scale = tf.Variable(2.)
        self.__call__.get_concrete_function(x=tf.TensorSpec(shape=(), dtype=tf.string))
        self.__call__.get_concrete_function(x=tf.TensorSpec(shape=[None, 3], dtype=tf.float32))

    @tf.function
    def __call__(self, x):
        if x.dtype == tf.string:
            x = tf.strings.to_number(tf.strings.split(x))[tf.newaxis, :]
        return {'scaled': x * self.scale, 'index': tf.argmax(x, axis=-1)}


def test_get_concrete_function_signatures_are_saved(tmp_path, capfd):
    """As TF saves the concrete functions asked for; a text (tf.string) signature stays on the
    host, so torchk leaves it out of the SavedModel and says so."""
    export = ExportModel()
    np.testing.assert_array_equal(export(tf.constant('1 5 2'))['scaled'].numpy(), [[2, 10, 4]])
    tf.saved_model.save(export, str(tmp_path))
    assert 'leaves out the signature' in capfd.readouterr().err
    imported = tf.saved_model.load(str(tmp_path))
    result = imported(tf.constant([[1., 3., 2.]]))
    np.testing.assert_array_equal(result['scaled'].numpy(), [[2., 6., 4.]])
    np.testing.assert_array_equal(result['index'].numpy(), [1])
    with pytest.raises(ValueError, match='Could not find matching concrete function'):
        imported(tf.constant([[1., 3.]]))


def test_a_text_op_on_traced_tensors_is_refused_by_name(tmp_path):
    names = np.array(['a', 'b'])

    class Labels(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def __call__(self, x):
            return tf.gather(names, tf.argmax(x, axis=-1))

    labels = Labels()
    assert labels(tf.constant([[0., 1.]])).numpy().tolist() == [b'b']
    with pytest.raises(ValueError, match='tf.gather on text with tensor arguments cannot be '
                                         'saved'):
        tf.saved_model.save(labels, str(tmp_path))
