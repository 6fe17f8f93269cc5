"""A progress bar for a run, as a callback: steps, steps per second and mean episode return."""

import math

import tqdm

from podracer.devices.distributed import is_chief
from podracer.run.contract import LogEvent


class ProgressBar:
    """`podracer.train(config, callbacks=[ProgressBar()])` shows a tqdm bar (process 0 only)."""

    def __init__(self):
        self._bar = None

    def __call__(self, event: LogEvent) -> None:
        if self._bar is None:
            self._bar = tqdm.tqdm(total=event.total_steps, unit="step", unit_scale=True, disable=not is_chief())
        self._bar.update(event.record["step"] - self._bar.n)
        self._bar.set_postfix(
            steps_per_second=f"{event.record.get('steps_per_second', 0):,.0f}",
            mean_return=f"{event.record.get('mean_episode_return', math.nan):.3f}",
        )
        if event.final:
            self._bar.close()
            self._bar = None
