"""How two sets of answers pair is the task summary's table entry (``PAIRED_DIFFERENCES``), not a branch on its name:
a summary of one's own pairs through its entry alone, and one without an entry is refused in one line."""

from dataclasses import replace

import numpy as np
import pytest

from bio_mrc import registry
from bio_mrc.errors import ConfigError
from bio_mrc.metrics import paired_scores as paired
from bio_mrc.metrics.stats import BootstrapResult

GOLD = {"q1": ["Paris"], "q2": ["blue"], "q3": ["100 degrees"]}
NEW = {"q1": "Paris", "q2": "blue", "q3": "100"}
OLD = {"q1": "Paris", "q2": "sky", "q3": "100 degrees"}


def test_a_summary_of_ones_own_pairs_through_its_table_entry_alone(monkeypatch):
    asked = []
    result = BootstrapResult(1.0, 0.0, 1.0, 0.5, 1.5, 0.01, True, 3, 7)

    def by_exact_match(task, new, old, n_resamples, seed):
        asked.append((task.name, n_resamples, seed))
        return {"em": result}, np.asarray(new["em"]) - np.asarray(old["em"])

    monkeypatch.setitem(paired.PAIRED_DIFFERENCES, "exact matches", by_exact_match)
    task = replace(registry.task("squad-v1.1"), name="toy-exact", summary="exact matches")
    scores = paired.paired_scores(task, GOLD, NEW, OLD, n_resamples=7, seed=3)
    assert asked == [("toy-exact", 7, 3)] and scores.differences == {"em": result}
    # EM per question: new 100, 100, 0; old 100, 0, 100: one better (q2), one worse (q3), two changed
    assert (scores.better, scores.worse, scores.changed, scores.questions) == (1, 1, 2, 3)


def test_every_summary_a_task_names_pairs():
    assert {entry.summary for entry in registry.TASKS.values()} <= set(paired.PAIRED_DIFFERENCES)


def test_a_summary_without_a_pairing_is_refused_naming_the_task():
    task = replace(registry.task("squad-v1.1"), name="toy-unpaired", summary="no such summary")
    with pytest.raises(ConfigError) as info:
        paired.paired_scores(task, GOLD, NEW, OLD, n_resamples=5)
    assert str(info.value) == "task 'toy-unpaired' is summarised by 'no such summary', which has no paired difference"
