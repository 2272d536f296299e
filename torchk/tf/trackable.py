"""TF's object graph over Python objects: what a checkpoint saves, and how it is restored.

An object's children are named edges, as TF's `Trackable`s have them: a `tf.Module`'s (and a
`tf.train.Checkpoint`'s) attributes holding variables, modules, layers, lists and dicts, in
the order they were set; a list's elements (`0`, `1`, ...); a dict's values (by key). Keras
layers, models and optimizers get their children from views the tf.keras facade registers
(`register_view`): a layer's weights by name and its sublayers, a functional model's
`layer-<i>`, an optimizer's `_variables`. A variable has a value (`VARIABLE_VALUE`).

`graph_nodes` lists the objects under a root breadth first, as TF numbers them, each value
keyed by the path through which it is first reached (`object_graph.checkpoint_key`).

A `Restoration` matches a checkpoint's nodes to objects from the root, by the names of the
edges, and assigns each variable its value when it is matched. A node whose object does not
exist yet stays pending on the object that will hold it: when that object gets the child (an
attribute set, a list appended to, a Keras weight created, an optimizer's slots made: their
code calls `child_added` or `refresh`), the child is matched then, as TF's deferred
restoration does.
"""
import collections
import functools
import weakref

import numpy as np
import torch

from .. import variables
from ..saving.object_graph import VALUE_ATTRIBUTE, checkpoint_key


class View(object):
    """How a kind of object appears in the object graph (`register_view`).

    # Arguments
        children: `children(obj)` → `[(local name, child)]` in TF's order (default: none).
        values: `values(obj)` → `[(attribute, full name, numpy value)]` (default: none).
        restore: `restore(obj, attribute, read, key)` sets the value `read()` gives (read
            from the checkpoint, under `key`); returns False for an attribute it does not take
            (default: takes none).
        after_restore: `after_restore(obj, node_id, restoration)`, called once the whole
            graph is matched (an optimizer's slots named by reference), or None.
        aliases: `aliases(obj)` → more `[(local name, child)]` that restoring matches and
            saving does not write (names older files use), or None.
    """

    def __init__(self, children=None, values=None, restore=None, after_restore=None,
                 aliases=None):
        self.children = children or (lambda obj: [])
        self.aliases = aliases or (lambda obj: [])
        self.values = values or (lambda obj: [])
        self.restore = restore or (lambda obj, attribute, read, key: False)
        self.after_restore = after_restore


_VIEWS = {}


def register_view(cls, view):
    """Makes instances of `cls` (and its subclasses without a view of their own) appear in
    the object graph as `view` says."""
    _VIEWS[cls] = view


def view_of(obj):
    """The `View` of `obj`, or None if it is not part of object graphs."""
    for cls in type(obj).__mro__:
        view = _VIEWS.get(cls)
        if view is not None:
            return view
    return None


def is_trackable(value):
    """Whether `value` is saved in checkpoints (has a view)."""
    return view_of(value) is not None


def holds_trackable(value):
    """Whether `value` is trackable, or a list, tuple or dict holding a trackable value."""
    if isinstance(value, (list, tuple)):
        return any(holds_trackable(item) for item in value)
    if isinstance(value, dict):
        return any(holds_trackable(item) for item in value.values())
    return is_trackable(value)


def children(obj):
    """`[(local name, child)]` of `obj` in the object graph."""
    view = view_of(obj)
    return view.children(obj) if view is not None else []


# ---- Variables, lists, dicts --------------------------------------------------------------

def variable_full_name(variable):
    """A variable's name without its `:0`, as TF's checkpoints give it (the name its owner
    gave it for checkpoints, `checkpoint_full_name`, if any: an optimizer's slots)."""
    name = getattr(variable, '_torchk_checkpoint_full_name', None)
    if name is not None:
        return name
    name = getattr(variable, 'name', None) or 'Variable'
    return name[:-2] if name.endswith(':0') else name


def variable_value(variable):
    """A variable's value as numpy (bfloat16 as float32: numpy has no bfloat16)."""
    value = variable.detach()
    if value.dtype == torch.bfloat16:
        value = value.float()
    return value.cpu().numpy()


