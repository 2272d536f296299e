"""`tf.keras.utils`: Keras 2.3.1's (`to_categorical`, `Sequence`, `plot_model`, `get_file`,
...) and tf.keras 2's additions: `set_random_seed`, the image and sequence helpers
(`load_img`, `img_to_array`, `array_to_img`, `save_img`, `pad_sequences`), the dataset
makers (`image_dataset_from_directory`, `text_dataset_from_directory`,
`timeseries_dataset_from_array`, `split_dataset`, `audio_dataset_from_directory`),
`register_keras_serializable`, `to_ordinal`, `warmstart_embedding_matrix`, ..."""
import random
import sys
import types

import numpy as np
import torch

from keras import utils as _keras_utils
from keras.preprocessing.image import array_to_img, img_to_array, save_img  # noqa: F401
from keras.preprocessing.sequence import pad_sequences  # noqa: F401
from keras.utils.data_utils import SequenceEnqueuer  # noqa: F401

from .._facade import reexport
from .audio_dataset import audio_dataset_from_directory  # noqa: F401
from .dataset_utils import (pack_x_y_sample_weight, split_dataset,  # noqa: F401
                            unpack_x_y_sample_weight)
from .image_utils import load_img  # noqa: F401
from .layer_utils import warmstart_embedding_matrix  # noqa: F401
from .np_utils import to_ordinal  # noqa: F401
from .object_registration import (get_registered_name, get_registered_object,  # noqa: F401
                                  register_keras_serializable)
from .timeseries_dataset import timeseries_dataset_from_array  # noqa: F401


def set_random_seed(seed):
    """Seeds Python's `random`, numpy and torch (every device), as tf.keras' seeds Python,
    numpy and TF.

    # Raises
        ValueError: if `seed` is not an integer.
    """
    if not isinstance(seed, (int, np.integer)):
        raise ValueError('set_random_seed needs an integer seed, got %r.' % (seed,))
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def image_dataset_from_directory(*args, **kwargs):
    """See `torchk.keras.preprocessing.image_dataset_from_directory`."""
    from .. import preprocessing
    return preprocessing.image_dataset_from_directory(*args, **kwargs)


def text_dataset_from_directory(*args, **kwargs):
    """See `torchk.keras.preprocessing.text_dataset_from_directory`."""
    from .. import preprocessing
    return preprocessing.text_dataset_from_directory(*args, **kwargs)


legacy = types.ModuleType(__name__ + '.legacy', '`tf.keras.utils.legacy`: Keras 2\'s '
                          '(de)serialization of objects.')
legacy.serialize_keras_object = _keras_utils.serialize_keras_object
legacy.deserialize_keras_object = _keras_utils.deserialize_keras_object
reexport(vars(legacy), None)
sys.modules[legacy.__name__] = legacy

reexport(globals(), _keras_utils)
