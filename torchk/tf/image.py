"""`tf.image`: the op table's ops TF exports under `tf.image` (see `torchk.op_table`)."""
from .namespaces import module_getattr, ops_under

_OPS = ops_under('image')
globals().update(_OPS)
__all__ = sorted(_OPS)
__getattr__ = module_getattr('tf.image')
