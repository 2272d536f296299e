"""`tf.nn`: the op table's ops TF exports under `tf.nn` (see `torchk.tf.op_table`)."""
from .namespaces import module_getattr, ops_under

_OPS = ops_under('nn')
globals().update(_OPS)
__all__ = sorted(_OPS)
__getattr__ = module_getattr('tf.nn')
