"""Figures 4b and 4c: Sebulba's frames/s against the actor batch, and against how many devices and hosts it spans.

- 4b, `actor_batch`: environments per actor thread (32, 64, 128) and unroll
  length (20, 60), on one actor and one learner device.
- 4c, `device_split`: the same devices divided between actors and learners in
  every way (with 4: 1+3, 2+2, 3+1), each point's environments per thread
  rounded up to a multiple of its learners (1+3 runs 33 where the others run
  32), since each rollout is split evenly over the learner devices.
- 4c, `replicas`: 1, 2, 4 processes of a local pod (`podracer.devices.local_pod`),
  each with one actor and one learner forced CPU device; the rate is the
  whole job's.

The environment is Pong (`configs/sebulba_pong_impala.py`) or CartPole
(`configs/sebulba_cartpole_impala.py`). On CPU devices Pong runs a 16-unit
MLP on the pixels instead of the ResNet, whose learner would be the bound
there; the rows name the network. Even 64 units are too many: on 28,224 pixels
the learner's forward and backward pass cost about 11 MFLOP per agent step,
more CPU time than the emulator's step, and on two cores every learner cycle
is taken from the environments (pipeline efficiency 0.48-0.73 with 64 units
against 1.0 with 16, in alternating runs). Rates are frames/s (Atari frames: 4 per
agent step) over the log windows after the first two, each window enough
updates for 20,000 frames (`updates_per_window`).
With --quick: the config's environments per thread and twice as many at
unroll 20, the one split of two devices, 2 replicas, 3 measured windows.
"""

from collections.abc import Mapping
from typing import Any

from ml_collections import ConfigDict

from podracer.bench import figure_configs
from podracer.bench.records import Launch, Point, SebulbaRun, Setup

CONFIGS = {"pong": "sebulba_pong_impala", "cartpole": "sebulba_cartpole_impala"}
SMALL_NETWORK = {"network.torso": "mlp", "network.hidden_sizes": "(16,)"}  # For Pong on CPU devices (see below).
ENVS_PER_THREAD = (32, 64, 128)
UNROLL_LENGTHS = (20, 60)
REPLICAS = (1, 2, 4)
QUICK_REPLICAS = (2,)  # --quick (its one replica is the 1+1 split): and the config's batch and twice it, unroll 20.
WARMUP_UPDATES = 2  # Log windows, each of `updates_per_window` updates.
UPDATES = 8  # Windows measured after the warm-up.
QUICK_UPDATES = 3
# Frames (agent steps times Atari's frame skip) a log window covers, at least: the window's frames stand in for its
# cost, so that it lasts long enough to time on a noisy machine. A CartPole update (640 frames) takes about 4 ms, a
# Pong one (1,280 steps, 5,120 frames) about 200 ms; logging after every CartPole update would also put the main
# thread's writing on the actors' path.
MIN_WINDOW_FRAMES = 20_000
DEVICES_PER_REPLICA = 2  # One actor and one learner device.


def plan_actor_batch(setup: Setup) -> list[Point]:
    """Figure 4b: every actor batch at every unroll length, on one actor and one learner device (or one shared)."""
    name, base = benchmark(setup.sebulba_env, on_cpu=setup.forced_cpu)
    devices = one_actor_one_learner(setup)
    base = {**base, **split(1, devices)}
    if setup.quick:  # The config's batch (what the other figures run) and twice as many.
        envs = figure_configs.load_named(name).envs_per_thread
        envs_per_thread, unroll_lengths = (envs, 2 * envs), UNROLL_LENGTHS[:1]
    else:
        envs_per_thread, unroll_lengths = ENVS_PER_THREAD, UNROLL_LENGTHS
    return [
        point(setup, "4b", "actor_batch", name, {**base, "envs_per_thread": envs, "unroll_length": unroll}, devices)
        for unroll in unroll_lengths
        for envs in envs_per_thread
    ]


def plan_scaling(setup: Setup) -> list[Point]:
    """Figure 4c: every actor + learner split of the devices, then 1, 2, 4 replicas of one actor + one learner."""
    name, base = benchmark(setup.sebulba_env, on_cpu=setup.forced_cpu)
    _, replica_base = benchmark(setup.sebulba_env, on_cpu=True)  # A local pod runs on forced CPU devices.
    return scaling_points(setup, "4c", name, base, replica_base)


