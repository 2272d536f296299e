"""tests/tf_docs/convert.py: a notebook's code cells as a script, unchanged, without what
IPython would not run as Python."""
import ast
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402


def _notebook(*cells):
    """A notebook of `cells`: a str is a code cell, ('markdown', text) a Markdown cell."""
    built = []
    for cell in cells:
        kind, text = cell if isinstance(cell, tuple) else ('code', cell)
        built.append({'cell_type': kind, 'metadata': {},
                      'source': text.splitlines(keepends=True)})
    return {'cells': built, 'metadata': {}, 'nbformat': 4, 'nbformat_minor': 0}


def _code_lines(script):
    return [line for line in script.code.splitlines()
            if line and not line.startswith('# %% cell')]


def test_code_cells_are_concatenated_in_order_without_markdown():
    script = convert.convert(_notebook('import numpy as np', ('markdown', '# Title\ntext'),
                                       'x = np.arange(3)\nprint(x)'))
    assert _code_lines(script) == ['import numpy as np', 'x = np.arange(3)', 'print(x)']
    assert '# %% cell 1\n' in script.code and '# %% cell 3\n' in script.code
    assert script.files == {}
    ast.parse(script.code)


def test_a_cell_given_as_one_string_converts_as_its_lines():
    notebook = {'cells': [{'cell_type': 'code', 'source': 'a = 1\nb = a + 1\n'}]}
    assert _code_lines(convert.convert(notebook)) == ['a = 1', 'b = a + 1']


def test_shell_commands_and_line_magics_are_dropped_with_their_continuations():
    script = convert.convert(_notebook(
        '!pip install -q seaborn\n%matplotlib inline\nimport os',
        '!saved_model_cli show --dir /tmp/m \\\n  --tag_set serve \\\n  --all\nx = 1',
        "print('%d'\n      %(3))"))
    assert _code_lines(script) == ['import os', 'x = 1', "print('%d'", '      %(3))']
    assert script.dropped == ['!pip install -q seaborn', '%matplotlib inline',
                              '!saved_model_cli show --dir /tmp/m \\', '  --tag_set serve \\',
                              '  --all']
    ast.parse(script.code)


@pytest.mark.parametrize('magic', ['%%bash\npip list | grep tensorflow',
                                   '%%capture\nimport tensorflow', '%%html\n<b>x</b>'])
def test_a_cell_magic_drops_its_cell(magic):
    script = convert.convert(_notebook('a = 1', magic, 'b = 2'))
    assert _code_lines(script) == ['a = 1', 'b = 2']
    assert script.dropped == [magic.splitlines()[0]]


def test_time_cell_magic_keeps_the_python_it_times():
    script = convert.convert(_notebook('%%time\nhistory = model.fit(x)\nprint(history)'))
    assert _code_lines(script) == ['history = model.fit(x)', 'print(history)']
    assert script.dropped == ['%%time']


def test_writefile_cells_become_files_and_append_with_a():
    script = convert.convert(_notebook('%%writefile missing.csv\n1,2\n,3',
                                       '%%writefile -a missing.csv\n4,',
                                       '%%writefile mod.py\nX = 1', 'import mod'))
    assert script.files == {'missing.csv': '1,2\n,3\n4,\n', 'mod.py': 'X = 1\n'}
    assert _code_lines(script) == ['import mod']


def test_an_indented_cell_is_dedented_as_ipython_does():
    script = convert.convert(_notebook(' for x in range(3):\n   print(x)\n'))
    assert _code_lines(script) == ['for x in range(3):', '  print(x)']
    ast.parse(script.code)


@pytest.mark.parametrize('notebook', [[], {'worksheets': []}, {'cells': 'x'}])
def test_not_a_notebook_raises_value_error(notebook):
    with pytest.raises(ValueError, match='cells'):
        convert.convert(notebook)
