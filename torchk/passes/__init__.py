"""Passes over `K.function` programs, each with its own switch (an environment variable and a
`set_enabled`) and tested for equal output with the pass on and off.

- `phase`: the learning-phase pass (`TORCHK_PHASE`).
- `batch_norm_fusion`: Keras' batch-norm training step as one `torch.batch_norm` moving the
  moving statistics (`TORCHK_BN_FUSION`).
- `folding`: batch normalization and ReLU folded into convolutions for inference (`TORCHK_FOLD`).
- `fusion`: `out=` destinations for update arithmetic (`TORCHK_FUSION`).
- `compiled`: `torch.compile` of programs (`TORCHK_COMPILE`).
- `allocator`: glibc `mallopt` thresholds applied at import (`TORCHK_MALLOPT`).

Passes import ops and `program`; ops and variables never import passes, programs or
`function`.
"""
