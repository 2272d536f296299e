"""A Jupyter notebook as a Python script, its code unchanged.

The code cells are concatenated in order, each after a `# %% cell N` comment. What is not
Python is dropped, as IPython would take it away before running the cell:
- a line that starts (at column 0) with `!` (a shell command) or `%` (a line magic), with
  the lines it continues with a trailing backslash;
- a cell that starts with a cell magic (`%%bash`, `%%capture`, ...), whole; except
  `%%writefile NAME`, whose text becomes the file NAME (`Script.files`: the runner writes it
  into the scratch directory before the script runs; `-a` appends), and `%%time`, whose
  body IPython runs as Python (it only times it) and which stays without its first line.
As IPython does, a cell whose first line is indented is dedented by that indentation first.
"""
import collections
import json

Script = collections.namedtuple('Script', ['code', 'files', 'dropped'])
Script.__doc__ = """A converted notebook.

`code`: the script's text; `files`: {name: text} of its `%%writefile` cells, in order;
`dropped`: the dropped lines and cell magics, for the record."""

_TIMING_MAGICS = ('%%time',)


def _source(cell):
    source = cell.get('source', '')
    return ''.join(source) if isinstance(source, list) else source


def _dedent(lines):
    """IPython's leading-indent rule: the first line's indentation leaves every line that
    starts with it."""
    first = next((line for line in lines if line.strip()), '')
    indent = first[:len(first) - len(first.lstrip())]
    if not indent:
        return lines
    return [line[len(indent):] if line.startswith(indent) else line for line in lines]


def _drop_escapes(lines, dropped):
    kept = []
    continued = False
    for line in lines:
        if continued or line[:1] in ('!', '%'):
            dropped.append(line)
            continued = line.rstrip().endswith('\\')
        else:
            kept.append(line)
    return kept


def convert(notebook):
    """Converts a notebook's JSON (a dict, as `json.load` gives it) to a `Script`.

    # Arguments
        notebook: the parsed `.ipynb` file.

    # Returns
        A `Script`.

    # Raises
        ValueError: if `notebook` has no `cells` list.
    """
    cells = notebook.get('cells') if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ValueError('A notebook needs a "cells" list (nbformat 4); got %r.'
                         % (type(notebook).__name__,))
    parts, files, dropped = [], {}, []
    for number, cell in enumerate(cells, 1):
        if cell.get('cell_type') != 'code':
            continue
        lines = _dedent(_source(cell).splitlines())
        first = next((line for line in lines if line.strip()), '')
        if first.startswith('%%'):
            words = first.split()
            dropped.append(first)
            if words[0] == '%%writefile' and len(words) > 1:
                append = '-a' in words[1:-1]
                body = '\n'.join(lines[lines.index(first) + 1:]) + '\n'
                files[words[-1]] = (files.get(words[-1], '') if append else '') + body
                continue
            if words[0] not in _TIMING_MAGICS:
                continue
            lines = lines[lines.index(first) + 1:]
        code = '\n'.join(_drop_escapes(lines, dropped)).rstrip()
        parts.append('# %%%% cell %d\n%s\n' % (number, code))
    return Script('\n'.join(parts), files, dropped)


def convert_file(path):
    """`convert` of the notebook file at `path`."""
    with open(path, encoding='utf-8') as f:
        return convert(json.load(f))
