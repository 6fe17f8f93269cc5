"""Where metrics go: `metrics.jsonl`, TensorBoard event files and a progress bar.

One `write` per log step, plus the resolved config. Without a workdir only the
progress bar is shown.
"""

import json
import math
import os
from typing import Optional

import jax
import tqdm
from ml_collections import ConfigDict
from tensorboardX import SummaryWriter


class MetricsWriter:
    def __init__(self, workdir: Optional[str], config: ConfigDict, total_steps: int, show_progress: bool = True):
        """Creates `workdir` and writes the resolved config there as `config.json`.

        In a job of several processes only process 0 writes anything or shows progress.
        """
        self._jsonl = None
        self._tensorboard = None
        chief = jax.process_index() == 0
        if workdir and chief:
            os.makedirs(workdir, exist_ok=True)
            with open(os.path.join(workdir, "config.json"), "w") as f:
                f.write(config.to_json(indent=2))
            self._jsonl = open(os.path.join(workdir, "metrics.jsonl"), "w")
            self._tensorboard = SummaryWriter(workdir)
        self._progress = tqdm.tqdm(total=total_steps, unit="step", unit_scale=True, disable=not (show_progress and chief))

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


def episode_summary(episodes: float, return_sum: float, length_sum: float) -> dict:
    """The episode fields of a log record, from the episodes that ended since the previous one."""
    return {
        "episodes": int(episodes),
        "mean_episode_return": float(return_sum / episodes) if episodes else math.nan,
        "mean_episode_length": float(length_sum / episodes) if episodes else math.nan,
    }


def _json_value(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value
