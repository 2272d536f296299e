"""`tf.keras.experimental`: the learning-rate schedules tf.keras 2.x still exports here
(`CosineDecay`, `CosineDecayRestarts`, also in `optimizers.schedules`)."""
from ._facade import reexport
from .optimizers.schedules import CosineDecay, CosineDecayRestarts  # noqa: F401

reexport(globals(), None)
