"""`tf.keras.preprocessing`: Keras 2.3.1's `image` (`ImageDataGenerator`, `load_img`, ...),
`sequence` (`pad_sequences`, ...) and `text` (`Tokenizer`, ...), and the dataset makers also
in `tf.keras.utils` (`image_dataset_from_directory`, `text_dataset_from_directory`,
`timeseries_dataset_from_array`)."""
from .._facade import reexport
from . import image, sequence, text  # noqa: F401
from .dataset import image_dataset_from_directory, text_dataset_from_directory  # noqa: F401


def timeseries_dataset_from_array(*args, **kwargs):
    """See `torchk.keras.utils.timeseries_dataset_from_array`."""
    from ..utils import timeseries_dataset
    return timeseries_dataset.timeseries_dataset_from_array(*args, **kwargs)


reexport(globals(), None)
