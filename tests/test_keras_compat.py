"""Tests for `torchk.keras_compat`: unmodified Keras 2.3.1 on Python 3.11, numpy 2, h5py 3.

Each test runs in a fresh interpreter: the fixes patch process-wide state, and Keras loads its
backend once per process.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Layers and a model that Keras' saving code reads and writes like real ones: it only needs
# `name`, `weights`, `get_config`/`from_config`, `compile` and the optimizer.
FAKE_MODEL = '''
import numpy as np
from keras import backend as K


class FakeLayer(object):
    def __init__(self, name, shapes):
        self.name = name
        self.weights = [K.variable(np.zeros(s, dtype='float32'), name='%s/w%d' % (name, i))
                        for i, s in enumerate(shapes)]


class FakeModel(object):
    def __init__(self, spec):
        self.spec = spec
        self.layers = [FakeLayer(name, shapes) for name, shapes in spec]
        self.optimizer = None

    def get_config(self):
        return {'spec': self.spec}

    @classmethod
    def from_config(cls, config):
        return cls([(name, [tuple(s) for s in shapes]) for name, shapes in config['spec']])

    def compile(self, optimizer, loss, **kwargs):
        self.optimizer, self.loss = optimizer, loss
        self._compile_metrics = kwargs.get('metrics')
        self._compile_weighted_metrics = kwargs.get('weighted_metrics')
        self.loss_weights = kwargs.get('loss_weights')
        self.sample_weight_mode = kwargs.get('sample_weight_mode')

    def _make_train_function(self):
        self.optimizer.weights = [K.variable(np.zeros(3, dtype='float32'), name='moment')]


def fill(layers):
    """Gives every weight distinct values; returns them."""
    values = []
    for layer in layers:
        for w in layer.weights:
            values.append(np.random.rand(*K.int_shape(w)).astype('float32'))
            K.set_value(w, values[-1])
    return values


def values(layers):
    return [K.get_value(w) for layer in layers for w in layer.weights]


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


SPEC = [('dense_1', [(2, 3), (3,)]), ('dropout_1', []), ('d\\u00e9nse_2', [(3, 1)])]
'''


def run_python(tmp_path, code, **env):
    """Runs `code` in a new interpreter, with Keras pointed at torchk; returns the result."""
    home = tmp_path / 'keras_home'
    home.mkdir(exist_ok=True)
    (home / 'keras.json').write_text(json.dumps({
        'backend': 'torchk.core', 'floatx': 'float32', 'epsilon': 1e-07,
        'image_data_format': 'channels_last'}))
    environ = dict(os.environ, KERAS_HOME=str(home), KERAS_BACKEND='torchk.core',
                   PYTHONPATH=os.pathsep.join([REPO, os.environ.get('PYTHONPATH', '')]))
    environ.pop('TORCHK_KERAS_COMPAT', None)
    environ.update(env)
    return subprocess.run([sys.executable, '-c', textwrap.dedent(code)], cwd=str(tmp_path),
                          env=environ, capture_output=True, text=True, timeout=300)


def check(result):
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_install_restores_removed_names_when_keras_is_imported(tmp_path):
    check(run_python(tmp_path, '''
        import collections, inspect, sys
        import numpy as np
        assert not hasattr(collections, 'Iterable') and not hasattr(np, 'Inf')
        from torchk import keras_compat
        keras_compat.install()
        keras_compat.install()
        assert sum(isinstance(f, keras_compat._PatchAfterImport) for f in sys.meta_path) == 1
        assert not hasattr(collections, 'Iterable'), 'restored before Keras was imported'
        import keras_preprocessing
        for name in ('Container', 'Iterable', 'Mapping', 'Sequence'):
            assert getattr(collections, name) is getattr(collections.abc, name)
        assert np.Inf == np.inf and np.string_ is np.bytes_ and np.unicode_ is np.str_
        spec = inspect.getargspec(lambda a, b=1, *c, **d: None)
        assert spec == inspect.ArgSpec(['a', 'b'], 'c', 'd', (1,)), spec
        assert spec.keywords == 'd'
        def annotated(a: int): pass
        try:
            inspect.getargspec(annotated)
        except ValueError:
            pass
        else:
            raise AssertionError('getargspec accepted annotations, unlike Python 3.10')
        assert 'keras' not in sys.modules
        '''))


def test_install_patches_modules_already_imported(tmp_path):
    out = check(run_python(tmp_path, '''
        import sys, types
        base_layer = sys.modules['keras.engine.base_layer'] = types.ModuleType('base_layer')
        base_layer.Layer = type('Layer', (), {'add_weight': lambda self, *args: None})
        from torchk import keras_compat
        keras_compat.install()
        exec("print('tracking', 1, 'w')\\nprint('kept', end='')", vars(base_layer))
        '''))
    assert out == 'kept'


def test_opt_out_leaves_everything_alone(tmp_path):
    check(run_python(tmp_path, '''
        import collections, inspect, sys
        import numpy as np
        from torchk import keras_compat
        keras_compat.install()
        assert not hasattr(collections, 'Iterable') and not hasattr(np, 'Inf')
        assert not hasattr(inspect, 'getargspec')
        assert not any(isinstance(f, keras_compat._PatchAfterImport) for f in sys.meta_path)
        ''', TORCHK_KERAS_COMPAT='0'))


def test_keras_imports_and_runs_with_the_fixes(tmp_path):
    out = check(run_python(tmp_path, '''
        import collections
        import numpy as np
        import keras
        from keras import callbacks
        from keras.preprocessing import image, sequence
        callbacks.ModelCheckpoint('x.h5')
        callbacks.EarlyStopping().on_train_begin()
        callbacks.ReduceLROnPlateau()
        padded = sequence.pad_sequences([[1, 2], [3]])
        assert padded.tolist() == [[1, 2], [0, 3]], padded
        assert collections.Mapping is collections.abc.Mapping
        assert image.img_to_array(np.zeros((2, 2, 3))).shape == (2, 2, 3)
        print(keras.__version__, end='')
        '''))
    assert out.endswith('2.3.1')


def test_without_the_fixes_keras_does_not_import(tmp_path):
    result = run_python(tmp_path, 'import keras', TORCHK_KERAS_COMPAT='0')
    assert result.returncode != 0
    assert "cannot import name 'Iterable' from 'collections'" in result.stderr, result.stderr


def test_tracking_print_is_dropped(tmp_path):
    out = check(run_python(tmp_path, '''
        from keras.engine import base_layer
        base_layer.print('tracking', 'value', 'name')
        base_layer.print('kept', end='')
        '''))
    assert out == 'kept'


def test_weights_round_trip_through_hdf5_group(tmp_path):
    check(run_python(tmp_path, FAKE_MODEL + '''
import h5py
from keras.engine import saving

saved = FakeModel(SPEC)
expected = fill(saved.layers)
with h5py.File('w.h5', 'w') as f:
    saving.save_weights_to_hdf5_group(f, saved.layers)

with h5py.File('w.h5', 'r') as f:
    # h5py 3 reads back str where Keras wrote bytes, so Keras' own code fails...
    assert f.attrs['backend'] == 'torchk.core', f.attrs['backend']
    try:
        saving.load_weights_from_hdf5_group.__wrapped__(f, FakeModel(SPEC).layers)
    except AttributeError as e:
        assert "'str' object has no attribute 'decode'" in str(e), e
    else:
        raise AssertionError('h5py returned bytes: the fix is no longer needed')
    # ... and works through the wrappers.
    assert saving.load_attributes_from_hdf5_group(f, 'layer_names') == [n for n, _ in SPEC]
    loaded = FakeModel(SPEC)
    saving.load_weights_from_hdf5_group(f, loaded.layers)
    assert same(values(loaded.layers), expected)
    by_name = FakeModel(SPEC[2:])
    saving.load_weights_from_hdf5_group_by_name(f, by_name.layers)
    assert same(values(by_name.layers), expected[2:])
'''))


def test_string_attributes_in_every_stored_form(tmp_path):
    # Variable length (h5py 3 writing Keras' bytes) and fixed length (files that Keras wrote
    # with h5py 2), non-ASCII, and chunked the way Keras splits long lists.
    check(run_python(tmp_path, FAKE_MODEL + '''
import h5py
from keras.engine import saving
from torchk.keras_compat import environment

names = [n for n, _ in SPEC]
encoded = [n.encode('utf8') for n in names]
many = ['layer_%05d_' % i + 'x' * 40 for i in range(2000)]
with h5py.File('a.h5', 'w') as f:
    f.attrs['vlen'] = encoded
    f.attrs['fixed'] = np.array(encoded)
    saving.save_attributes_to_hdf5_group(f, 'many', [n.encode('utf8') for n in many])
    f.attrs['backend'] = b'torchk.core'
    f.attrs['empty'] = []
    f.attrs['number'] = 3
with h5py.File('a.h5', 'r') as f:
    assert 'many0' in f.attrs and 'many' not in f.attrs
    view = environment._bytes_attributes_view(h5py)(f)
    assert view.attrs['backend'] == b'torchk.core' and f.attrs['backend'] == 'torchk.core'
    assert view.attrs['vlen'].tolist() == encoded
    assert view.attrs['empty'] == []  # 2.2.4 saving.py:251 tests it with `if`
    assert view.attrs['number'] == 3
    assert saving.load_attributes_from_hdf5_group(f, 'vlen') == names
    assert saving.load_attributes_from_hdf5_group(f, 'fixed') == names
    assert saving.load_attributes_from_hdf5_group(f, 'many') == many
    assert saving.load_attributes_from_hdf5_group(f, 'missing') == []

# A weights file as Keras 2.2.4 with TensorFlow and h5py 2 wrote it: fixed-length strings.
expected = fill(FakeModel(SPEC).layers)
with h5py.File('old.h5', 'w') as f:
    f.attrs['backend'] = np.bytes_(b'tensorflow')
    f.attrs['keras_version'] = np.bytes_(b'2.2.4')
    f.attrs['layer_names'] = np.array(encoded)
    i = 0
    for name, shapes in SPEC:
        g = f.create_group(name)
        weight_names = [('%s/w%d:0' % (name, k)).encode('utf8') for k in range(len(shapes))]
        g.attrs['weight_names'] = np.array(weight_names)
        for weight_name in weight_names:
            g[weight_name] = expected[i]
            i += 1
with h5py.File('old.h5', 'r') as f:
    assert f.attrs['backend'] == b'tensorflow', f.attrs['backend']  # h5py 3 keeps these bytes
    loaded = FakeModel(SPEC)
    saving.load_weights_from_hdf5_group(f, loaded.layers)
    assert same(values(loaded.layers), expected)
'''))


def test_load_model_round_trip(tmp_path):
    check(run_python(tmp_path, FAKE_MODEL + '''
import io
import h5py
import keras
from keras.engine import saving

saved = FakeModel(SPEC)
expected = fill(saved.layers)
saved.compile(keras.optimizers.SGD(momentum=0.5), 'mse', metrics=['mae'])
saved._make_train_function()
moment = fill([saved.optimizer])
keras.models.save_model(saved, 'm.h5')

with h5py.File('m.h5', 'r') as f:
    assert f.attrs['model_config'].startswith('{'), f.attrs['model_config']
    loaded_from_file_object = keras.models.load_model(f, {'FakeModel': FakeModel})
with open('m.h5', 'rb') as f:
    stream = io.BytesIO(f.read())
for loaded in (keras.models.load_model('m.h5', {'FakeModel': FakeModel}),
               loaded_from_file_object,
               keras.models.load_model(stream, {'FakeModel': FakeModel})):
    assert loaded.spec == SPEC, loaded.spec
    assert same(values(loaded.layers), expected)
    assert loaded.loss == 'mse' and loaded._compile_metrics == ['mae']
    assert isinstance(loaded.optimizer, keras.optimizers.SGD)
    assert same([K.get_value(w) for w in loaded.optimizer.weights], moment)
with keras.utils.CustomObjectScope({'FakeModel': FakeModel}):  # a dict, no HDF5: untouched
    unpickled = saving.unpickle_model(saving.pickle_model(saved))
assert same(values(unpickled.layers), expected)
'''))


def test_keras_backend_has_the_session_functions():
    import keras.backend as K
    from torchk import core
    assert K.clear_session is core.clear_session and K.get_session is core.get_session
    K.get_uid('compat_test')
    K.clear_session()
    assert K.get_uid('compat_test') == 1


def test_keras_tensorboard_is_torchks_and_multi_gpu_model_points_to_distributed(tmp_path):
    check(run_python(tmp_path, '''
        import keras
        from keras.callbacks import TensorBoard
        from keras.layers import Dense, Flatten, Reshape
        from keras.models import Sequential
        import torchk.callbacks
        assert TensorBoard is torchk.callbacks.TensorBoard is keras.callbacks.TensorBoard
        model = Sequential([Reshape((-1, 2), input_shape=(3, 4)), Flatten(), Dense(1)])
        for layer in model.layers[:2]:
            assert all(type(d) is int for d in layer.output_shape[1:]), layer.output_shape
        assert model.layers[1].output_shape == (None, 12)
        for multi_gpu_model in (keras.utils.multi_gpu_model,
                                keras.utils.multi_gpu_utils.multi_gpu_model):
            try:
                multi_gpu_model(model, gpus=2)
            except ValueError as e:
                assert 'torchk.distributed' in str(e), e
            else:
                raise AssertionError('multi_gpu_model did not raise')
        '''))


def test_save_model_into_a_stream_round_trips():
    """saving.py:546 `save_to_binary_h5py` opened its in-memory file with h5py 3's default
    mode 'r' and raised OSError; the stream now holds an HDF5 image of the model."""
    import io

    import h5py
    import keras
    import numpy as np

    def same(a, b):
        return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))

    np.random.seed(3)
    model = keras.models.Sequential([keras.layers.Dense(4, input_shape=(3,), activation='tanh'),
                                     keras.layers.Dense(2)])
    model.compile('sgd', 'mse')
    weights = model.get_weights()
    x = np.random.rand(5, 3).astype('float32')
    # The reference: the same two layers in numpy.
    expected = np.tanh(x @ weights[0] + weights[1]) @ weights[2] + weights[3]

    stream = io.BytesIO()
    keras.models.save_model(model, stream)
    stream.seek(0)
    with h5py.File(io.BytesIO(stream.getvalue()), 'r') as f:
        stored = [f['model_weights'][layer.name][layer.name][name][()]
                  for layer in model.layers for name in ('kernel:0', 'bias:0')]
    assert same(stored, weights)
    loaded = keras.models.load_model(stream)
    assert same(loaded.get_weights(), weights)
    np.testing.assert_allclose(loaded.predict(x), expected, rtol=1e-5, atol=1e-6)


def test_subclassed_model_defining_build_is_built_before_its_first_fit():
    """training.py:463 called the model's `call` on placeholders unbuilt: its weights,
    made in `build`, did not exist yet."""
    import keras
    import numpy as np

    class Affine(keras.Model):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[1], 1), initializer='ones', name='w')
            self.b = self.add_weight(shape=(1,), initializer='zeros', name='b')

        def call(self, inputs):
            return keras.backend.dot(inputs, self.w) + self.b

    x = np.random.RandomState(0).rand(8, 3).astype('float32')
    model = Affine()
    model.compile('sgd', 'mse')
    assert model.evaluate(x, x.sum(1, keepdims=True), verbose=0) < 1e-10
    assert [w.shape for w in model.get_weights()] == [(3, 1), (1,)]


def test_callbacks_begin_and_end_hooks_get_a_dict_of_logs():
    import keras
    import numpy as np
    seen = []

    class Keys(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            seen.append(('train_begin', sorted(logs.keys())))

        def on_test_end(self, logs=None):
            seen.append(('test_end', sorted(logs.keys())))

    model = keras.models.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    model.compile('sgd', 'mse')
    x = np.zeros((4, 2), 'float32')
    model.fit(x, x[:, :1], epochs=1, verbose=0, callbacks=[Keys()])
    model.evaluate(x, x[:, :1], verbose=0, callbacks=[Keys()])
    assert seen == [('train_begin', []), ('test_end', [])]


def test_a_model_compiled_with_metric_objects_loads(tmp_path):
    import keras
    import numpy as np
    assert isinstance(keras.metrics.get(keras.metrics.serialize(
        keras.metrics.SparseCategoricalAccuracy(name='acc'))),
        keras.metrics.SparseCategoricalAccuracy)
    model = keras.models.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    model.compile('sgd', 'sparse_categorical_crossentropy',
                  metrics=[keras.metrics.SparseCategoricalAccuracy()])
    path = str(tmp_path / 'model.h5')
    model.save(path)
    x = np.random.RandomState(0).rand(4, 3).astype('float32')
    np.testing.assert_allclose(keras.models.load_model(path).predict(x), model.predict(x),
                               rtol=1e-6)


def test_subclassed_model_whose_build_calls_model_build_is_built_once():
    """A `build` that calls `Model.build` first reaches `_set_inputs` with placeholders and
    no weights yet: that build is not started again (its weights were made twice), and
    shapes are read from symbols (np.shape of one raised)."""
    import torchk.keras as keras

    class Affine(keras.Model):
        def build(self, input_shape):
            super().build(input_shape)
            self.w = self.add_weight(shape=(input_shape[1], 1), initializer='ones', name='w')

        def call(self, inputs):
            return keras.backend.dot(inputs, self.w) if hasattr(self, 'w') else inputs

    model = Affine()
    model.build((None, 3))
    assert [w.shape for w in model.get_weights()] == [(3, 1)]
    assert keras.backend.int_shape(model.inputs[0]) == (None, 3)


def test_time_distributed_of_a_fixed_batch_builds():
    """wrappers.py:220-225 declares `global uses_learning_phase` in the step of a
    `TimeDistributed` of a fixed batch size and never defines it: building one raised
    NameError. It builds, and computes its layer on every step."""
    from keras import backend as K
    from keras.layers import Dense, Input, TimeDistributed
    from keras.models import Model
    inputs = Input(batch_shape=(2, 3, 4))
    dense = Dense(5)
    model = Model(inputs, TimeDistributed(dense)(inputs))
    x = np.random.RandomState(0).rand(2, 3, 4).astype('float32')
    kernel, bias = (K.get_value(w) for w in dense.weights)
    np.testing.assert_allclose(model.predict(x), x @ kernel + bias, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('shape', [(5,), ()])
def test_flatten_takes_inputs_of_rank_1_and_2(shape):
    """tf.keras' `Flatten` of `(batch, n)` keeps it and of `(batch,)` makes `(batch, 1)`;
    Keras 2.3.1's input spec asked for rank 3 (layers/core.py:494)."""
    from keras import backend as K
    from keras.layers import Flatten, Input
    inputs = Input(shape=shape)
    outputs = Flatten()(inputs)
    x = np.arange(2 * int(np.prod(shape)), dtype='float32').reshape((2,) + shape)
    assert K.int_shape(outputs) == (None, int(np.prod(shape)))
    np.testing.assert_array_equal(K.function([inputs], [outputs])([x])[0], x.reshape(2, -1))
