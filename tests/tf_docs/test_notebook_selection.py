"""tests/tf_docs/notebook_selection.py: which notebooks run, and the reasons of the others."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
import notebook_selection  # noqa: E402


def _reason(code, files=None, path='guide/example.ipynb'):
    return notebook_selection.left_out_reason(path, convert.Script(code, files or {}, []))


@pytest.mark.parametrize('code', [
    'import tensorflow as tf\nimport numpy as np\nprint(tf.constant(np.ones(2)))',
    'from tensorflow import keras\nimport matplotlib.pyplot as plt\nimport pandas as pd\n'
    'import seaborn as sns\nimport PIL\nfrom IPython import display\nimport sklearn',
    'import keras\nimport tf_keras\nimport google.protobuf.text_format as pbtext',
    'import tensorflow as tf\nmodel = tf.keras.applications.MobileNetV2(weights=None)',
])
def test_notebooks_of_tensorflow_and_the_general_packages_run(code):
    assert _reason(code) is None


@pytest.mark.parametrize('code, reason', [
    ('import tensorflow_hub as hub\nimport tensorflow_datasets as tfds',
     'imports tensorflow_hub, tensorflow_datasets (outside TensorFlow'),
    ('from google.colab import files', 'imports google.colab (outside'),
    ('import tensorflow as tf\nest = tf.estimator.LinearClassifier([])',
     'uses tf.estimator (removed in TF 2.16'),
    ('import tensorflow as tf\nx = tf.compat.v1.placeholder(tf.float32)',
     "uses TF 1's graph API (tf.compat.v1)"),
    ('import tensorflow as tf\nm = tf.keras.applications.MobileNet()',
     'downloads pretrained ImageNet weights (tf.keras.applications.MobileNet)'),
    ('import tensorflow as tf\nm = tf.keras.applications.ResNet50(weights="imagenet")',
     'downloads pretrained ImageNet weights (tf.keras.applications.ResNet50)'),
    ('import tensorflow as tf\nr = tf.distribute.cluster_resolver.TPUClusterResolver()',
     'needs a TPU (TPUClusterResolver)'),
])
def test_left_out_reasons(code, reason):
    assert _reason(code).startswith(reason)


def test_modules_written_by_writefile_cells_are_not_outside_packages():
    assert _reason('import mnist_setup\nmnist_setup.build()',
                   files={'mnist_setup.py': 'def build(): pass\n'}) is None
    assert _reason('import mnist_setup').startswith('imports mnist_setup')


def test_reasons_given_by_hand_come_first():
    path = 'tutorials/generative/pix2pix.ipynb'
    assert _reason('import tensorflow as tf', path=path) == notebook_selection.BY_HAND[path]
