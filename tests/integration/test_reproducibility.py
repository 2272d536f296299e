"""Reproducibility as under Keras' TF backend: `np.random.seed(n)` alone (the Keras FAQ recipe)
gives the same initial weights, dropout masks and trained weights in two fresh processes."""
import json

from test_keras_compat import check, run_python

PROGRAM = '''
import json
import numpy as np
from keras import backend as K
from keras.layers import Dense, Dropout
from keras.models import Sequential


def run(seed):
    np.random.seed(seed)
    model = Sequential([Dense(16, activation='relu', input_shape=(8,)), Dropout(0.5),
                        Dense(3, activation='softmax')])
    model.compile('adam', 'sparse_categorical_crossentropy')
    initial = [w.tolist() for w in model.get_weights()]
    x = np.random.rand(64, 8).astype('float32')
    y = (x[:, 0] * 3).astype('int64') % 3
    mask = K.function([model.input, K.learning_phase()], [model.layers[1].output])
    masks = [mask([np.ones((4, 8), 'float32'), 1])[0].tolist() for _ in range(2)]
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    return {'initial': initial, 'masks': masks,
            'trained': [w.tolist() for w in model.get_weights()]}


print(json.dumps([run(7), run(8)]))
'''


def test_numpy_seed_alone_reproduces_weights_masks_and_training(tmp_path):
    (first, other), (second, _) = [json.loads(check(run_python(tmp_path, PROGRAM)).splitlines()[-1])
                                   for _ in range(2)]
    assert first == second
    assert first['initial'] != other['initial'] and first['masks'] != other['masks']
    assert first['trained'] != other['trained']
    # Two runs of the dropout function in one process draw different masks, as in TF.
    assert first['masks'][0] != first['masks'][1]
    assert first['trained'] != first['initial']
