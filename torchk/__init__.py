"""torchk: the Keras 2 backend API on PyTorch."""
__version__ = '0.1.0'
