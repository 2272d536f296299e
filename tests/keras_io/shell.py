"""keras-io's shell cells, run as a reader runs them, offline.

A keras-io script keeps a notebook's shell commands in docstrings that start with `shell`
(`curl -O URL`, `unzip -q FILE`, `rm -r DIR`); the script itself never runs them. The
runner runs them, in order, with bash in the script's scratch directory before the script
starts, with `curl` and `wget` answered by the stand-ins: on the cells' PATH they are this
module (`python shell.py curl ARGS...`), which writes `standins.content(url)` where the real
tool would write the download, and fails as curl does for a URL without a stand-in.
"""
import ast
import os
import stat
import subprocess
import sys
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
_CURL_COULD_NOT_RESOLVE = 6


def shell_cells(source):
    """The shell cells of a keras-io script's text: their commands, a notebook's `!` before
    a command dropped."""
    cells = []
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str) and node.value.value.startswith('shell')):
            lines = node.value.value.splitlines()[1:]
            cells.append('\n'.join(line.strip().lstrip('!') for line in lines) + '\n')
    return cells


def _fetch_options(tool, args):
    """`(url, output)` of a curl or wget command line: output a file name, or None for
    curl's standard output."""
    url, output, remote_name = None, None, tool == 'wget'
    arguments = iter(args)
    for arg in arguments:
        if arg.startswith('--'):
            if arg in ('--output', '--output-document'):
                output = next(arguments)
            elif arg == '--remote-name':
                remote_name = True
        elif arg.startswith('-') and len(arg) > 1:
            letters = arg[1:]
            if (tool == 'curl' and 'o' in letters) or (tool == 'wget' and 'O' in letters):
                output = next(arguments)
            elif tool == 'curl' and 'O' in letters:
                remote_name = True
        else:
            url = arg
    if url is None:
        raise ValueError('%s: no URL in %r' % (tool, args))
    if output is None and remote_name:
        output = os.path.basename(urllib.parse.urlsplit(url).path)
    return url, output


def fetch(tool, args):
    """Serves one `curl` or `wget` command line from the stand-ins; returns its exit
    status."""
    sys.path.insert(0, HERE)
    import standins
    url, output = _fetch_options(tool, args)
    try:
        data = standins.content(url)
    except KeyError as error:
        print('%s (offline stand-in): %s' % (tool, error.args[0]), file=sys.stderr)
        return _CURL_COULD_NOT_RESOLVE
    if output is None or output == '-':
        sys.stdout.buffer.write(data)
    else:
        with open(output, 'wb') as f:
            f.write(data)
    return 0


def run_cells(cells, directory, extra_paths=()):
    """Runs shell cells in `directory` with bash, `curl` and `wget` served by `fetch`.

    # Arguments
        cells: the cells' commands (`shell_cells`).
        directory: where they run (the script's scratch directory).
        extra_paths: directories the stand-ins need on PYTHONPATH (Pillow's, for images).

    # Returns
        The cells' commands and output, for the run's log.
    """
    tools = os.path.join(directory, '.standin-tools')
    os.makedirs(tools, exist_ok=True)
    for tool in ('curl', 'wget'):
        path = os.path.join(tools, tool)
        with open(path, 'w') as f:
            f.write('#!/bin/sh\nexec "%s" "%s" %s "$@"\n' % (sys.executable,
                                                             os.path.abspath(__file__), tool))
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    env = dict(os.environ, PATH=tools + os.pathsep + os.environ.get('PATH', ''),
               PYTHONPATH=os.pathsep.join([HERE] + list(extra_paths)))
    log = []
    for cell in cells:
        done = subprocess.run(['bash', '-c', cell], cwd=directory, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors='replace')
        log.append('$ %s\n%s(shell cell exit status %d)\n' % (
            cell.strip().replace('\n', '\n$ '), done.stdout, done.returncode))
    return ''.join(log)


if __name__ == '__main__':
    sys.exit(fetch(sys.argv[1], sys.argv[2:]))