def assign_restored(variable, value, key):
    """Sets `variable` to the checkpoint's `value` (stored under `key`).

    # Raises
        ValueError: if the shapes differ (TF's message: the key and both shapes).
    """
    value = np.asarray(value)
    if tuple(value.shape) != tuple(variable.shape):
        raise ValueError('Received incompatible tensor with shape %s when attempting to '
                         'restore variable with shape %s and name %s (checkpoint key %r).'
                         % (tuple(value.shape), tuple(variable.shape),
                            getattr(variable, 'name', '?'), key))
    with torch.no_grad():
        variable.copy_(torch.as_tensor(value).to(dtype=variable.dtype))
    return True


def _restore_variable(variable, attribute, read, key):
    if attribute != VALUE_ATTRIBUTE:
        return False
    return assign_restored(variable, read(), key)


register_view(variables.Variable, View(
    values=lambda v: [(VALUE_ATTRIBUTE, variable_full_name(v), variable_value(v))],
    restore=_restore_variable))


def _sequence_children(sequence):
    return [(str(i), item) for i, item in enumerate(sequence) if is_trackable(item)
            or isinstance(item, (list, tuple, dict))]


def _mapping_children(mapping):
    return [(str(key), item) for key, item in mapping.items() if is_trackable(item)
            or isinstance(item, (list, tuple, dict))]


register_view(list, View(children=_sequence_children))
register_view(tuple, View(children=_sequence_children))
register_view(dict, View(children=_mapping_children))


class ListWrapper(list):
    """A list held by a `tf.Module` or `tf.train.Checkpoint` attribute (TF's `ListWrapper`):
    an element added later is matched to a pending checkpoint restoration."""

    def append(self, value):
        super().append(value)
        child_added(self, str(len(self) - 1), value)

    def extend(self, values):
        start = len(self)
        super().extend(values)
        for i in range(start, len(self)):
            child_added(self, str(i), self[i])

    def __iadd__(self, values):
        self.extend(values)
        return self

    def insert(self, index, value):
        super().insert(index, value)
        for i in range(len(self)):
            child_added(self, str(i), self[i])

    def __setitem__(self, index, value):
        super().__setitem__(index, value)
        if isinstance(index, int):
            child_added(self, str(index % len(self)), value)
        else:
            for i in range(len(self)):
                child_added(self, str(i), self[i])

    def __repr__(self):
        return 'ListWrapper(%s)' % list.__repr__(self)


class DictWrapper(dict):
    """A dict held by a `tf.Module` or `tf.train.Checkpoint` attribute (TF's `_DictWrapper`):
    a value set later is matched to a pending checkpoint restoration."""

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        child_added(self, str(key), value)

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]


def wrap(value):
    """`value` as a trackable attribute keeps it: lists and dicts wrapped (a copy that tells
    pending restorations about what is added to it), other values as they are."""
    if type(value) is list:
        return ListWrapper(value)
    if type(value) is dict:
        return DictWrapper(value)
    return value


# Attributes of AutoTrackable objects that are never children.
_INTERNAL_ATTRIBUTES = frozenset(('_name', '_scope_name', '_torchk_root'))


class AutoTrackable(object):
    """An object whose attributes are its children (TF's `AutoTrackable`, the base of
    `tf.Module` and `tf.train.Checkpoint`): lists and dicts set as attributes are wrapped
    (`wrap`), and a value set is matched to a pending restoration of this object."""

    def __setattr__(self, name, value):
        if name not in _INTERNAL_ATTRIBUTES and not name.startswith('_torchk'):
            value = wrap(value)
        super().__setattr__(name, value)
        if _PENDING:
            child_added(self, name, value)

    def _trackable_attributes(self):
        """`[(name, value)]` of the attributes that are children, in the order set."""
        return [(name, value) for name, value in vars(self).items()
                if name not in _INTERNAL_ATTRIBUTES and not name.startswith('_torchk')
                and (is_trackable(value) or isinstance(value, (list, tuple, dict)))]


register_view(AutoTrackable, View(children=lambda obj: obj._trackable_attributes()))


# ---- The graph of a root ------------------------------------------------------------------

