"""`tf.keras.layers.experimental`: `EinsumDense`, `RandomFourierFeatures`,
`SyncBatchNormalization`, and the preprocessing layers' TF 2.3-2.5 home (`preprocessing`)."""
from ....layers.core import EinsumDense  # noqa: F401
from ....layers.kernelized import RandomFourierFeatures  # noqa: F401
from ....layers.normalization import SyncBatchNormalization  # noqa: F401
from ..._facade import reexport
from . import preprocessing  # noqa: F401

reexport(globals(), None)
