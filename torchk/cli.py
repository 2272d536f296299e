"""`python -m torchk`: point Keras at torchk, and check that it works.

    python -m torchk configure [--device cpu|cuda|cuda:1] [--image-data-format FORMAT]
    python -m torchk info
    python -m torchk export MODEL.h5 OUT.pt2|OUT.onnx [--opset N] [--static-batch N]
    python -m torchk run SCRIPT [ARGS...]

`configure` writes `"backend": "torchk.core"` into keras.json (in `$KERAS_HOME`, else
`~/.keras`), creating it with Keras' defaults if needed and keeping every other key.
`info` prints the versions, the device, floatx, data format and mixed precision policy
(`torchk.mixed_precision`), and trains a small model for one step on synthetic data, as a
self-check. `export` loads a Keras model saved with
`model.save` and writes its inference graph as a `torch.export` program or an ONNX model
(`torchk.export.export`). `run` runs a tf.keras 2 script as `python SCRIPT ARGS...` would,
with `tensorflow`, `tensorflow.keras` and `tf_keras` served by torchk (`torchk.tf.hook`).
"""
import argparse
import json
import os
import runpy
import subprocess
import sys
import time

_KERAS_DEFAULTS = {'floatx': 'float32', 'epsilon': 1e-07, 'image_data_format': 'channels_last'}


def configure(device=None, image_data_format=None):
    """Writes torchk as Keras' backend into keras.json; returns the file's path.

    # Arguments
        device: optional torch device name stored as `"torchk_device"` (validated).
        image_data_format: optional `'channels_first'` or `'channels_last'`.

    # Raises
        ValueError: for an invalid device or data format, or a keras.json that is not JSON.
    """
    import torch
    from . import config
    path = config._keras_json_path()
    settings = dict(_KERAS_DEFAULTS)
    settings.update(config._read_keras_json())
    settings['backend'] = 'torchk.core'
    if device is not None:
        try:
            torch.device(device)
        except RuntimeError as e:
            raise ValueError('Invalid device %r: %s' % (device, e)) from e
        settings['torchk_device'] = device
    if image_data_format is not None:
        settings['image_data_format'] = config._check_data_format(image_data_format)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(settings, f, indent=4)
        f.write('\n')
    return path


_SELF_CHECK = '''
import time
import numpy as np
import keras
from keras import backend as K
from keras.layers import Dense
from keras.models import Sequential

np.random.seed(0)
x = np.random.rand(64, 8).astype('float32')
y = (x.sum(axis=1, keepdims=True) > 4).astype('float32')
model = Sequential([Dense(16, activation='relu', input_shape=(8,)),
                    Dense(1, activation='sigmoid')])
model.compile('adam', 'binary_crossentropy')
start = time.time()
before = model.train_on_batch(x, y)
after = model.evaluate(x, y, verbose=0)
print('keras', keras.__version__)
print('backend', K.backend())
print('floatx', K.floatx())
print('image_data_format', K.image_data_format())
from torchk import mixed_precision
print('mixed_precision', mixed_precision.global_policy().name)
print('self_check', float(before), float(after), time.time() - start)
'''


def info():
    """Prints versions and settings, and runs a one-step training self-check in a new
    interpreter (Keras reads keras.json once per process). Returns 0 on success, else 1."""
    import torch
    import torchk
    from . import config
    print('torchk %s (%s)' % (torchk.__version__, os.path.dirname(torchk.__file__)))
    print('torch %s' % torch.__version__)
    configured = config._read_keras_json().get('backend')
    print('keras.json: %s (backend: %s%s)' % (
        config._keras_json_path(), configured,
        '' if configured == 'torchk.core' else '; run `python -m torchk configure`'))
    device = config.device()
    tf32 = ''
    if device.type == 'cuda':
        tf32 = ('; float32 matmuls and convolutions in TF32 (TORCHK_TF32=0: full float32)'
                if config.tf32_enabled() else '; full float32 (TF32 off)')
    print('device: %s%s' % (device, tf32))
    environment = dict(os.environ, KERAS_BACKEND='torchk.core')
    root = os.path.dirname(os.path.dirname(os.path.abspath(torchk.__file__)))
    environment['PYTHONPATH'] = os.pathsep.join(
        [root] + ([environment['PYTHONPATH']] if environment.get('PYTHONPATH') else []))
    done = subprocess.run([sys.executable, '-c', _SELF_CHECK], env=environment,
                          capture_output=True, text=True)
    if done.returncode != 0:
        print('Keras: could not train on torchk:\n%s' % done.stderr[-3000:])
        return 1
    report = dict(line.split(' ', 1) for line in done.stdout.splitlines() if ' ' in line)
    print('keras %s, backend %s' % (report['keras'], report['backend']))
    print('floatx: %s' % report['floatx'])
    print('image_data_format: %s' % report['image_data_format'])
    print('mixed precision: %s' % _mixed_precision_line(report['mixed_precision']))
    before, after, seconds = (float(v) for v in report['self_check'].split())
    print('self-check: one training step in %.2f s, loss %.4f -> %.4f: OK'
          % (seconds, before, after))
    return 0


