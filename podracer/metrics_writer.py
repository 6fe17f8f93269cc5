"""Where log records go: `metrics.jsonl`, TensorBoard event files, and the resolved config.

Only process 0 of a job writes; without a workdir nothing is written.
"""

import json
import math
import os

from ml_collections import ConfigDict
from tensorboardX import SummaryWriter

from podracer.distributed import is_chief


class MetricsWriter:
    def __init__(self, workdir: str | None, config: ConfigDict):
        """Creates `workdir` and writes the resolved config there as `config.json`."""
        self._jsonl = None
        self._tensorboard = None
        if workdir and is_chief():
            os.makedirs(workdir, exist_ok=True)
            with open(os.path.join(workdir, "config.json"), "w") as f:
                f.write(config.to_json(indent=2))
            self._jsonl = open(os.path.join(workdir, "metrics.jsonl"), "w")  # noqa: SIM115 -- closed by close().
            self._tensorboard = SummaryWriter(workdir)

    def write(self, record: dict) -> None:
        """Logs one record; `record["step"]` is the environment step count so far."""
        if self._jsonl:
            self._jsonl.write(json.dumps({k: _json_value(v) for k, v in record.items()}) + "\n")
            self._jsonl.flush()
        if self._tensorboard:
            for name, value in record.items():
                if name != "step" and isinstance(value, (int, float)) and math.isfinite(value):
                    self._tensorboard.add_scalar(name, value, record["step"])

    def close(self) -> None:
        if self._jsonl:
            self._jsonl.close()
        if self._tensorboard:
            self._tensorboard.close()


def _json_value(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value
