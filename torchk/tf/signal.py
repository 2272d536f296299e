"""`tf.signal`: the op table's ops TF exports under `tf.signal` (see `torchk.op_table` and
`torchk.signal_ops`), and its window functions."""
from ..signal_ops import hamming_window, hann_window
from .namespaces import module_getattr, ops_under

_OPS = ops_under('signal')
globals().update(_OPS)
__all__ = sorted(set(_OPS) | {'hamming_window', 'hann_window'})
__getattr__ = module_getattr('tf.signal')
