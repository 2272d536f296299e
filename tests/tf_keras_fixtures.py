"""What the tf.keras fixture tests share with the script that makes them
(`tests/fixtures/make_tf_keras_ops.py`, run under TensorFlow): numpy only.

- `OPS_DIR`: where the fixtures are.
- `recipe_weights`: the deterministic weights of the large models, which are committed as a
  configuration and TF's outputs only; the script sets them in tf_keras, the tests in torchk.

The tests build the models with `keras.models.model_from_config`, which reads tf_keras
configurations through `torchk.saving`.
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
