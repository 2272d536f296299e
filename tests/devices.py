"""The device the suite runs on (`TORCHK_DEVICE=cuda` runs it on a GPU), for comparisons whose
two sides run different kernels there: cuDNN's fused recurrences and CUDA's transcendental
functions sum and round in another order than the loops, CPU kernels and TensorFlow (CPU)
fixtures they are compared with. TF32 stays off in the suite (conftest.py), so the CUDA
tolerances are float32 rounding over a recurrence, not TF32's.
"""
from torchk import config


def on_cuda():
    """True when torchk computes on a CUDA device."""
    return config.device().type == 'cuda'


def tolerance(cpu, cuda):
    """`cpu`, or `cuda` on a CUDA device."""
    return cuda if on_cuda() else cpu
