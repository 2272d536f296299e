"""`tf.keras.layers.experimental.preprocessing`: torchk's preprocessing layers, their TF
2.3-2.5 home: the image and numeric ones (`Rescaling`, `Normalization`, `Resizing`,
`CenterCrop`, the `Random*` augmentations), the text ones (`TextVectorization`,
`StringLookup`, `IntegerLookup`), the categorical ones (`CategoryEncoding`, `Hashing`,
`Discretization`) and their base, `PreprocessingLayer`."""
from ....layers import categorical as _categorical
from ....layers import preprocessing as _preprocessing
from ....layers import text as _text
from ..._facade import reexport

_LAYERS = {name: getattr(module, name) for module in (_preprocessing, _text, _categorical)
           for name in module.__all__}
globals().update(_LAYERS, PreprocessingLayer=_categorical.PreprocessingLayer)
reexport(globals(), None)
