"""TF's linear algebra ops on torch tensors (`torch.linalg`): `tf.linalg.svd`,
`tf.linalg.diag`, `tf.linalg.solve`.

Each is a backend op (`graph.op`): it runs at once on tensors and records on Keras symbols.
TF's names, arguments and result conventions; `torchk.op_table` maps the TF paths to them.
Matrices are the last two axes; the axes before them are batch axes.
"""
import torch

from .graph import op


@op
def svd(tensor, full_matrices=False, compute_uv=True):
    """`tf.linalg.svd`: the singular value decomposition `tensor = u @ diag(s) @ adjoint(v)`.

    # Arguments
        tensor: a tensor of shape `(..., m, n)`.
        full_matrices: if True, `u` and `v` are square (`(..., m, m)` and `(..., n, n)`);
            else they have `min(m, n)` columns.
        compute_uv: if False, only `s` is computed and returned.

    # Returns
        `s` (the singular values, in decreasing order, shape `(..., min(m, n))`) if not
        `compute_uv`; else `[s, u, v]`, in TF's order, with `v` itself (not its adjoint as
        `torch.linalg.svd` gives it). The signs of the singular vectors are those of torch's
        solver, which may differ from TensorFlow's: `u @ diag(s) @ adjoint(v)` is the same.
    """
    if not compute_uv:
        return torch.linalg.svdvals(tensor)
    u, s, vh = torch.linalg.svd(tensor, full_matrices=full_matrices)
    return [s, u, vh.mH]


@op
def diag(diagonal, k=0, num_rows=-1, num_cols=-1, padding_value=0, align='RIGHT_LEFT'):
    """`tf.linalg.diag`: square matrices with `diagonal` on their `k`-th diagonal.

    # Arguments
        diagonal: a tensor of shape `(..., n)`.
        k: which diagonal (0 the main one, positive above it, negative below it).
        num_rows, num_cols, padding_value, align: only TF's defaults are supported.

    # Returns
        A tensor of shape `(..., n + |k|, n + |k|)`, zeros off the diagonal.

    # Raises
        ValueError: for `num_rows`, `num_cols` or `padding_value` other than the defaults, or
            a band of diagonals (`k` a pair).
    """
    if num_rows != -1 or num_cols != -1 or padding_value != 0:
        raise ValueError('tf.linalg.diag with num_rows, num_cols or padding_value is not '
                         'supported; supported: the square matrix of the diagonal.')
    if not isinstance(k, int):
        raise ValueError('tf.linalg.diag with a band of diagonals (k=%r) is not supported; '
                         'supported: one int k.' % (k,))
    return torch.diag_embed(diagonal, offset=k)


@op
def solve(matrix, rhs, adjoint=False):
    """`tf.linalg.solve`: the solution `x` of `matrix @ x = rhs`.

    # Arguments
        matrix: a tensor of square matrices, shape `(..., m, m)`.
        rhs: a tensor of shape `(..., m, k)`.
        adjoint: if True, solves `adjoint(matrix) @ x = rhs`.

    # Returns
        A tensor of shape `(..., m, k)`.
    """
    if adjoint:
        matrix = matrix.mH
    return torch.linalg.solve(matrix, rhs)
