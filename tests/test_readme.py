"""Every README snippet marked ``<!-- tested snippet -->`` runs as written, on a tiny model.

Snippets find "the model the main command trained" with ``glob("runs/quick/models/joint-seed42-*")``;
here that path is a tiny trained joint model in a temporary working directory. The heads snippet
(``<!-- tested snippet: heads -->``) uses names the surrounding text defines; the test supplies them.
"""

import re
import shutil
from pathlib import Path

import pytest
import torch

from .test_pipeline import trained_dir  # noqa: F401  (module-scoped fixture: a tiny overfitted joint model)

README = Path(__file__).resolve().parents[1] / "README.md"
SNIPPET = re.compile(r"<!-- tested snippet(?:: (?P<name>[\w-]+))? -->\n```python\n(?P<code>.*?)```", re.S)


def snippets() -> list[tuple[str, str]]:
    found = [(m.group("name") or f"line {README.read_text()[: m.start()].count(chr(10)) + 1}", m.group("code"))
             for m in SNIPPET.finditer(README.read_text(encoding="utf-8"))]
    assert len(found) >= 5, "the README lost its tested snippets"
    return found


def heads_namespace() -> dict:
    """What the text around the heads snippet names: any encoder's states and the labels."""
    torch.manual_seed(0)
    batch, seq, hidden_size = 2, 7, 16
    tag_mask = torch.zeros(batch, seq, dtype=torch.long)
    tag_mask[:, 2:] = 1
    bio_targets = torch.full((batch, seq), 2)
    bio_targets[0, 3], bio_targets[0, 4] = 0, 1
    return {
        "hidden_size": hidden_size, "states": torch.randn(batch, seq, hidden_size, requires_grad=True),
        "bio_targets": bio_targets, "tag_mask": tag_mask, "start_positions": torch.tensor([3, 0]),
        "end_positions": torch.tensor([4, 0]), "attention_mask": torch.ones(batch, seq, dtype=torch.long),
    }


@pytest.mark.parametrize("name,code", snippets(), ids=[name for name, _ in snippets()])
def test_readme_snippet_runs_as_written(name, code, trained_dir, tmp_path, monkeypatch):  # noqa: F811
    models = tmp_path / "runs" / "quick" / "models"
    models.mkdir(parents=True)
    shutil.copytree(trained_dir, models / "joint-seed42-0123456789ab")
    monkeypatch.chdir(tmp_path)
    namespace = heads_namespace() if name == "heads" else {}
    exec(compile(code, f"README.md ({name})", "exec"), namespace)  # noqa: S102
    if name == "heads":
        namespace["loss"].backward()
        assert torch.isfinite(namespace["loss"]) and namespace["states"].grad is not None
