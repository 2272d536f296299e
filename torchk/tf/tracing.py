"""`tf.function`: runs the Python function eagerly, or compiled by `torch.compile`.

TF traces a `tf.function` into a graph for speed; torchk's ops are already eager torch ops,
so the function runs as it is. With `TORCHK_COMPILE=1` (torchk's compile switch,
`torchk.passes.compiled`) it is compiled with `torch.compile` on its first call.
"""
import functools

import torch

from ..passes import compiled

_ACCEPTED = ('input_signature', 'autograph', 'jit_compile', 'reduce_retracing',
             'experimental_relax_shapes', 'experimental_compile', 'experimental_implements',
             'experimental_autograph_options', 'experimental_follow_type_hints',
             'experimental_attributes', 'name')


class Function:
    """A Python function called as `tf.function` calls it (see `function`).

    # Attributes
        python_function: the function as written.
        input_signature: the `input_signature` it was declared with, or None.
    """

    def __init__(self, python_function, input_signature=None):
        self.python_function = python_function
        self.input_signature = input_signature
        self._compiled = None
        functools.update_wrapper(self, python_function)

    def __call__(self, *args, **kwargs):
        if compiled.enabled():
            if self._compiled is None:
                self._compiled = torch.compile(self.python_function)
            return self._compiled(*args, **kwargs)
        return self.python_function(*args, **kwargs)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        return functools.partial(self.__call__, instance)

    def get_concrete_function(self, *args, **kwargs):
        """Returns this function: torchk does not trace graphs, every call runs the Python."""
        return self


def function(func=None, **options):
    """Decorator (with or without arguments) making `func` a `Function`.

    # Arguments
        func: the Python function.
        **options: TF's `tf.function` arguments (`input_signature`, `jit_compile`,
            `reduce_retracing`, `autograph`, `experimental_relax_shapes`, ...), accepted and
            unused except `input_signature`, which is kept on the result.

    # Returns
        A `Function`, or a decorator returning one when `func` is None.

    # Raises
        TypeError: for an argument `tf.function` does not have.
    """
    unknown = sorted(set(options) - set(_ACCEPTED))
    if unknown:
        raise TypeError('tf.function got unexpected arguments %s; accepted: %s.'
                        % (', '.join(unknown), ', '.join(_ACCEPTED)))
    if func is None:
        return functools.partial(function, **options)
    return Function(func, options.get('input_signature'))
