"""`tf.keras.mixed_precision`: `torchk.mixed_precision` (the policy, `set_global_policy`,
`LossScaleOptimizer`)."""
try:
    from ..mixed_precision import *  # noqa: F401,F403
except ImportError as error:
    raise ImportError('tf.keras.mixed_precision is served by torchk.mixed_precision, which '
                      'this torchk does not have yet (%s).' % error) from error
