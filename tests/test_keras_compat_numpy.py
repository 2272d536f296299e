"""The numpy names of Keras 2 era code that numpy 1.24 and 2.0 removed, restored by
`torchk.keras_compat` when Keras is imported, and left alone with TORCHK_KERAS_COMPAT=0."""
from test_keras_compat import check, run_python

PROGRAM = '''
import warnings
import numpy as np
warnings.simplefilter('error')  # looking the names up must not make numpy warn
missing = sorted(n for n in ('float', 'int', 'object', 'str', 'unicode', 'complex', 'float_',
                             'NaN', 'alltrue') if n not in vars(np))
import keras
print('missing before', missing)
print('float', np.array([1.5], dtype=np.float).dtype, np.array([2.7]).astype(np.int).tolist())
print('names', np.object is object, np.str is str, np.long(3) == 3, np.unicode is str,
      np.complex is complex, np.bool(1) == True, np.float_ is np.float64,
      np.isnan(np.NaN), bool(np.alltrue([True, True])), np.product([2, 3]) == 6)
'''


def test_numpy_1_names_restored_when_keras_is_imported(tmp_path):
    out = check(run_python(tmp_path, PROGRAM))
    assert "missing before ['NaN', 'alltrue', 'complex', 'float', 'float_', 'int', 'object', " \
           "'str', 'unicode']" in out
    assert 'float float64 [2]' in out
    assert 'names True True True True True True True True True True' in out


def test_numpy_1_names_stay_removed_with_compat_off(tmp_path):
    # With every fix off Keras itself cannot be imported on Python 3.11 (collections.Iterable).
    out = check(run_python(tmp_path, '''
        import numpy as np
        try:
            import keras
        except ImportError as e:
            print('keras', e)
        print('restored', [n for n in ('float', 'int', 'object', 'NaN') if n in vars(np)])
    ''', TORCHK_KERAS_COMPAT='0'))
    assert "keras cannot import name 'Iterable'" in out and 'restored []' in out
