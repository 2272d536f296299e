"""`tf.dtypes`: TF's dtypes (`tf.float32`, `tf.DType`, `tf.as_dtype`), defined in
`torchk.tf_dtypes`, which the op table shares."""
from ..tf_dtypes import (DType, as_dtype, bfloat16, bool, complex64, complex128, double,  # noqa: F401,A004
                         float16, float32, float64, half, int8, int16, int32, int64, string,
                         torch_dtype, uint8)