def scaling_points(setup: Setup, figure: str, name: str, base: Mapping[str, Any], replica_base: Mapping[str, Any]):
    """Config `name` on every actor + learner split of the devices (with `base`), then on 1, 2, 4 replicas."""
    points = []
    devices = max(2, setup.max_devices) if setup.forced_cpu else setup.max_devices
    if devices >= 2:  # One accelerator cannot be split.
        envs = figure_configs.load_named(name, base).envs_per_thread
        for actors in range(1, devices):  # Each actor thread's batch is split evenly over the learners.
            overrides = {**base, **split(actors, devices), "envs_per_thread": round_up(envs, devices - actors)}
            points.append(point(setup, figure, "device_split", name, overrides, devices))
    for replicas in QUICK_REPLICAS if setup.quick else REPLICAS:
        overrides = {**replica_base, **split(1, DEVICES_PER_REPLICA)}
        points.append(point(setup, figure, "replicas", name, overrides, DEVICES_PER_REPLICA, replicas=replicas))
    return points


def benchmark(env: str, on_cpu: bool) -> tuple[str, dict]:
    """The config of `env` (pong or cartpole), and the overrides that give Pong a small network on CPU devices."""
    name = CONFIGS[env]
    return name, dict(SMALL_NETWORK) if on_cpu and env == "pong" else {}


def one_actor_one_learner(setup: Setup) -> int:
    """The devices of a point with one actor and one learner device: 2, or 1 shared on a one-accelerator machine."""
    return 2 if setup.forced_cpu else min(2, setup.max_devices)


def measured_updates(setup: Setup) -> int:
    """Log windows measured after the warm-up."""
    return QUICK_UPDATES if setup.quick else UPDATES


def updates_per_window(config: ConfigDict) -> int:
    """Updates per log window: enough for `MIN_WINDOW_FRAMES` frames."""
    return -(-MIN_WINDOW_FRAMES // (steps_per_update(config) * figure_configs.frames_per_step(config)))


def split(actors: int, devices: int) -> dict:
    """The overrides that put the actors on the first `actors` of `devices` devices and the learners on the rest.

    On one device, actors and learners share it.
    """
    learners = tuple(range(actors, devices))
    return {"actor_device_ids": str(tuple(range(actors))), "learner_device_ids": str(learners)}


def point(
    setup: Setup,
    figure: str,
    sweep: str,
    name: str,
    overrides: Mapping[str, Any],
    devices: int,
    replicas: int | None = None,
    columns: Mapping[str, Any] = {},  # noqa: B006 -- read only.
) -> Point:
    """One Sebulba point: config `name` with `overrides`, long enough for the warm-up and the measured updates.

    It runs on `devices` devices of the setup's kind, or with `replicas`, in a
    local pod of that many processes, each with `devices` forced CPU devices.
    `columns` adds to the row's columns (what else the point varies).
    """
    if replicas is not None:
        overrides = {**overrides, "replicas": replicas}
    config = figure_configs.load_named(name, overrides)
    window = updates_per_window(config)
    total_steps = (WARMUP_UPDATES + measured_updates(setup)) * window * steps_per_update(config)
    run = {**overrides, "log_every_updates": window, "total_steps": total_steps}
    task = SebulbaRun(figure_configs.path(name), run, WARMUP_UPDATES)
    if replicas is None:
        launch = setup.launch(devices, config.cpu_threads)
    else:
        launch = Launch(devices, config.cpu_threads, processes=replicas)
    columns = {
        "env": config.env.name,
        "network": figure_configs.network_label(config),
        "devices": devices,
        "replicas": config.replicas,
        "actor_devices": len(config.actor_device_ids),
        "learner_devices": len(config.learner_device_ids) or len(config.actor_device_ids),
        "actor_threads": config.actor_threads_per_device,
        "envs_per_thread": config.envs_per_thread,
        "unroll_length": config.unroll_length,
        "simulations": config.agent.get("num_simulations"),  # A search agent's; None for the others.
        **columns,
    }
    return Point(figure, sweep, name, launch, task, columns)


def steps_per_update(config: ConfigDict) -> int:
    """Agent steps per learner update over the whole job (every replica, every actor thread)."""
    threads = config.actor_threads_per_device * len(config.actor_device_ids) * config.replicas
    return config.unroll_length * config.envs_per_thread * threads


def round_up(value: int, multiple: int) -> int:
    """The smallest multiple of `multiple` that is at least `value`."""
    return -(-value // multiple) * multiple
