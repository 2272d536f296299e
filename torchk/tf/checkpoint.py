"""`tf.train`'s checkpoints on torch: `Checkpoint`, `CheckpointManager`, `latest_checkpoint`,
`get_checkpoint_state`, `list_variables`, `load_variable`, `load_checkpoint`.

Files are TensorFlow's (`torchk.saving.object_graph` over `tensor_bundle`, the one gate of
checkpoint files): TF reads what torchk writes and torchk what TF writes, keys and object
graph alike (`net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE`). What is saved is the object graph
under the checkpoint (`trackable.py`): its attributes, their variables, layers, models and
optimizers. Restoring matches that graph by names; what does not exist yet (a model's
weights before its first call, an optimizer's slots before its first step, an attribute set
later) gets its value when it is made, as in TF.

A `tf.data` iterator is saved as the number of elements it gave (torchk's own value
`TORCHK_ITERATOR_POSITION`, which TF does not read); the state TF saves for its iterators
(`ITERATOR_STATE`) is TF's own, and is left unread (`assert_consumed` names it).
"""
import collections
import glob
import os
import time

import numpy as np
import torch

from ..saving import object_graph
from . import runtime, trackable
from .dtypes import as_dtype
from .namespaces import Namespace
from .variable import Variable


# ---- Paths --------------------------------------------------------------------------------

