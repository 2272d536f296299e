"""torchk.applications' models load the weights files tf_keras saved for its own models and
predict as tf_keras did; their layers are named and their weights ordered as in those files.

The files are tf_keras' `save_weights` of each case's model (`weights=None`, small inputs),
committed without their values: `weight_recipe.fill_weights` writes the values TensorFlow
predicted with (tests/fixtures/make_tf_keras_applications.py, run by hand).
"""
import gzip
import os
import re
import shutil
import sys

import h5py
import numpy as np
import pytest

from keras import backend as K

import torchk.applications
from torchk.applications import efficientnet, model_parts

from application_cases import APPLICATIONS_DIR, CASES, IMAGENET_CASE, images
from devices import tolerance

sys.path.insert(0, os.path.join(os.path.dirname(APPLICATIONS_DIR)))
import weight_recipe  # noqa: E402


def _weights_file(case, tmp_path):
    """The case's weights file, filled with the recipe's values."""
    path = str(tmp_path / (case + '.h5'))
    with gzip.open(os.path.join(APPLICATIONS_DIR, case + '.weights.h5.gz'), 'rb') as src, \
            open(path, 'wb') as dst:
        shutil.copyfileobj(src, dst)
    weight_recipe.fill_weights(path)
    return path


def _file_layers(path):
    """`(layer name, weight shapes)` of each layer with weights of an h5 weights file."""
    with h5py.File(path, 'r') as f:
        layers = []
        for name in f.attrs['layer_names']:
            name = name.decode() if isinstance(name, bytes) else name
            shapes = [f[name][w.decode() if isinstance(w, bytes) else w].shape
                      for w in f[name].attrs['weight_names']]
            if shapes:
                layers.append((name, shapes))
        return layers


def _model_layers(model):
    return [(layer.name, [tuple(K.int_shape(w)) for w in layer.weights])
            for layer in model.layers if layer.weights]


def _assert_same_layers(model, path):
    """The model's layers with weights are the file's, in its order, with its weights'
    shapes; their names are the file's, but for layers left to name themselves, whose
    numbering differs (Keras 2.3.1 starts at `_1`, tf.keras without a number)."""
    ours, theirs = _model_layers(model), _file_layers(path)
    assert [shapes for _, shapes in ours] == [shapes for _, shapes in theirs]
    for layer, (name, _), (file_name, _) in zip([l for l in model.layers if l.weights], ours,
                                                 theirs):
        default = re.sub(r'(?<!^)(?=[A-Z])', '_', type(layer).__name__).lower()
        if re.fullmatch(default + r'(_\d+)?', name):
            assert re.fullmatch(default + r'(_\d+)?', file_name), (name, file_name)
        else:
            assert name == file_name


def _assert_predicts(model, case):
    arrays = np.load(os.path.join(APPLICATIONS_DIR, case + '.npz'))
    expected = arrays['pred']
    predictions = model.predict(arrays['x'])
    assert predictions.shape == expected.shape
    scale = max(float(np.abs(expected).max()), 1e-6)
    assert np.abs(predictions - expected).max() / scale < tolerance(1e-5, 1e-4)


@pytest.mark.parametrize('case', sorted(CASES))
def test_loads_tf_keras_weights_and_predicts_as_tensorflow(case, tmp_path):
    builder, kwargs = CASES[case]
    K.clear_session()  # layers named by a session counter (RegNet's head) get tf_keras' names
    model = getattr(torchk.applications, builder)(weights=None, **kwargs)
    path = _weights_file(case, tmp_path)
    _assert_same_layers(model, path)
    model.load_weights(path)
    _assert_predicts(model, case)


def test_weights_argument_loads_a_tf_keras_file_by_name(tmp_path):
    builder, kwargs = CASES['convnext_tiny']
    path = _weights_file('convnext_tiny', tmp_path)
    model = getattr(torchk.applications, builder)(weights=path, **kwargs)
    _assert_predicts(model, 'convnext_tiny')
    fresh = getattr(torchk.applications, builder)(weights=None, **kwargs)
    fresh.load_weights(path, by_name=True)
    _assert_predicts(fresh, 'convnext_tiny')


def test_imagenet_weights_come_from_keras_cache_with_the_imagenet_input_scaling(
        tmp_path, monkeypatch):
    path = _weights_file(IMAGENET_CASE, tmp_path)
    requested = []

    def get_file(file_name, origin, cache_subdir, file_hash):
        requested.append((file_name, origin, cache_subdir, file_hash))
        return path
    monkeypatch.setattr(model_parts.data_utils, 'get_file', get_file)
    monkeypatch.setattr(model_parts.data_utils, 'validate_file', lambda path, file_hash: True)
    model = efficientnet.EfficientNetB0(weights='imagenet', include_top=False,
                                        input_shape=(32, 32, 3))
    assert requested == [('efficientnetb0_notop.h5',
                          'https://storage.googleapis.com/keras-applications/'
                          'efficientnetb0_notop.h5', 'models', '50bc09e76180e00e4465e1a485ddc09d')]
    _assert_predicts(model, IMAGENET_CASE)


def test_imagenet_weights_offline_fail_naming_the_url(monkeypatch):
    def get_file(file_name, origin, cache_subdir, file_hash):
        raise Exception('URL fetch failure on %s : None -- [Errno -3] Temporary failure in '
                        'name resolution' % origin)
    monkeypatch.setattr(model_parts.data_utils, 'get_file', get_file)
    url = ('https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v3/'
           'weights_mobilenet_v3_small_224_1.0_float_no_top_v2.h5')
    with pytest.raises(IOError, match='could not be downloaded from ' + url):
        torchk.applications.MobileNetV3Small(weights='imagenet', include_top=False)


def test_a_downloaded_file_of_another_hash_is_refused(tmp_path, monkeypatch):
    path = tmp_path / 'efficientnetb0_notop.h5'
    path.write_bytes(b'not the weights')
    monkeypatch.setattr(model_parts.data_utils, 'get_file', lambda *args, **kwargs: str(path))
    with pytest.raises(ValueError, match='does not have the hash 50bc09e76180e00e4465e1a485ddc09d'):
        efficientnet.EfficientNetB0(weights='imagenet', include_top=False,
                                    input_shape=(32, 32, 3))


def test_input_tensor_is_the_model_input():
    from keras import layers
    image = layers.Input((32, 32, 3))
    model = torchk.applications.RegNetX002(weights=None, input_tensor=image, classes=3)
    assert model.inputs == [image]
    x = images((32, 32, 3), 0)
    assert model.predict(x).shape == (2, 3)
