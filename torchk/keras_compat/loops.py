"""The loop around the step, faster: overrides of Keras 2.3.1's training loop
(`torchk.overrides`) that compute what Keras computes, with less Python and numpy per batch.

- `slicing_batches_as_views`: `fit`, `evaluate` and `predict` on arrays cut batches of
  consecutive samples as views (Keras copied each through a list of indices).
- `call_batch_hook`: the callback timing of each batch takes the median of ten floats without
  numpy.
"""
import statistics
import time
import warnings

import numpy as np

def slicing_batches_as_views(keras_slice_arrays):
    """Override of `keras.engine.training_arrays.slice_arrays`: `fit_loop`, `test_loop` and
    `predict_loop` cut each batch out of the arrays with
    `slice_arrays(arrays, batch_ids)` (engine/training_arrays.py:182, 185, 327, 441), which
    (utils/generic_utils.py:553-555) turns the index array into a list for h5py's sake and
    indexes with it: a copy through a Python list of ints, about as long as a small model's
    step. Here consecutive indices (every batch unless `shuffle=True`) become a slice, a view
    with no copy, and other index arrays index numpy arrays directly; anything else (h5py
    datasets) is cut as Keras cuts it."""
    def slice_arrays(arrays, start=None, stop=None):
        if not (isinstance(start, np.ndarray) and start.ndim == 1 and len(start)
                and stop is None):
            return keras_slice_arrays(arrays, start, stop)
        first = int(start[0])
        consecutive = (int(start[-1]) - first == len(start) - 1
                       and bool((start[1:] - start[:-1] == 1).all()))

        def cut(x):
            if x is None:
                return None
            if consecutive:
                return x[first:first + len(start)]
            if isinstance(x, np.ndarray):
                return x[start]
            return keras_slice_arrays(x, start)
        return [cut(x) for x in arrays] if isinstance(arrays, list) else cut(arrays)
    return slice_arrays


def call_batch_hook(self, mode, hook, batch, logs=None):
    """Override of Keras 2.3's `CallbackList._call_batch_hook` (callbacks/callbacks.py:70-101),
    which takes `np.median` of the last ten callback durations twice per batch, to warn about
    slow callbacks: an array conversion and a partition costing more than a small model's loop
    around its step. This one does what Keras' does (the same timings, the same warning) with
    `statistics.median` of those ten floats (Keras 2.2 has no batch timing)."""
    if not self.callbacks:
        return
    name = 'on_%s_batch_%s' % (mode, hook)
    if hook == 'end':
        if not hasattr(self, '_t_enter_batch'):
            self._t_enter_batch = time.time()
        self._delta_t_batch = time.time() - self._t_enter_batch
    logs = logs or {}
    started = time.time()
    for callback in self.callbacks:
        getattr(callback, name)(batch, logs)
    durations = self._delta_ts[name]
    durations.append(time.time() - started)
    median = statistics.median(durations)
    if 0. < 0.95 * self._delta_t_batch < median and median > 0.1:
        warnings.warn('Method (%s) is slow compared to the batch update (%f). Check your '
                      'callbacks.' % (name, median), RuntimeWarning)
    if hook == 'begin':
        self._t_enter_batch = time.time()
