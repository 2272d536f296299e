"""The oracle suite itself, checked without TensorFlow: it covers every backend function of
Keras 2.3.1, and torchk never imports TensorFlow (TF is a test-time oracle only)."""
import json
import os
import subprocess
import sys

from oracle_coverage import report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_backend_function_is_compared_with_tf():
    coverage = report()
    print('oracle coverage:', json.dumps(coverage))
    assert coverage['missing'] == [] and coverage['unknown'] == [], coverage
    assert coverage['covered'] == coverage['total'] == 147


CHILD = '''
import sys
import numpy as np
import torchk
from torchk import core as K
x = K.placeholder(shape=(None, 3))
w = K.variable(np.ones((3, 2)))
K.function([x], [K.softmax(K.dot(x, w))] + K.gradients(K.sum(K.dot(x, w)), [w]))([np.ones((4, 3))])
print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'tf_keras')))
'''


def test_torchk_never_imports_tensorflow():
    # Keras 2.3.1 itself does, where TF is installed: saving.py imports TF's file_io for gs://.
    env = dict(os.environ, PYTHONPATH=ROOT, TORCHK_DEVICE='cpu')
    result = subprocess.run([sys.executable, '-c', CHILD], env=env, capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == '[]', result.stdout
