"""tqdm's own ``TQDM_*`` variables, which it reads when it is first imported: one it cannot read is refused in one line
before any work, not left to end the command in tqdm's traceback where a library first imports it."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import SAMPLE_V1
from .test_early_refusals import ROOT, refused


def test_a_bar_variable_tqdm_cannot_read_is_refused_before_any_work(tmp_path):
    """``TQDM_MININTERVAL=abc`` ended predict in tqdm's ``could not convert string to float`` traceback once a module
    that imports tqdm loaded; the line comes first, torch not loaded, nothing written."""
    argv = ["predict", "--model", str(tmp_path / "model"), "--data", str(SAMPLE_V1), "--output", str(tmp_path / "p.json")]
    line = ("error: tqdm cannot read its settings TQDM_MININTERVAL='abc' (could not convert string to float: 'abc'): "
            "correct them, or unset them")
    assert refused([argv], tmp_path, TQDM_MININTERVAL="abc") == {"lines": [[2, line]], "heavy": []}
    assert not (tmp_path / "p.json").exists()


def test_settings_tqdm_reads_pass_and_none_set_imports_nothing():
    """Valid settings (a number, a whole number, a text, a keyword tqdm has not) pass; with none set, tqdm stays unloaded."""
    check = "import sys; from bio_mrc.cli.bar_variables import check_bar_variables; check_bar_variables(); print('tqdm' in sys.modules)"
    clean = {name: value for name, value in os.environ.items() if not name.startswith("TQDM_")}
    clean["PYTHONPATH"] = str(ROOT)
    settings = {"TQDM_MININTERVAL": "5", "TQDM_NCOLS": "80", "TQDM_DESC": "any text", "TQDM_NO_SUCH_KEYWORD": "x"}
    passed = subprocess.run([sys.executable, "-c", check], env={**clean, **settings}, capture_output=True, text=True)
    unset = subprocess.run([sys.executable, "-c", check], env=clean, capture_output=True, text=True)
    assert (passed.returncode, passed.stdout, unset.returncode, unset.stdout) == (0, "True\n", 0, "False\n"), passed.stderr + unset.stderr
