"""The TensorFlow oracle (tests/oracle/oracle.py) runs only where tensorflow-cpu and tf_keras are
installed (`pip install -e '.[oracle]'`, .ci/run's last step); each module skips otherwise.

TensorFlow reads its environment when it is first imported: only errors in its log, and the
Keras 2 it pairs with is tf_keras (never Keras 3, which would shadow Keras 2.3.1).
"""
import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')

from strategies import load_profile  # noqa: E402 (after the environment is set)

load_profile()
