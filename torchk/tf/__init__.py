"""torchk.tf: the part of TensorFlow's `tf` namespace that tf.keras 2 scripts use, on torch.
"""
from . import data
from .data import TensorSpec
from .dtypes import (DType, as_dtype, bfloat16, bool, complex64, complex128, double,
                     float16, float32, float64, half, int8, int16, int32, int64, uint8)
from .tape import GradientTape, UnconnectedGradients
from .tensors import convert_to_tensor
from .tracing import function
