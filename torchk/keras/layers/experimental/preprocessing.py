"""`tf.keras.layers.experimental.preprocessing`: torchk's preprocessing layers
(`Rescaling`, `Normalization`, `Resizing`, `CenterCrop`, the `Random*` augmentations)."""
from ....layers import preprocessing as _preprocessing

from ..._facade import reexport

reexport(globals(), _preprocessing, exclude=('keras', 'torch', 'KerasLayer'))
globals()['__all__'][:] = list(_preprocessing.__all__)
