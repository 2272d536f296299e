"""`tf.keras.preprocessing`: Keras 2.3.1's `image` (`ImageDataGenerator`, `load_img`, ...),
`sequence` (`pad_sequences`, ...) and `text` (`Tokenizer`, ...)."""
from . import image, sequence, text  # noqa: F401
