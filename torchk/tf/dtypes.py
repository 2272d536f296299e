"""`tf.dtypes`: TF's dtypes (`tf.float32`, `tf.DType`, `tf.as_dtype`), defined in
`torchk.tf_dtypes`, which the op table shares."""
from ..tf_dtypes import (  # noqa: A004  (TF's name `bool`)
    DType, as_dtype, bfloat16, bool, complex64, complex128, double, float16, float32, float64,
    half, int8, int16, int32, int64, string, torch_dtype, uint8, uint16, uint32, uint64)

__all__ = ['DType', 'as_dtype', 'bfloat16', 'bool', 'complex64', 'complex128', 'double',
           'float16', 'float32', 'float64', 'half', 'int8', 'int16', 'int32', 'int64', 'string',
           'torch_dtype', 'uint8', 'uint16', 'uint32', 'uint64']
