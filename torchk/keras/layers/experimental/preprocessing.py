"""`tf.keras.layers.experimental.preprocessing`: torchk's preprocessing layers, their TF
2.3-2.5 home: the image and numeric ones (`Rescaling`, `Normalization`, `Resizing`,
`CenterCrop`, the `Random*` augmentations), the text ones (`TextVectorization`,
`StringLookup`, `IntegerLookup`), the categorical ones (`CategoryEncoding`, `Hashing`,
`Discretization`) and their base, `PreprocessingLayer`."""
from ....layers import categorical as _categorical
from ....layers import preprocessing as _preprocessing
from ....layers import text as _text

_LAYERS = {name: getattr(module, name) for module in (_preprocessing, _text, _categorical)
           for name in module.__all__}
globals().update(_LAYERS, PreprocessingLayer=_categorical.PreprocessingLayer)
__all__ = sorted(_LAYERS) + ['PreprocessingLayer']


def __getattr__(name):
    raise AttributeError('module %r has no attribute %r' % (__name__, name))
