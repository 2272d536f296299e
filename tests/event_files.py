"""Reading TensorBoard logs back with TensorBoard's own reader, for the callback tests."""
import io

import numpy as np
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def read_events(log_dir):
    """An `EventAccumulator` over `log_dir`, keeping every event (no sampling)."""
    events = EventAccumulator(str(log_dir), size_guidance={
        'scalars': 0, 'histograms': 0, 'images': 0, 'tensors': 0}, purge_orphaned_data=False)
    events.Reload()
    return events


def scalars(events, tag):
    """[(step, value)] of the scalar `tag`, in the order written."""
    return [(e.step, e.value) for e in events.Scalars(tag)]


def histogram_steps(events, tag):
    return [e.step for e in events.Histograms(tag)]


def histogram_stats(events, tag, step):
    """(count, sum, min, max) of the histogram `tag` at `step`."""
    (value,) = [e.histogram_value for e in events.Histograms(tag) if e.step == step]
    return value.num, value.sum, value.min, value.max


def stats(array):
    array = np.asarray(array, dtype='float64')
    return array.size, array.sum(), array.min(), array.max()


def image(events, tag, step):
    """The image `tag` at `step`, as a (height, width, channels) uint8 array."""
    (event,) = [e for e in events.Images(tag) if e.step == step]
    pixels = np.asarray(Image.open(io.BytesIO(event.encoded_image_string)))
    return pixels.reshape(event.height, event.width, -1)
