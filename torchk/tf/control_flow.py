"""`tf.map_fn`, `tf.vectorized_map` (a function applied to each slice of tensors along
their first axis) and `tf.py_function` (a Python function applied to tensors)."""
import torch

from .. import core as K
from .. import graph
from .. import structure
from .. import tf_dtypes
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


def py_function(func=None, inp=None, Tout=None, name=None):  # noqa: N803  (TF's names)
    """Calls the Python function `func` on tensors now (`tf.py_function`; torchk is eager).

    # Arguments
        func: a Python callable (if None: a decorator taking it, as TF allows).
        inp: the arguments, converted to tensors.
        Tout: the result's dtype, or a list or tuple of them (the result is then a list;
            an empty one for a function run for its effects).

    # Returns
        A tensor, or a list of tensors if `Tout` is a list or tuple.

    # Raises
        ValueError: if a tensor `func` returns has another dtype than `Tout` says, or it
            returns another number of values.
    """
    if func is None:
        return lambda function: _PyFunction(function, Tout)
    return _PyFunction(func, Tout)(*(inp or ()))


class _PyFunction:
    def __init__(self, function, dtypes):
        self._function = function
        self._dtypes = dtypes

    def __call__(self, *args):
        result = self._function(*[convert_to_tensor(arg) for arg in args])
        if not isinstance(self._dtypes, (list, tuple)):
            return _returned(result, self._dtypes)
        if not self._dtypes:
            return []
        values = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(values) != len(self._dtypes):
            raise ValueError('tf.py_function: Tout has %d dtypes; the function returned %d '
                             'values.' % (len(self._dtypes), len(values)))
        return [_returned(value, dtype) for value, dtype in zip(values, self._dtypes)]


def _returned(value, dtype):
    if isinstance(value, torch.Tensor) and tf_dtypes.as_dtype(value.dtype) != (
            tf_dtypes.as_dtype(dtype)):
        raise ValueError('tf.py_function: Tout asks for %s; the function returned a tensor '
                         'of dtype %s.' % (tf_dtypes.as_dtype(dtype).name,
                                           tf_dtypes.as_dtype(value.dtype).name))
    return convert_to_tensor(value, dtype)


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """`tf.vectorized_map`: `fn` applied to each slice of `elems` along the first axis, the
    results stacked, as `map_fn` computes them (TF vectorizes the function; torchk loops,
    with the same results)."""
    return map_fn(fn, elems)
