"""`podracer.train`: the one entry point for both architectures.

    result = podracer.train(config, env=None, agent=None, workdir=None, callbacks=())

The config says which architecture runs and names everything else; objects
passed in win over the names: `env` is a pure-JAX `Environment` for Anakin,
or a factory `make(num_envs, seed) -> HostEnvironment` for Sebulba, and
`agent` any `Agent`. The config is validated once, here, before any device is
touched; each architecture then checks it against the machine as it builds.
Both return a `TrainResult` and call every callback at each log record.
"""

import contextlib
from collections.abc import Sequence
from typing import Any

from ml_collections import ConfigDict

from podracer.agents import Agent
from podracer.anakin import anakin_settings
from podracer.anakin.anakin_train import train as train_anakin
from podracer.devices import distributed, xla_cpu
from podracer.experiment import schema, start_from
from podracer.run import wandb_logger, workdir_lock
from podracer.run.contract import Callback, TrainResult
from podracer.sebulba.sebulba_train import train as train_sebulba

_TRAIN = {"anakin": train_anakin, "sebulba": train_sebulba}


def train(
    config: ConfigDict,
    *,
    env: Any | None = None,
    agent: Agent | None = None,
    workdir: str | None = None,
    callbacks: Sequence[Callback] = (),
) -> TrainResult:
    """Trains the agent on the environment `config` describes (or those passed in), on every device it names.

    With `workdir`, writes `metrics.jsonl`, TensorBoard events and the resolved
    `config.json` there (process 0 of the job only); with
    `logger.wandb.project`, process 0 also logs every record to wandb
    (`podracer.run.wandb_logger`). Raises `ConfigError`, naming the field and
    the fix, before anything is compiled or written, and `WorkdirInUse` (a
    `ConfigError`) if another run holds `workdir`; a full disk under `workdir`
    stops the run with `DiskFull`, which says how to resume.
    With `config.replicas > 1` every process of the job calls this.
    """
    schema.validate(config, agent_from_config=agent is None, env_from_config=env is None)
    shares = anakin_settings.device_shares(config) if config.architecture == "anakin" else xla_cpu.Shares()
    distributed.start(config, shares)  # Before anything touches a device.
    start = start_from.load(config)  # An offline run to go on from (offline.start_from), read and checked; or None.
    with workdir_lock.hold(
        workdir
    ):  # Before anything is built, wandb's run included: another run's workdir is refused.
        tracker = wandb_logger.start(config, workdir)  # With logger.wandb.project, on process 0; None otherwise.
        with tracker or contextlib.nullcontext():  # Finishes the wandb run however the run ends.
            callbacks = (*callbacks, tracker) if tracker else callbacks
            return _TRAIN[config.architecture](
                config, env=env, agent=agent, workdir=workdir, callbacks=callbacks, start=start
            )
