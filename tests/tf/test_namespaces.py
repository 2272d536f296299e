"""torchk.tf's namespaces: what a missing name raises, the generated document, devices,
and the import hook."""
import importlib.util
import os
import subprocess
import sys

import pytest
import torch

import torchk.tf as tf
from torchk import config
from torchk import op_table
from torchk.tf import hook, namespaces

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize('expression,path', [
    (lambda: tf.compat, 'tf.compat'),
    (lambda: tf.sparse, 'tf.sparse'),
    (lambda: tf.math.bessel_i0, 'tf.math.bessel_i0'),
    (lambda: tf.nn.conv3d, 'tf.nn.conv3d'),
    (lambda: tf.config.experimental.enable_mlir_graph_optimization,
     'tf.config.experimental.enable_mlir_graph_optimization'),
    (lambda: tf.log, 'tf.log'),
])
def test_a_missing_name_raises_naming_it(expression, path):
    with pytest.raises(AttributeError) as error:
        expression()
    assert str(error.value).startswith(path + ': torchk does not provide it')
    assert 'docs/TF_SUBSET.md' in str(error.value)
    assert not hasattr(tf, 'compat')


def test_the_document_lists_what_is_provided():
    with open(os.path.join(ROOT, 'docs', 'TF_SUBSET.md')) as f:
        assert f.read() == namespaces.subset_document(), (
            'docs/TF_SUBSET.md is out of date; regenerate it with the command at its top.')


def test_every_listed_name_exists():
    for path, names in namespaces.provided().items():
        module = tf
        for part in path.split('.')[1:]:
            module = getattr(module, part)
        for name in names:
            assert getattr(module, name.rstrip('.*')) is not None or name == 'newaxis'


def test_tf_ops_and_tf_op_lambda_read_one_table():
    import keras  # noqa: F401  (torchk.layers is imported through Keras)
    from torchk.layers import tf_ops
    assert tf_ops.OPS is op_table.OPS
    assert tf.math.reduce_sum.__name__ == 'reduce_sum'
    assert 'math.reduce_sum' in tf.reduce_sum.__doc__
    for key, aliases in op_table.ALIASES.items():
        assert key in op_table.OPS
        for alias in aliases:
            assert alias != key


def test_physical_devices_and_visibility():
    devices = tf.config.list_physical_devices()
    assert devices[0].device_type == 'CPU'
    assert len(tf.config.list_physical_devices('GPU')) == torch.cuda.device_count()
    for gpu in tf.config.experimental.list_physical_devices('GPU'):
        tf.config.experimental.set_memory_growth(gpu, True)
    previous = config.device()
    try:
        tf.config.set_visible_devices([], 'GPU')
        assert config.device() == torch.device('cpu')
        assert tf.config.get_visible_devices('GPU') == []
    finally:
        config.set_device(previous)
    with tf.device('/CPU:0'):
        assert tf.constant(1.).device.type == config.device().type
    tf.debugging.set_log_device_placement(True)
    assert tf.test.is_gpu_available() == torch.cuda.is_available()
    assert tf.executing_eagerly()


def _run(code):
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)


def test_hook_serves_tensorflow_from_torchk():
    done = _run('import torchk.tf, os\n'
                'torchk.tf.install_import_hook()\n'
                'import tensorflow as tf\n'
                'from tensorflow import math\n'
                'import tensorflow.nn\n'
                'from tensorflow.config import experimental\n'
                'assert tf is torchk.tf and math is torchk.tf.math\n'
                'assert experimental is torchk.tf.config.experimental\n'
                'print(os.environ["KERAS_BACKEND"], float(tf.reduce_sum([1., 2.])))\n'
                'from tensorboard.compat import tf as board_tf\n'
                'print(board_tf.io.gfile.exists("/"))\n'
                'import tensorflow.compat\n')
    assert done.stdout == 'torchk.core 3.0\nTrue\n'  # TensorBoard took its TF stub
    assert "ModuleNotFoundError: No module named 'tensorflow.compat': torchk serves it" \
        in done.stderr
    assert 'docs/TF_SUBSET.md' in done.stderr


@pytest.mark.parametrize('name,target', [
    ('tensorflow', 'torchk.tf'), ('tensorflow.math', 'torchk.tf.math'),
    ('tensorflow.keras', 'torchk.keras'), ('tensorflow.keras.layers', 'torchk.keras.layers'),
    ('tf_keras', 'torchk.keras'), ('tf_keras.optimizers', 'torchk.keras.optimizers'),
    ('tensorflowx', None), ('keras', None), ('tf_keras_extra', None),
])
def test_hook_targets(name, target):
    assert hook.target_name(name) == target


def test_hook_serves_keras_names_from_the_facade():
    code = ('import torchk.tf\ntorchk.tf.install_import_hook()\n'
            'from tensorflow import keras\nimport torchk.keras\n'
            'assert keras is torchk.keras\nimport tf_keras\nassert tf_keras is keras\n'
            'print("ok")\n')
    done = _run(code)
    if importlib.util.find_spec('torchk.keras') is None:
        assert ("No module named 'tensorflow.keras': torchk serves it with 'torchk.keras', "
                "which does not exist") in done.stderr
    else:
        assert done.stdout == 'ok\n', done.stderr


@pytest.mark.parametrize('name', ['metrics', 'losses', 'optimizers', 'initializers'])
def test_keras_namespaces_under_tf_are_tf_keras_ones(name):
    """TF 2's `tf.metrics` (TF's text classification tutorial), `tf.losses` and
    `tf.optimizers` are tf.keras' namespaces."""
    assert getattr(tf, name) is importlib.import_module('torchk.keras.' + name)
