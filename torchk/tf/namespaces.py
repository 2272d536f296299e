"""How `torchk.tf`'s namespaces are built from the op table, and what a missing name raises.

Every `tf.*` namespace (`tf`, `tf.math`, `tf.nn`, ...) is a module whose `__getattr__`
raises an `AttributeError` naming the missing `tf.X`, saying torchk does not provide it and
pointing at docs/TF_SUBSET.md, the list of what it provides (made by `subset_document`).
`from tensorflow.math import X` raises an `ImportError` with the same message
(`missing_name`), not Python's bare "cannot import name".
"""
import dis
import inspect
import sys
import textwrap
import types

import torch

from .. import graph
from .. import op_table
from . import text_ops
from . import tracing
from .op_errors import tf_error
from .tensors import eager

DOCUMENT = 'docs/TF_SUBSET.md'
# Ops whose first argument is a list of tensors, and ops whose first argument is no tensor
# (or that convert it themselves, by numpy's dtype rules).
_LIST_FIRST = ('concat', 'stack', 'math.add_n')
_NOT_TENSOR_FIRST = ('einsum', 'experimental.numpy.add', 'experimental.numpy.sqrt')


def missing(path):
    """The AttributeError for `path` (e.g. `'tf.compat'`), which torchk does not provide."""
    return AttributeError(
        '%s: torchk does not provide it. torchk.tf implements the part of TensorFlow that '
        'tf.keras 2 scripts use, on torch tensors; %s lists what it provides.'
        % (path, DOCUMENT))


_IMPORT_FROM = dis.opmap['IMPORT_FROM']


def _importing_from(frame):
    """Whether `frame` is running `from module import name` (CPython's IMPORT_FROM)."""
    if frame is None:
        return False
    code = frame.f_code.co_code
    return 0 <= frame.f_lasti < len(code) and code[frame.f_lasti] == _IMPORT_FROM


def missing_name(error, depth=1):
    """`error` (the AttributeError of a missing name), or, when the code asking for the name
    is a `from ... import` statement, an `ImportError` with its message.

    Python turns an AttributeError of a module's `__getattr__` into its own "cannot import
    name" message, losing ours; an ImportError passes through.

    # Arguments
        error: the AttributeError that `getattr` raises.
        depth: how many frames above the caller of `missing_name` the `__getattr__`'s caller
            is (1: the caller of `missing_name` is the `__getattr__`).
    """
    if _importing_from(sys._getframe(depth + 1)):
        return ImportError(str(error))
    return error


def module_getattr(path):
    """A module-level `__getattr__` for the namespace `path` (`'tf.math'`)."""
    def __getattr__(name):
        if name.startswith('__'):
            raise AttributeError(name)
        raise missing_name(missing('%s.%s' % (path, name)))
    return __getattr__


class Namespace(types.ModuleType):
    """A small namespace (`tf.config.experimental`) holding the given members.

    # Arguments
        path: its TF path, e.g. `'tf.config.experimental'`.
        members: a dict of its names.
    """

    def __init__(self, path, members):
        super().__init__(path, 'torchk: %s' % path)
        self._tf_path = path
        self.__dict__.update(members)

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        raise missing_name(missing('%s.%s' % (self._tf_path, name)))


def _tensor_argument(value, takes_list):
    if isinstance(value, torch.Tensor) or graph.is_symbol(value):
        return value
    if takes_list and isinstance(value, (list, tuple)):
        return [_tensor_argument(item, False) for item in value]
    return op_table.tensor_of(value)