def graph_nodes(root, exclude=()):
    """The object graph under `root`, breadth first as TF numbers it.

    # Arguments
        root: the root object.
        exclude: ids of objects left out (a model's optimizer, saved without it).

    # Returns
        (objects, nodes): the objects by node id (the root first), and the nodes for
        `object_graph.write_checkpoint` (children by node id, values keyed by the path through
        which each object is first reached).
    """
    ids = {id(root): 0}
    objects, paths = [root], [()]
    nodes = []
    queue = collections.deque([0])
    while queue:
        node_id = queue.popleft()
        obj = objects[node_id]
        edges = []
        for name, child in children(obj):
            if id(child) in exclude:
                continue
            if id(child) not in ids:
                ids[id(child)] = len(objects)
                objects.append(child)
                paths.append(paths[node_id] + (name,))
                queue.append(ids[id(child)])
            edges.append((name, ids[id(child)]))
        view = view_of(obj)
        values = [(attribute, full_name, checkpoint_key(paths[node_id], attribute), value)
                  for attribute, full_name, value in (view.values(obj) if view else [])]
        nodes.append((edges, values))
    return objects, [{'children': edges, 'values': values} for edges, values in nodes]


# ---- Restoration --------------------------------------------------------------------------

# id(object) → [(weak reference to it, restoration, node id)]: restorations waiting for the
# object's children that do not exist yet.
_PENDING = {}


class Restoration(object):
    """The matching of a checkpoint's nodes to objects (see the module docstring).

    # Arguments
        graph: the checkpoint's `object_graph.ObjectGraph`.

    # Attributes
        graph: the checkpoint.
        objects: `{node id: object}` of the matched nodes (the first object matched).
        consumed: the checkpoint keys whose values were assigned.
    """

    def __init__(self, graph):
        self.graph = graph
        self.objects = {}
        self.consumed = set()
        self.matched_ids = set()
        self._visited = set()
        self._held = []  # keeps matched objects alive, so that their ids stay theirs
        self._after = []
        self._children = {}

    def saved_children(self, node_id):
        """`{local name: node id}` of a node of the checkpoint (read once)."""
        if node_id not in self._children:
            self._children[node_id] = self.graph.children(node_id)
        return self._children[node_id]

    def restore(self, root):
        """Matches the checkpoint's root to `root`, and everything below it."""
        self.match(root, 0)
        self.finish()

    def match(self, obj, node_id):
        """Matches node `node_id` to `obj`: assigns its values, matches its children, and
        leaves the children not there yet pending."""
        if (id(obj), node_id) in self._visited:
            return
        self._visited.add((id(obj), node_id))
        self._held.append(obj)
        self.objects.setdefault(node_id, obj)
        self.matched_ids.add(id(obj))
        view = view_of(obj)
        if view is None:
            return
        node = self.graph.node(node_id)
        for attribute in node.attributes:
            key = attribute.checkpoint_key
            if view.restore(obj, attribute.name, functools.partial(self.graph.read, key),
                            key) is not False:
                self.consumed.add(key)
        saved = self.saved_children(node_id)
        for name, child in view.children(obj) + view.aliases(obj):
            if name in saved:
                self.match(child, saved[name])
        if saved:
            _wait_for_children(obj, self, node_id)
        if view.after_restore is not None:
            self._after.append((obj, node_id, view.after_restore))

    def finish(self):
        """Runs the views' `after_restore` of the objects matched so far."""
        after, self._after = self._after, []
        for obj, node_id, function in after:
            function(obj, node_id, self)

    def rematch(self, obj, node_id):
        """Matches `obj`'s children again (some were made since): new ones get their values;
        those already matched keep theirs."""
        self._visited.discard((id(obj), node_id))
        self.match(obj, node_id)
        self.finish()


def _wait_for_children(obj, restoration, node_id):
    try:
        reference = weakref.ref(obj)
    except TypeError:
        return  # a plain list or dict of a Keras layer: nothing is added to it later
    _PENDING[id(obj)] = [(reference, restoration, node_id)]


def _pending(obj):
    entries = _PENDING.get(id(obj))
    if not entries:
        return []
    alive = [entry for entry in entries if entry[0]() is obj]
    if len(alive) != len(entries):
        if alive:
            _PENDING[id(obj)] = alive
        else:
            del _PENDING[id(obj)]
    return alive


def child_added(parent, name, child):
    """Tells pending restorations of `parent` that it now has `child` under `name`."""
    if not _PENDING:
        return
    for _, restoration, node_id in _pending(parent):
        saved = restoration.saved_children(node_id)
        if name in saved:
            restoration.match(child, saved[name])
            restoration.finish()


def refresh(obj):
    """Matches the children `obj` made since it was restored (an optimizer's slots)."""
    if not _PENDING:
        return
    for _, restoration, node_id in _pending(obj):
        restoration.rematch(obj, node_id)


def forget(obj):
    """Drops the pending restorations of `obj` (a newer restore replaces them)."""
    _PENDING.pop(id(obj), None)
