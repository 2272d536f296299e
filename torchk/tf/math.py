"""`tf.math`: the op table's ops TF exports under `tf.math` (see `torchk.op_table`)."""
from .namespaces import module_getattr, ops_under

_OPS = ops_under('math')
globals().update(_OPS)
__all__ = sorted(_OPS)
__getattr__ = module_getattr('tf.math')