def tf_op(key, path):
    """The public `tf.*` function of the table's op `key`, exported at `path`.

    It takes TF's arguments (and `name`, ignored), converts its first argument (arrays,
    lists, numbers) to a tensor, and computes torchk variables eagerly (`tensors.eager`);
    the shape ops take string tensors too (`text_ops`). What the op raises is raised as
    TF's `tf.errors` classes (`tf_error`).
    """
    function = op_table.OPS[key]
    parameters = list(inspect.signature(function).parameters)
    first = parameters[0] if parameters else None
    takes_list = key in _LIST_FIRST
    converts = key not in _NOT_TENSOR_FIRST

    def op(*args, name=None, **kwargs):
        text_result = text_ops.host_op(key, args, kwargs)
        if text_result is not NotImplemented:
            return text_result
        if args and converts and not takes_list and text_ops.is_text(args[0]):
            raise TypeError('tf.%s does not take text (a string tensor): text stays on the '
                            'host, where tf.strings and the shape ops compute on it; turn it '
                            'into numbers first (tf.strings.to_number, a text layer).' % path)
        args, kwargs = eager(args), eager(kwargs)
        if tracing.current() is None and 'torchk.keras.eager' in sys.modules:
            from ..layers import tf_ops  # only with the tf.keras facade (functional models)
            layer_output = tf_ops.functional_op(key, args, kwargs)
            if layer_output is not NotImplemented:
                return layer_output
        if converts:
            if args:
                args = (_tensor_argument(args[0], takes_list),) + tuple(args[1:])
            elif first in kwargs:
                kwargs[first] = _tensor_argument(kwargs[first], takes_list)
        try:
            return function(*args, **kwargs)
        except (RuntimeError, ValueError) as error:
            raise tf_error(error) from error
    op.__name__ = op.__qualname__ = path.rsplit('.', 1)[-1]
    op.__doc__ = ('`tf.%s` on torch tensors (torchk.op_table: %r).\n\nArguments as TF '
                  'names them: %s.' % (path, key, ', '.join(parameters) or 'none'))
    op.__signature__ = inspect.signature(function)
    return op


def ops_under(prefix):
    """`{name: function}` of the table's ops TF exports directly under `tf.<prefix>`
    (`prefix` `''` for `tf` itself), by their keys and `ALIASES`."""
    paths = {}
    for key in op_table.OPS:
        if key.startswith(('__operators__', 'compat.')):
            continue
        for path in (key,) + op_table.ALIASES.get(key, ()):
            paths.setdefault(path, key)
    found = {}
    for path, key in paths.items():
        namespace, _, name = path.rpartition('.')
        if namespace == prefix:
            found[name] = tf_op(key, path)
    return found


def provided(module=None, path='tf'):
    """`{tf_path: sorted names}` of `module` (default `torchk.tf`) and of the namespaces in
    it: a module's `__all__`, a `Namespace`'s members; a namespace is listed as `name.*`."""
    module = module if module is not None else sys.modules['torchk.tf']
    names = getattr(module, '__all__', None)
    if names is None:
        names = [name for name in vars(module) if not name.startswith('_')]
    listing = {path: []}
    for name in sorted(names):
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            listing[path].append(name + '.*')
            listing.update(provided(value, '%s.%s' % (path, name)))
        else:
            listing[path].append(name)
    return listing


