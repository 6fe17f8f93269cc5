"""A progress bar for a run, as a callback: steps, steps per second, mean episode return and, once a run has
evaluated, its latest evaluation's mean return (the only returns of a run that trains from a dataset)."""

import math

import tqdm

from podracer.devices.distributed import is_chief
from podracer.run.contract import LogEvent


class ProgressBar:
    """`podracer.train(config, callbacks=[ProgressBar()])` shows a tqdm bar (process 0 only)."""

    def __init__(self):
        self._bar = None
        self._eval_return = None  # The latest evaluation's mean return, shown once the run has one.

    def __call__(self, event: LogEvent) -> None:
        if self._bar is None:
            self._bar = tqdm.tqdm(total=event.total_steps, unit="step", unit_scale=True, disable=not is_chief())
        self._bar.update(event.record["step"] - self._bar.n)
        returns = {"mean_return": f"{event.record.get('mean_episode_return', math.nan):.3f}"}
        if "eval_mean_return" in event.record:  # The returns of a run that trains from a dataset.
            self._eval_return = event.record["eval_mean_return"]
        if self._eval_return is not None:
            returns["eval_return"] = f"{self._eval_return:.3f}"
        self._bar.set_postfix(steps_per_second=f"{event.record.get('steps_per_second', 0):,.0f}", **returns)
        if event.final:
            self._bar.close()
            self._bar, self._eval_return = None, None