def _mixed_precision_line(policy):
    """The policy in effect, where it was chosen, and whether this device computes bfloat16
    natively."""
    from . import config
    from . import mixed_precision
    _, source = config.mixed_precision_setting()
    where = ('from %s' % source if source else
             'the default; set TORCHK_MIXED_PRECISION or keras.json "torchk_mixed_precision"')
    native = 'native' if mixed_precision.native_bfloat16() else 'emulated (slow)'
    return '%s (%s); bfloat16 on %s: %s' % (policy, where, config.device().type, native)


def export(model_path, output_path, opset=None, static_batch=None):
    """Loads a saved Keras model and exports it (see `torchk.export.export`); returns the
    exported program's inputs' and outputs' names, the path of the model's string stage
    (None for a model without text inputs) and the inputs its outputs are."""
    os.environ['KERAS_BACKEND'] = 'torchk.core'
    import keras
    import torch
    from . import export as exporting
    if not os.path.isfile(model_path):
        raise ValueError('No model file at %r.' % model_path)
    model = keras.models.load_model(model_path, compile=False)
    program = exporting.export(model, output_path, opset=opset, static_batch=static_batch)
    inputs = [spec.arg.name for spec in program.graph_signature.input_specs
              if spec.kind == torch.export.graph_signature.InputKind.USER_INPUT]
    numeric = [x for x in model.inputs if keras.backend.dtype(x) != 'string']
    stage = (exporting.string_stage_path(output_path) if len(numeric) < len(model.inputs)
             else None)
    return inputs, exporting.output_names(model), stage, inputs[len(numeric):]


def run(script, args=()):
    """Runs `script` as `python SCRIPT ARGS...` does, with the import hook installed.

    `sys.argv` is `[script, *args]` (`script` made absolute, as `__file__` is by Python),
    `sys.path[0]` the script's folder and `__name__` `'__main__'`. `SystemExit` passes through; another exception prints its traceback from
    the script's frames on (through `sys.excepthook`) and gives exit code 1.

    # Returns
        0 when the script ends normally, 1 when it raised.

    # Raises
        ValueError: if `script` is not a file.
    """
    if not os.path.isfile(script):
        raise ValueError("can't open file %r: no such file" % script)
    from .tf import hook
    hook.install_import_hook()
    sys.argv = [script] + list(args)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    try:
        runpy.run_path(os.path.abspath(script), run_name='__main__')
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as error:  # noqa: B902  (reported as Python reports it, then exit 1)
        error = error.with_traceback(_script_traceback(error.__traceback__, script))
        sys.excepthook(type(error), error, error.__traceback__)
        return 1
    return 0


def _script_traceback(traceback, script):
    """`traceback` from the first frame of `script` on (the launcher's frames dropped)."""
    path = os.path.abspath(script)
    entry = traceback
    while entry is not None and os.path.abspath(entry.tb_frame.f_code.co_filename) != path:
        entry = entry.tb_next
    return entry if entry is not None else traceback


def main(argv=None):
    """Entry point of `python -m torchk`."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ['run'] and len(argv) > 1 and argv[1] not in ('-h', '--help'):
        try:
            return run(argv[1], argv[2:])
        except ValueError as e:
            print('python -m torchk run: error: %s' % e, file=sys.stderr)
            return 2
    parser = argparse.ArgumentParser(prog='python -m torchk', description=__doc__.split('\n')[0])
    commands = parser.add_subparsers(dest='command', required=True)
    configure_parser = commands.add_parser(
        'configure', help='write "backend": "torchk.core" into keras.json')
    configure_parser.add_argument('--device', help='torch device, e.g. cpu, cuda, cuda:1')
    configure_parser.add_argument('--image-data-format',
                                  choices=('channels_last', 'channels_first'))
    commands.add_parser('info', help='print versions and settings, run a self-check')
    export_parser = commands.add_parser(
        'export', help='write a saved Keras model as a torch.export program or ONNX model')
    export_parser.add_argument('model', help='the Keras model file (model.save)')
    export_parser.add_argument('output', help='the file to write: .pt2 or .onnx')
    export_parser.add_argument('--opset', type=int, help='ONNX opset version')
    export_parser.add_argument('--static-batch', type=int, metavar='N',
                               help='fix the batch size to N (dynamic by default)')
    run_parser = commands.add_parser(
        'run', help='run a tf.keras 2 script with tensorflow served by torchk')
    run_parser.add_argument('script', help='the Python script')
    run_parser.add_argument('args', nargs=argparse.REMAINDER, help="the script's arguments")
    args = parser.parse_args(argv)
    if args.command == 'export':
        try:
            inputs, outputs, stage, stage_outputs = export(args.model, args.output,
                                                           args.opset, args.static_batch)
        except ValueError as e:
            parser.error(str(e))
        print('Wrote %s: inputs %s, outputs %s' % (args.output, ', '.join(inputs),
                                                    ', '.join(outputs)))
        if stage is not None:
            print('The string stage stays in Python: wrote %s (its text layers and '
                  'vocabularies); its outputs are the inputs %s.'
                  % (stage, ', '.join(stage_outputs)))
        return 0
    if args.command == 'configure':
        try:
            path = configure(args.device, args.image_data_format)
        except ValueError as e:
            parser.error(str(e))
        print('Keras now uses torchk: "backend": "torchk.core" in %s' % path)
        return 0
    return info()
