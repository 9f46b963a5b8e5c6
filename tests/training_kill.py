"""A training run stopped as a kill would stop it: the tests of resuming use it."""

from transformers import TrainerCallback


class Killed(Exception):
    pass


class KillAtStep(TrainerCallback):
    """Stands in for a kill: the run stops with an exception right after optimizer step ``step``."""

    def __init__(self, step):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise Killed(f"killed at step {self.step}")
