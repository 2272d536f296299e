"""`tf.keras.utils`: Keras 2.3.1's (`to_categorical`, `Sequence`, `plot_model`, `get_file`,
...) and tf.keras 2's `set_random_seed`."""
import random

import numpy as np
import torch

from keras import utils as _keras_utils

from ._facade import reexport


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
    from . import preprocessing
    return preprocessing.image_dataset_from_directory(*args, **kwargs)


reexport(globals(), _keras_utils)
