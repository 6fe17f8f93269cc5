"""The experiment configs the figures measure: where they live, loading them, and naming their network."""

import os
from collections.abc import Mapping
from typing import Any

from ml_collections import ConfigDict

from podracer.anakin import anakin_settings
from podracer.config.loading import load
from podracer.devices import xla_cpu
from podracer.experiment import meta_train

CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "configs")


def path(name: str) -> str:
    """The file of config `name` (configs/NAME.py in the repository)."""
    return os.path.join(CONFIGS, f"{name}.py")


def load_named(name: str, overrides: Mapping[str, Any] | None = None) -> ConfigDict:
    """Config `name` with `overrides` applied, as the measuring process will load it."""
    return load(path(name), overrides)


def frames_per_step(config: ConfigDict) -> int:
    """Emulator frames per agent step of a Sebulba config's environment: Atari's frame skip (4 by default), else 1."""
    from podracer.envs.host_suites.envpool_tasks import ATARI_DEFAULTS, is_atari_task

    if not is_atari_task(config.env.name):
        return 1
    return int(config.env.kwargs.get("frame_skip", ATARI_DEFAULTS["frame_skip"]))


def network_label(config: ConfigDict) -> str:
    """The network in a few characters: `mlp(64,64)`, `impala_resnet(16,32,32)`, `nature_cnn`."""
    network = config.network
    sizes = {"mlp": network.hidden_sizes, "impala_resnet": network.channels}.get(network.torso)
    return network.torso if sizes is None else f"{network.torso}({','.join(str(size) for size in sizes)})"


PLANNING_CORES = 2
"""The cores a config's `cpu_devices=0` is resolved for when the figures plan their points: the 2-core CI machine's,
where the configs' per-device batches were chosen (Catch: two devices of 256), so that a plan is the same on every
machine."""


def cpu_devices(config: ConfigDict) -> int:
    """The XLA:CPU devices `config` (a training or a meta-training config) runs on with `PLANNING_CORES` cores."""
    shares = meta_train.device_shares(config) if "meta" in config else anakin_settings.device_shares(config)
    return xla_cpu.cpu_device_count(config, shares, PLANNING_CORES)
