"""The run contract both architectures keep: what callbacks see at each log record and what `train` returns.

`RunLog` is the one place a run reports to: it appends each log record to the
history, writes it (`metrics.jsonl`, TensorBoard) when there is a workdir, and
hands it with the training state to every callback. A callback is any function
of a `LogEvent`; checkpointing, plotting and notebook displays attach there.
Callbacks run on the main thread of every process of the job (only process 0
writes the logs), so a multi-host checkpoint hook can take part everywhere.
"""

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from ml_collections import ConfigDict

from podracer.envs.episodes import Completed
from podracer.run.metrics_writer import MetricsWriter


@dataclasses.dataclass(frozen=True)
class LogEvent:
    """What a callback is shown at a log record."""

    # The log record, as written to metrics.jsonl: step, losses, episode statistics, throughput, and
    # wall_seconds, the time since the run began building (environments and compilation included).
    record: dict
    # The training state at that record (Anakin: `AnakinState`; Sebulba: `SebulbaState`), valid during the call:
    # the run goes on with its buffers afterwards, so copy (or save) what you keep.
    state: Any
    total_steps: int  # Environment steps the whole run will take.

    @property
    def final(self) -> bool:
        """Whether this is the run's last record."""
        return self.record["step"] >= self.total_steps


Callback = Callable[[LogEvent], None]


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """What `podracer.train` returns, for either architecture."""

    learner_state: Any  # The agent's final learner state (on the learner devices).
    acting_params: Any  # `agent.acting_params(learner_state)`: what `agent.act` needs.
    history: list[dict]  # Every log record, in order.
    steps: int  # Environment steps taken over the whole job.


def recent_return(history: Sequence[dict], episodes: int = 100, evaluated: bool = False) -> float:
    """The mean return of a run's last `episodes` episodes (or a few more: whole log windows); NaN if none ended.

    One log record's `mean_episode_return` covers only the episodes that ended
    in its window, which may be a handful: a run's last window is often cut
    short by `total_steps`, and CartPole at 500 steps an episode ends few per
    window. Gym calls CartPole solved at a mean of 475 over 100 consecutive
    episodes; this is that mean, read back from the records' `episodes` counts.
    `evaluated` pools the last evaluations' episodes instead (`eval_mean_return`
    over `eval_episodes`): the returns of a run that trains from a dataset.
    """
    returns, counts = ("eval_mean_return", "eval_episodes") if evaluated else ("mean_episode_return", "episodes")
    total = count = 0.0
    for record in reversed(history):
        if record.get(counts):
            total += record[returns] * record[counts]
            count += record[counts]
        if count >= episodes:
            break
    return total / count if count else math.nan


class RunLog:
    """Records, writes and hands on every log record of a run."""

    def __init__(
        self,
        workdir: str | None,
        config: ConfigDict,
        total_steps: int,
        callbacks: Sequence[Callback],
        started: float,
        resumed: dict | None = None,
        compile_seconds: float | None = None,
    ):
        """`started` is the `time.perf_counter()` at which the run began building.

        `resumed` is the metadata of the checkpoint a resumed run starts from:
        the history goes on from its step, and the wall time from its wall time.
        `compile_seconds`, what building the run's programs took, goes in the
        first record this process reports (a resumed run compiled again).
        """
        self._writer = MetricsWriter(workdir, config, resume_step=resumed["step"] if resumed else None)
        self.history: list[dict] = list(self._writer.kept)
        self._started = started - (resumed["wall_seconds"] if resumed else 0.0)
        self.total_steps = total_steps
        self._callbacks = tuple(callbacks)
        self._compile_seconds = compile_seconds

    def elapsed(self) -> float:
        """Seconds since the run began building (over every resume of it): what records call `wall_seconds`."""
        return time.perf_counter() - self._started

    def report(self, record: dict, state: Any) -> None:
        if self._compile_seconds is not None:
            record["compile_seconds"], self._compile_seconds = self._compile_seconds, None
        record["wall_seconds"] = self.elapsed()
        self.history.append(record)
        self._writer.write(record)
        for callback in self._callbacks:
            callback(LogEvent(record, state, self.total_steps))

    def close(self) -> None:
        self._writer.close()


def episode_summary(completed: Completed) -> dict:
    """The episode fields of a log record, from the episodes that ended since the previous one."""
    episodes = float(completed.episodes)
    return {
        "episodes": int(episodes),
        "mean_episode_return": float(completed.return_sum) / episodes if episodes else float("nan"),
        "mean_episode_length": float(completed.length_sum) / episodes if episodes else float("nan"),
    }
