"""Where metrics go: `metrics.jsonl`, TensorBoard event files and a progress bar.

One `write` per log step. Without a workdir only the progress bar is shown.
"""

import json
import math
import os
from typing import Optional

import tqdm
from tensorboardX import SummaryWriter


class MetricsWriter:
    def __init__(self, workdir: Optional[str], total_steps: int, show_progress: bool = True):
        self._jsonl = None
        self._tensorboard = None
        if workdir:
            os.makedirs(workdir, exist_ok=True)
            self._jsonl = open(os.path.join(workdir, "metrics.jsonl"), "w")
            self._tensorboard = SummaryWriter(workdir)
        self._progress = tqdm.tqdm(total=total_steps, unit="step", unit_scale=True, disable=not show_progress)

    def write(self, metrics: dict) -> None:
        """Logs one record; `metrics["step"]` is the environment step count so far."""
        step = metrics["step"]
        if self._jsonl:
            self._jsonl.write(json.dumps({k: _json_value(v) for k, v in metrics.items()}) + "\n")
            self._jsonl.flush()
        if self._tensorboard:
            for name, value in metrics.items():
                if name != "step" and isinstance(value, (int, float)) and math.isfinite(value):
                    self._tensorboard.add_scalar(name, value, step)
        self._progress.update(step - self._progress.n)
        self._progress.set_postfix(
            steps_per_second=f"{metrics.get('steps_per_second', 0):,.0f}",
            mean_return=f"{metrics.get('mean_episode_return', math.nan):.3f}",
        )

    def close(self) -> None:
        self._progress.close()
        if self._jsonl:
            self._jsonl.close()
        if self._tensorboard:
            self._tensorboard.close()


def _json_value(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value