def _prefix(path):
    """The checkpoint prefix `path` names: a prefix, a folder (its latest checkpoint) or a
    SavedModel folder (its variables).

    # Raises
        tf.errors.NotFoundError: if there is no checkpoint there.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, 'saved_model.pb')):
            return os.path.join(path, 'variables', 'variables')
        latest = latest_checkpoint(path)
        if latest is None:
            raise ValueError("Couldn't find 'checkpoint' file or checkpoints in given "
                             "directory %s" % path)
        return latest
    if not os.path.isfile(path + '.index'):
        raise runtime.NotFoundError(
            'Failed to find any matching files for %s (no %s.index). Please double-check that '
            'the path is correct. You may be missing the checkpoint suffix (e.g. the \'-1\' in '
            '\'path/to/ckpt-1\').' % (path, path))
    return path


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the latest checkpoint that `checkpoint_dir`'s state file names, or None
    (no state file, or its checkpoint is gone)."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    state = object_graph.read_state(checkpoint_dir, latest_filename or object_graph.STATE_FILE)
    if state is None or not state.model_checkpoint_path:
        return None
    path = os.path.join(checkpoint_dir, state.model_checkpoint_path)
    return path if os.path.isfile(path + '.index') else None


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """`checkpoint_dir`'s `CheckpointState` (`model_checkpoint_path`,
    `all_model_checkpoint_paths`), paths joined to the folder, or None."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    state = object_graph.read_state(checkpoint_dir, latest_filename or object_graph.STATE_FILE)
    if state is None:
        return None
    state.model_checkpoint_path = os.path.join(checkpoint_dir, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [os.path.join(checkpoint_dir, p)
                                        for p in state.all_model_checkpoint_paths]
    return state


def _relative(path, directory):
    return os.path.relpath(path, directory or '.')


def record_latest(path):
    """Names the checkpoint `path` the latest (and only) one of its folder's state file, as
    `Checkpoint.save` and TF-format `save_weights` do."""
    directory = os.path.dirname(path)
    relative = _relative(path, directory)
    object_graph.write_state(directory or '.', object_graph.CheckpointState(relative,
                                                                            [relative]))


# ---- Reading values -----------------------------------------------------------------------

class CheckpointReader(object):
    """The values of a checkpoint (`tf.train.load_checkpoint`), read on demand."""

    def __init__(self, prefix):
        from ..saving.tensor_bundle import TensorBundle
        self._bundle = TensorBundle(prefix)

    def has_tensor(self, name):
        return name in self._bundle.entries

    def get_tensor(self, name):
        """The value stored under `name` (a numpy array; a string tensor's as bytes).

        # Raises
            tf.errors.NotFoundError: if the checkpoint has no such key.
        """
        if name not in self._bundle.entries:
            raise runtime.NotFoundError('Key %s not found in checkpoint %s.' % (
                name, self._bundle.prefix))
        value = self._bundle.read(name)
        if isinstance(value, list):
            strings = np.empty(len(value), dtype=object)
            strings[:] = value
            shape = self._bundle.shape(name)
            return strings.reshape(shape) if shape else strings[0]
        return value

    def get_variable_to_shape_map(self):
        """`{key: shape as a list}` of every value."""
        return {name: [int(d.size) for d in entry.shape.dim]
                for name, entry in self._bundle.entries.items()}

    def get_variable_to_dtype_map(self):
        """`{key: tf.DType}` of every value."""
        return {name: as_dtype(self._bundle.dtype_name(name)) for name in self._bundle.entries}


def load_checkpoint(ckpt_dir_or_file):
    """A `CheckpointReader` of a checkpoint (a prefix, or a folder: its latest)."""
    return CheckpointReader(_prefix(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file):
    """`[(key, shape)]` of every value of a checkpoint, sorted by key."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return sorted(shapes.items())


def load_variable(ckpt_dir_or_file, name):
    """The value stored under `name` (a trailing `:0` ignored) in a checkpoint."""
    if name.endswith(':0'):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


# ---- Writing and restoring object graphs --------------------------------------------------

def write_object_graph(root, prefix, extra=()):
    """Writes the checkpoint of the object graph under `root` (and `extra`, `(name, object)`
    children added to the root) at `prefix`; returns the prefix."""
    _, nodes = trackable.graph_nodes(_Attached(root, extra) if extra else root)
    return object_graph.write_checkpoint(os.fspath(prefix), nodes)


class _Attached(object):
    """A root with more children (`tf.train.Checkpoint(root, **kwargs)`)."""

    def __init__(self, root, extra):
        self.root = root
        self.extra = list(extra)


trackable.register_view(_Attached, trackable.View(
    children=lambda a: trackable.children(a.root) + a.extra))


def restore_object_graph(root, save_path, extra=()):
    """Restores the checkpoint `save_path` into the object graph under `root` (and `extra`,
    `(name, object)` children added to the root).

    # Returns
        A `CheckpointLoadStatus`.

    # Raises
        tf.errors.NotFoundError: if there is no checkpoint at `save_path`.
        ValueError: if a value does not fit its variable.
        torchk.saving.ModelFileError: if the checkpoint is damaged.
    """
    prefix = _prefix(save_path)
    restoration = trackable.Restoration(object_graph.ObjectGraph(prefix))
    restoration.match(root, 0)
    saved = restoration.graph.children(0)
    for name, child in extra:
        if name in saved:
            restoration.match(child, saved[name])
    restoration.finish()
    return CheckpointLoadStatus(restoration, _Attached(root, extra) if extra else root, prefix)


def _description(key):
    return key.split('/.ATTRIBUTES/')[0] or '(root)'


class CheckpointLoadStatus(object):
    """What a restore matched, with TF's checks of it (`Checkpoint.restore`'s result)."""

    def __init__(self, restoration, root, prefix):
        self._restoration = restoration
        self._root = root
        self.save_path = prefix

    def _unmatched_python_objects(self):
        objects, _ = trackable.graph_nodes(self._root)
        return [obj for obj in objects if trackable.view_of(obj) is not None
                and trackable.view_of(obj).values(obj)
                and id(obj) not in self._restoration.matched_ids]

    def assert_consumed(self):
        """Checks that every value of the checkpoint was restored and every variable
        under the root got one.

        # Raises
            AssertionError: naming the values (or variables) without a counterpart.
        """
        graph = self._restoration.graph
        unresolved = [node_id for node_id, node in enumerate(graph.nodes)
                      if node.attributes and node_id not in self._restoration.objects]
        if unresolved:
            keys = [_description(graph.node(i).attributes[0].checkpoint_key)
                    for i in unresolved]
            raise AssertionError('Unresolved object in checkpoint %s: %s (no Python object '
                                 'matched these values).' % (self.save_path, ', '.join(keys)))
        unused = sorted(a.checkpoint_key for node in graph.nodes for a in node.attributes
                        if a.checkpoint_key not in self._restoration.consumed)
        if unused:
            raise AssertionError('Unused attributes in checkpoint %s: %s (their objects '
                                 'matched, but do not take these values).'
                                 % (self.save_path, ', '.join(unused)))
        return self.assert_existing_objects_matched()

    def assert_existing_objects_matched(self):
        """Checks that every variable existing under the root got a value.

        # Raises
            AssertionError: naming the variables without a value in the checkpoint.
        """
        unmatched = self._unmatched_python_objects()
        if unmatched:
            raise AssertionError(
                'Some Python objects were not bound to checkpointed values, likely due to '
                'changes in the Python program: %s' % ', '.join(
                    getattr(obj, 'name', type(obj).__name__) for obj in unmatched[:20]))
        return self

    def assert_nontrivial_match(self):
        """Checks that something besides the root matched.

        # Raises
            AssertionError: if nothing did.
        """
        if len(self._restoration.objects) <= 1:
            raise AssertionError('Nothing except the root object matched a checkpointed value '
                                 'in %s. Typically this means that the checkpoint does not '
                                 'match the Python program.' % self.save_path)
        return self

    def expect_partial(self):
        """Silences the checks of a partial restore (torchk does not warn anyway)."""
        return self

    def run_restore_ops(self, session=None):
        """Nothing to run: values are restored eagerly."""

    def initialize_or_restore(self, session=None):
        """Nothing to run: values are restored eagerly."""


class InitializationOnlyStatus(object):
    """`Checkpoint.restore(None)`: nothing restored, variables keep their initial values."""

    _MESSAGE = 'No checkpoint specified (save_path=None); nothing is being restored.'

    def assert_consumed(self):
        raise AssertionError(self._MESSAGE)

    assert_existing_objects_matched = assert_nontrivial_match = assert_consumed

    def expect_partial(self):
        return self

    def run_restore_ops(self, session=None):
        """Nothing to run."""

    def initialize_or_restore(self, session=None):
        """Nothing to run: variables are initialized when made."""


# ---- tf.train.Checkpoint ------------------------------------------------------------------

class CheckpointOptions(object):
    """TF's options for saving and restoring (`tf.train.CheckpointOptions`): accepted, with
    no effect (one device, synchronous writes)."""

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 experimental_write_callbacks=None, enable_async=False,
                 experimental_skip_slot_variables=False, experimental_sharding_callback=None):
        self.experimental_io_device = experimental_io_device
        self.enable_async = enable_async or experimental_enable_async_checkpoint


class Checkpoint(trackable.AutoTrackable):
    """Saves and restores the objects given (`tf.train.Checkpoint`).

    # Arguments
        root: an object whose graph is the checkpoint's (its children at the top), or None.
        **kwargs: objects (variables, modules, layers, models, optimizers, iterators, and
            lists and dicts of them) saved under their keyword's name, as attributes of the
            checkpoint (with `root`, also children of the root).

    # Raises
        ValueError: for a keyword value that cannot be saved.
    """

    def __init__(self, root=None, **kwargs):
        self._torchk_root = root
        self._torchk_save_counter = None
        for name, value in sorted(kwargs.items()):
            if not trackable.holds_trackable(value):
                raise ValueError('`Checkpoint` was expecting %s to be a trackable object (a '
                                 'variable, module, layer, model, optimizer or iterator, or a '
                                 'list or dict of them), got %r.' % (name, value))
            setattr(self, name, value)
        self._torchk_attached = [(name, getattr(self, name)) for name in sorted(kwargs)]

    @property
    def save_counter(self):
        """How many times `save` ran (an int64 variable, restored with the rest)."""
        if self._torchk_save_counter is None:
            self._torchk_save_counter = Variable(0, dtype='int64', trainable=False,
                                                 name='save_counter')
            trackable.child_added(self, 'save_counter', self._torchk_save_counter)
        return self._torchk_save_counter

    def _torchk_graph_root(self):
        """(root, extra children) of the saved graph."""
        counter = ([('save_counter', self._torchk_save_counter)]
                   if self._torchk_save_counter is not None else [])
        if self._torchk_root is None:
            return self, []
        return self._torchk_root, self._torchk_attached + counter

    def write(self, file_prefix, options=None):
        """Writes the checkpoint at `file_prefix` (no numbering, no state file).

        # Returns
            The prefix written.
        """
        root, extra = self._torchk_graph_root()
        return write_object_graph(root, os.fspath(file_prefix), extra)

    def save(self, file_prefix, options=None):
        """Counts a save (`save_counter`), writes `<file_prefix>-<count>` and names it the
        latest in its folder's state file.

        # Returns
            The prefix written.
        """
        counter = self.save_counter
        with torch.no_grad():
            counter.add_(1)
        path = self.write('%s-%d' % (os.fspath(file_prefix), int(counter)))
        record_latest(path)
        return path

    def read(self, save_path, options=None):
        """Restores a checkpoint written by `write` (see `restore`); `save_counter` is not
        expected in it."""
        if save_path is None:
            return InitializationOnlyStatus()
        root, extra = self._torchk_graph_root()
        return restore_object_graph(root, save_path, extra)

    def restore(self, save_path, options=None):
        """Restores the checkpoint `save_path` (a prefix, as `save` and `latest_checkpoint`
        give it, or a SavedModel folder); objects made later get their values when made.

        # Returns
            A `CheckpointLoadStatus` (`InitializationOnlyStatus` for None).
        """
        if save_path is None:
            return InitializationOnlyStatus()
        self.save_counter  # restored with the rest  # noqa: B018
        return self.read(save_path, options)


def _checkpoint_children(checkpoint):
    counter = checkpoint._torchk_save_counter
    return checkpoint._trackable_attributes() + (
        [('save_counter', counter)] if counter is not None else [])


trackable.register_view(Checkpoint, trackable.View(children=_checkpoint_children))


# ---- tf.train.CheckpointManager -----------------------------------------------------------

def _delete_checkpoint(prefix):
    for path in [prefix + '.index'] + glob.glob(glob.escape(prefix) + '.data-?????-of-?????'):
        if os.path.exists(path):
            os.remove(path)


class CheckpointManager(object):
    """Numbered checkpoints in a folder, the oldest deleted past `max_to_keep`
    (`tf.train.CheckpointManager`).

    # Arguments
        checkpoint: the `tf.train.Checkpoint` to save and restore.
        directory: the folder (made on the first save).
        max_to_keep: how many checkpoints to keep (None: all).
        keep_checkpoint_every_n_hours: keep for good one checkpoint per this many hours.
        checkpoint_name: the prefix of the files (`ckpt` → `ckpt-1`, `ckpt-2`, ...).
        step_counter: a variable counting steps, for `checkpoint_interval`.
        checkpoint_interval: save only when `step_counter` advanced this much since the last
            save.
        init_fn: called by `restore_or_initialize` when there is no checkpoint.

    # Raises
        ValueError: for a `max_to_keep` below 1, or a `checkpoint_interval` without
            `step_counter`.
    """

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name='ckpt', step_counter=None, checkpoint_interval=None,
                 init_fn=None):
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError('Expected a positive integer or `None` for `max_to_keep`, got %d.'
                             % max_to_keep)
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError('`step_counter` should be passed if `checkpoint_interval` is not '
                             'None.')
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_every_seconds = (None if keep_checkpoint_every_n_hours is None
                                    else keep_checkpoint_every_n_hours * 3600.)
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_checkpoint_step = None
        self._kept = collections.OrderedDict()
        self._latest = None
        state = object_graph.read_state(self._directory)
        now = time.time()
        self._last_preserved = now
        if state is not None:
            timestamps = state.all_model_checkpoint_timestamps
            for i, path in enumerate(state.all_model_checkpoint_paths):
                path = os.path.join(self._directory, path)
                if os.path.isfile(path + '.index'):
                    self._kept[path] = timestamps[i] if i < len(timestamps) else now
            latest = os.path.join(self._directory, state.model_checkpoint_path)
            if state.model_checkpoint_path and os.path.isfile(latest + '.index'):
                self._latest = latest
                self._kept.setdefault(latest, now)
            if state.last_preserved_timestamp is not None:
                self._last_preserved = state.last_preserved_timestamp

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    @property
    def latest_checkpoint(self):
        """The prefix of the latest checkpoint, or None."""
        return self._latest

    @property
    def checkpoints(self):
        """The prefixes of the checkpoints kept, oldest first."""
        return list(self._kept)

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Writes a numbered checkpoint (`<checkpoint_name>-<n>`, n the checkpoint's
        `save_counter` after counting this save, or `checkpoint_number`), deletes the oldest
        past `max_to_keep` and updates the folder's state file.

        # Returns
            The prefix written, or None when `checkpoint_interval` says not yet.
        """
        if self._checkpoint_interval is not None and check_interval:
            step = int(self._step_counter)
            if (self._last_checkpoint_step is not None
                    and step < self._last_checkpoint_step + self._checkpoint_interval):
                return None
            self._last_checkpoint_step = step
        counter = self._checkpoint.save_counter
        with torch.no_grad():
            counter.add_(1)
        number = int(counter) if checkpoint_number is None else int(checkpoint_number)
        path = self._checkpoint.write('%s-%d' % (self._prefix, number))
        self._kept.pop(path, None)
        self._kept[path] = time.time()
        self._latest = path
        self._sweep()
        object_graph.write_state(self._directory, object_graph.CheckpointState(
            _relative(path, self._directory),
            [_relative(p, self._directory) for p in self._kept],
            list(self._kept.values()), self._last_preserved))
        return path

    def _sweep(self):
        if self._max_to_keep is None:
            return
        while len(self._kept) > self._max_to_keep:
            path, timestamp = self._kept.popitem(last=False)
            if (self._keep_every_seconds is not None
                    and timestamp - self._last_preserved >= self._keep_every_seconds):
                self._last_preserved = timestamp
                continue
            _delete_checkpoint(path)

    def restore_or_initialize(self):
        """Restores the latest checkpoint if there is one (returning its prefix), else calls
        `init_fn` (returning None)."""
        if self._latest is not None:
            self._checkpoint.restore(self._latest)
            return self._latest
        if self._init_fn is not None:
            self._init_fn()
        return None


train = Namespace('tf.train', {
    'Checkpoint': Checkpoint, 'CheckpointManager': CheckpointManager,
    'CheckpointOptions': CheckpointOptions, 'latest_checkpoint': latest_checkpoint,
    'get_checkpoint_state': get_checkpoint_state, 'list_variables': list_variables,
    'load_variable': load_variable, 'load_checkpoint': load_checkpoint,
})
