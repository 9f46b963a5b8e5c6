"""``from transformers import pipeline`` bound before ``import bio_mrc``: that name is transformers' own function, which
``import bio_mrc`` cannot replace, so the task's checks live in its registered loading step and pipeline class."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import untrained_model_folder

ROOT = Path(__file__).resolve().parents[1]

# Each case: pipeline()'s keywords beside model=, device="cpu"; the script prints one line per case.
CASES = {
    "unknown model_kwargs key": {"model_kwargs": {"no_such_key": 1}},
    "a bad kernel name": {"model_kwargs": {"attn_implementation": "nope"}},
    "a revision of a local folder": {"revision": "main"},
    "a bad dtype": {"dtype": "float99"},
    "model_kwargs' dtype": {"model_kwargs": {"dtype": "bfloat16"}},
}
SCRIPT = """
import json, sys
ORDER
from bio_mrc.inference.pipeline import QuietModelLoader
load = QuietModelLoader.from_pretrained
loaded = []
QuietModelLoader.from_pretrained = classmethod(lambda cls, *a, **k: loaded.append(1) or load(*a, **k))
for name, keywords in json.loads(sys.argv[2]).items():
    loaded.clear()
    try:
        qa = pipeline("bio-mrc-qa", model=sys.argv[1], device="cpu", **keywords)
        said = f"answers in {qa.extractor.trained.precision}"
    except Exception as error:
        said = f"{type(error).__name__}: {str(error).splitlines()[0][:90]} [{len(str(error).splitlines())} line(s)]"
        said += " after loading" if loaded else ""
    print(f"{name}: {said}")
"""
ORDERS = {"bio_mrc first": "import bio_mrc\nfrom transformers import pipeline",
          "transformers first": "from transformers import pipeline\nimport bio_mrc"}


@pytest.mark.slow
def test_the_pipeline_checks_hold_whichever_is_imported_first(tiny_encoder_dir, tmp_path):
    """Bound first, transformers' ``pipeline`` refused an unknown ``model_kwargs`` key in a ``Could not load model …``
    traceback of each loader, dropped ``model_kwargs``' dtype unread (the precision stayed auto), and read a local folder
    at a revision; the checks ran only in the ``pipeline`` that ``import bio_mrc`` puts in transformers' module."""
    folder = untrained_model_folder(tiny_encoder_dir, tmp_path / "model", max_seq_length=48, doc_stride=16, max_query_length=12)
    said = {}
    for order, imports in ORDERS.items():
        result = subprocess.run([sys.executable, "-c", SCRIPT.replace("ORDER", imports), str(folder), json.dumps(CASES)],
                                capture_output=True, text=True, timeout=300, cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})
        assert result.returncode == 0, result.stderr
        said[order] = result.stdout.splitlines()
    assert said["transformers first"] == said["bio_mrc first"]
    lines = dict(line.split(": ", 1) for line in said["transformers first"])
    assert lines["unknown model_kwargs key"].startswith("TypeError: model_kwargs['no_such_key']: the bio-mrc-qa pipeline")
    assert lines["a bad kernel name"].startswith("ConfigError: model_kwargs['attn_implementation'] is the name of an attention")
    assert lines["a revision of a local folder"].startswith("ModelFormatError: revision 'main' names a version of a Hugging Face")
    assert lines["a bad dtype"].startswith("ConfigError: dtype float99: a bio_mrc model answers in")
    assert lines["model_kwargs' dtype"] == "answers in bf16"
    assert all(line.endswith("[1 line(s)]") for name, line in lines.items() if name != "model_kwargs' dtype")
