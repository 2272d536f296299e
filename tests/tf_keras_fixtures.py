"""What the tf.keras fixture tests share with the script that makes them
(`tests/fixtures/make_tf_keras_ops.py`, run under TensorFlow): numpy only.

- `OPS_DIR`: where the fixtures are.
- `recipe_weights`: the deterministic weights of the large models, which are committed as a
  configuration and TF's outputs only; the script sets them in tf_keras, the tests in torchk.
- `keras231_config`: the few tf_keras configuration changes the fixtures need before Keras
  2.3.1 reads them (functional class name, new-style initializers, list axes, `ragged`),
  standing in for the whole-file tf.keras loader.
"""
import os
import zlib

import numpy as np

OPS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'tf_keras', 'ops')


def recipe_weights(class_name, layer_name, shapes):
    """The weights of one layer of a recipe model.

    # Arguments
        class_name: the layer's Keras class name.
        layer_name: the layer's name.
        shapes: the shapes of its weights, in Keras order (trainable first).

    # Returns
        A list of float32 (int64 for a `count`) numpy arrays.
    """
    weights = []
    for index, shape in enumerate(shapes):
        rng = np.random.RandomState(zlib.crc32(('%s/%d' % (layer_name, index)).encode()))
        shape = tuple(shape)
        if class_name == 'Normalization':
            value = [rng.normal(0., .1, shape), rng.uniform(.5, 1.5, shape),
                     np.zeros(shape, 'int64')][index]
        elif class_name == 'BatchNormalization':  # gamma, beta, moving mean, moving variance
            value = (rng.uniform(.5, 1.5, shape) if index in (0, 3)
                     else rng.normal(0., .1, shape))
        elif len(shape) >= 2:
            fan_in = np.prod(shape[:2] if class_name == 'DepthwiseConv2D' else shape[:-1])
            value = rng.normal(0., np.sqrt(2. / fan_in), shape)
        else:
            value = rng.normal(0., .1, shape)
        weights.append(value if value.dtype == np.int64 else value.astype('float32'))
    return weights


def _serialized_object(value):
    return isinstance(value, dict) and 'class_name' in value and 'module' in value


def keras231_config(config):
    """A copy of a tf_keras model configuration that Keras 2.3.1 deserializes.

    # Arguments
        config: `{'class_name': ..., 'config': ...}` of a tf_keras model.

    # Returns
        The configuration with `Functional` as `Model`, serialized initializers left to the
        layers' defaults (the weights are loaded afterwards), `ragged`/`optional` and
        `groups=1` dropped, and one-element list axes as ints.
    """
    def layer_config(layer):
        layer = dict(layer)
        settings = {key: value for key, value in layer['config'].items()
                    if not _serialized_object(value)
                    and key not in ('ragged', 'optional')
                    and not (key == 'groups' and value == 1
                             and layer['class_name'] != 'Conv1DTranspose')}
        if (layer['class_name'] == 'BatchNormalization' and isinstance(settings['axis'], list)
                and len(settings['axis']) == 1):
            settings['axis'] = settings['axis'][0]
        if isinstance(settings.get('dtype'), dict):
            settings['dtype'] = settings['dtype']['config']['name']
        layer['config'] = settings
        return layer

    model = dict(config)
    if model['class_name'] == 'Functional':
        model['class_name'] = 'Model'
    model['config'] = dict(model['config'],
                           layers=[layer_config(layer) for layer in model['config']['layers']])
    return model
