"""`tf.random`: random tensors on torchk's device, from torch's generators (see
`torchk.tf.creation`)."""
from .creation import categorical, random_shuffle as shuffle, set_seed, truncated_normal
from .creation import random_gamma as gamma, random_normal as normal, random_uniform as uniform
from .namespaces import module_getattr

__all__ = ['categorical', 'gamma', 'normal', 'set_seed', 'shuffle', 'truncated_normal',
           'uniform']
__getattr__ = module_getattr('tf.random')
