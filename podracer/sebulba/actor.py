"""A Sebulba actor thread: unrolls its host environments on its actor device and ships the trajectories.

For every rollout the thread takes the parameter version its policy lag
prescribes and unrolls T steps (`podracer.sebulba.unroll`: from Python, or as
one compiled program), which sends the trajectory to the learner devices
(`make_send`), split along the batch axis with one shard per learner device:
what the unroll left on the host from there, what it left on the actor device
device-to-device. The handle goes on the thread's own bounded queue.
"""

import dataclasses
import queue
from collections.abc import Callable
from typing import NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding

from podracer.agents import Trajectory
from podracer.envs.episodes import Completed
from podracer.offline.experience_log import ExperienceLog
from podracer.sebulba.lifecycle import RunControl
from podracer.sebulba.parameter_versions import ParameterVersions
from podracer.sebulba.phase_clock import PhaseClock
from podracer.sebulba.unroll import Unroll


class Rollout(NamedTuple):
    """What an actor hands the learner: a trajectory already on the learner devices, and what it acted with."""

    trajectory: Trajectory  # Leaves [T (+ 1), B, ...], sharded along B over the learner mesh.
    params_version: int
    completed: Completed  # The episodes that ended during the rollout.


def make_send(learner_sharding: NamedSharding) -> Callable[[Trajectory], Trajectory]:
    """`send(trajectory)`: a local trajectory split along its batch axis over the learner devices, device-to-device.

    One `jax.device_put` of the whole trajectory onto this process's learner
    devices, each taking its contiguous part of the batch (a call per leaf and
    shard costs several times as much: 330 against 115 us for a CartPole
    rollout to one learner device, 940 against 280 us to two). With several
    processes the result is a global array over the whole learner mesh
    (`jax.make_array_from_single_device_arrays`), of which this process
    supplies its own contiguous part of the batch: each process's
    trajectories only ever go to its own learner devices.
    """
    mesh = learner_sharding.mesh
    local_devices = [device for device in mesh.devices.flat if device.process_index == jax.process_index()]
    local_sharding = NamedSharding(Mesh(np.asarray(local_devices), mesh.axis_names), learner_sharding.spec)

    def globalise(x: jax.Array) -> jax.Array:
        global_shape = (x.shape[0], x.shape[1] * jax.process_count()) + x.shape[2:]
        shards = [shard.data for shard in x.addressable_shards]
        return jax.make_array_from_single_device_arrays(global_shape, learner_sharding, shards)

    def send(trajectory: Trajectory) -> Trajectory:
        local = jax.device_put(trajectory, local_sharding)
        return local if jax.process_count() == 1 else jax.tree.map(globalise, local)

    return send


def policy_version(rollout_index: int, policy_lag: int, first_version: int = 0) -> int:
    """The parameter version rollout `rollout_index` acts with: exactly `policy_lag` updates behind.

    No older than `first_version`, the version a run starts (or resumes) from.
    """
    return max(first_version, rollout_index - policy_lag)


@dataclasses.dataclass(frozen=True)
class ActorLoop:
    """What one actor thread runs with (`run_actor`): its rollouts' source and destination, and which to make."""

    unroll: Unroll  # make_unroll's: steps this thread's environments and sends the trajectory to the learners.
    device: jax.Device  # The actor device it acts on.
    parameters: ParameterVersions  # Where it reads each version of the acting parameters.
    rollouts: queue.Queue  # Its queue to the learner.
    control: RunControl
    policy_lag: int  # How many updates behind the learner each rollout acts (`policy_version`).
    first_rollout: int  # The first rollout to make (a resumed run skips those done).
    num_rollouts: int
    clock: PhaseClock  # The thread's time: waiting here, the rest in `unroll`.
    experience: ExperienceLog | None = None  # Its dataset logger (`logger.dataset`), or None.


def run_actor(loop: ActorLoop) -> None:
    """The body of one actor thread: rollouts `first_rollout` to `num_rollouts - 1` (a resumed run skips some).

    `unroll` steps environments that were created on the main thread and are used only here, and sends its
    trajectories to the learner devices. The thread's time goes on `clock`: waiting here, the rest in `unroll`.
    """
    for index in range(loop.first_rollout, loop.num_rollouts):
        version = policy_version(index, loop.policy_lag, loop.first_rollout)
        loop.clock.enter("wait")
        params = loop.control.wait(
            lambda t: loop.parameters.get(version, loop.device, t), f"parameters version {version}"
        )
        unrolled = loop.unroll(params)
        if loop.experience is not None:
            loop.clock.enter("env")  # Host work on the environments' steps.
            loop.experience.add_unroll(unrolled.trajectory)
        rollout = Rollout(trajectory=unrolled.trajectory, params_version=version, completed=unrolled.completed)
        loop.clock.enter("wait")
        loop.control.wait(lambda t: loop.rollouts.put(rollout, timeout=t), "space in the rollout queue")
        loop.clock.enter(None)
