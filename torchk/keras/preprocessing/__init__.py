"""`tf.keras.preprocessing`: Keras 2.3.1's `image` (`ImageDataGenerator`, `load_img`, ...),
`sequence` (`pad_sequences`, ...) and `text` (`Tokenizer`, ...), and
`image_dataset_from_directory` and `text_dataset_from_directory` (also in
`tf.keras.utils`)."""
from . import image, sequence, text  # noqa: F401
from .dataset import image_dataset_from_directory, text_dataset_from_directory  # noqa: F401
