"""`tf.map_fn` and `tf.vectorized_map`: a function applied to each slice of tensors along
their first axis."""
import torch

from .. import core as K
from .. import graph
from .. import structure
from .tensors import convert_to_tensor


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None, fn_output_signature=None):
    """`fn` applied to `elems[i]` for each `i` of their first axis, the results stacked.

    `elems` is a tensor or a nested structure of tensors of one length (`fn` gets the
    structure of their slices); `fn`'s result may be a structure too. On tensors it runs
    now; on a Keras symbol (one tensor) it records Keras' `map_fn`.

    # Raises
        ValueError: for elements of different lengths or none at all.
    """
    leaves = structure.flatten(elems)
    if any(graph.is_symbol(leaf) for leaf in leaves):
        if len(leaves) != 1:
            raise ValueError('tf.map_fn over Keras symbols takes one tensor as elems.')
        return K.map_fn(fn, leaves[0], dtype=dtype)
    leaves = [convert_to_tensor(leaf) for leaf in leaves]
    lengths = {int(leaf.shape[0]) for leaf in leaves}
    if len(lengths) != 1:
        raise ValueError('tf.map_fn: the elements have different lengths %s.'
                         % sorted(lengths))
    results = [fn(structure.pack_as(elems, [leaf[i] for leaf in leaves]))
               for i in range(lengths.pop())]
    if not results:
        raise ValueError('tf.map_fn: elems is empty.')
    stacked = [torch.stack([convert_to_tensor(r) for r in column])
               for column in zip(*[structure.flatten(r) for r in results])]
    return structure.pack_as(results[0], stacked)


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """`tf.vectorized_map`: `fn` applied to each slice of `elems` along the first axis, the
    results stacked, as `map_fn` computes them (TF vectorizes the function; torchk loops,
    with the same results)."""
    return map_fn(fn, elems)