_PREAMBLE = '''# The `tf` subset torchk provides

<!-- Generated by `python -c "import torchk.tf.namespaces as n; print(n.subset_document(),
end='')" > docs/TF_SUBSET.md`;
tests/tf/test_namespaces.py checks that it matches the code. -->

`torchk.tf` is the part of TensorFlow's `tf` namespace that tf.keras 2 scripts use, as eager
ops on torch tensors on torchk's device (`torchk.config`). Under `python -m torchk run
SCRIPT`, `import tensorflow as tf` gives this module; `tf.keras` (and `tensorflow.keras`,
`tf_keras`) is torchk's tf.keras facade, `torchk.keras`, and `tf.metrics`, `tf.losses`,
`tf.optimizers` and `tf.initializers` are its namespaces, as in TF 2. Any name not listed
here raises `AttributeError: tf.X: torchk does not provide it ...` (`ModuleNotFoundError`
for an import of `tensorflow.X`).

How it differs from TensorFlow:
- Results are `torch.Tensor`s: `.numpy()` works (importing torchk.tf makes it work for
  tensors that require gradients or live on a GPU too; bfloat16 comes back as float32),
  `.shape` is a `torch.Size` and `.dtype` a `torch.dtype` (`x.dtype == tf.float32` holds:
  TF's dtypes compare equal to torch's; `x.dtype.name` does not exist). Under `python -m
  torchk run` they behave as TF's eager tensors where scripts rely on it: numpy's functions
  compute on their values, operators with numpy arrays (either side) convert the array to
  the tensor's dtype and give a tensor, slices may step backwards (`x[::-1]`), and
  `x.device` is TF's name (`'/job:localhost/replica:0/task:0/device:CPU:0'`, a `str`) for
  the script, the `torch.device` for torch's and torchk's code (`x.device.torch_device` gives
  it to a script: a name is no device torch takes).
- Text stays on the host: `tf.constant(['a b'])` (and `tf.string` data in `tf.data`) is a
  string tensor of numpy `bytes` (`torchk.strings.StringTensor`: `numpy()`, `shape`,
  `dtype == tf.string`, indexing); the shape ops (`expand_dims`, `reshape`, `squeeze`,
  `concat`, `stack`, `gather`, `tile`, `transpose`, `boolean_mask`, `identity`, `shape`,
  `size`, `rank`) take string tensors too. `tf.strings` follows TensorFlow's kernels:
  `lower`/`upper` change ASCII letters unless `encoding='utf-8'`, whitespace is ASCII's,
  `regex_replace` reads RE2's common syntax (Python's `re` with ASCII classes; no RE2-only
  syntax), `split`, `unicode_split` and `ngrams` of a batch give ragged rows
  (`RaggedStrings`: `to_list()`, `to_tensor()`, `flat_values`, `row_lengths()`; inputs of
  rank 0 or 1), `to_hash_bucket_fast` and `to_hash_bucket_strong` give TensorFlow's buckets
  (FarmHash Fingerprint64, SipHash-2-4).
- `tf.Variable` is a torchk variable (a `torch.nn.Parameter`) whose Python operators compute
  at once; gradients of every trainable variable are recorded, as TF's tapes watch them.
- `GradientTape` keeps autograd graphs alive after `gradient` (so two tapes can share one
  forward pass) and differentiates gradients taken while a tape records (nested tapes);
  `jacobian` and `batch_jacobian` take one backward pass per element of the target (per
  example, for `batch_jacobian`). Watching an integer tensor warns and gives None, as in TF.
- `tf.custom_gradient` is a torch autograd Function (variables read included, as in TF);
  `tf.saved_model.save` refuses a function using one, since the torch graph it saves cannot
  hold the gradient, unless `SaveOptions(experimental_custom_gradients=False)` asks for the
  forward computation only.
- `tf.function` records its Python once per input signature (tensors' shapes but the first
  axis, dtypes, other arguments' values) into one program, as TF traces a graph; Python that
  needs a tensor's value (an `if` on a tensor: TF's autograph converts it, torchk does not)
  makes that signature run eagerly, after one message. `tf.device` changes nothing; random
  ops ignore per-op seeds (use `tf.random.set_seed`); `tf.config.set_visible_devices([],
  'GPU')` puts torchk on the CPU.
- `tf.data.Dataset` iterates in Python; `element_spec` is read from the first element.
  Random draws (`shuffle`, `sample_from_datasets`, `rejection_resample`) follow TF's
  distributions, not its random streams; `rejection_resample` keeps elements by plain
  rejection (TF also mixes in unfiltered elements: the same class distribution, other
  counts).
- `tf.distribute`: a replica is a process. `MirroredStrategy` and
  `MultiWorkerMirroredStrategy` are data parallelism over the processes `torchrun` started
  (`torchrun --nproc-per-node N -m torchk run SCRIPT`; torch.distributed, NCCL on GPUs, gloo
  on CPUs; TF_CONFIG is not read), one replica without torchrun; `OneDeviceStrategy` and the
  default strategy are one replica. `run` returns this process' value (no `PerReplica`
  objects); every process must see the same global batches (seed shuffles alike).
- Ops accept Keras symbols too (then they record a graph, as in a Keras 2.3.1 model), and
  the ops of the table also compute tf.keras' saved `TFOpLambda` layers. As in tf.keras, an
  op applied to a Keras tensor of a functional model under construction is a `TFOpLambda`
  layer of that model (inside a layer's `call` it is part of that layer).
'''


def subset_document():
    """The text of docs/TF_SUBSET.md: every name `torchk.tf` provides, by namespace."""
    lines = [_PREAMBLE]
    for path, names in sorted(provided().items()):
        lines.append('## `%s`\n' % path)
        lines.append(textwrap.fill(', '.join('`%s`' % name for name in names), 95) + '\n')
    return '\n'.join(lines)
