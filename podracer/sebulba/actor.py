"""A Sebulba actor thread: steps its host environments, acts on its actor device, ships trajectories.

For every rollout the thread takes the parameter version its policy lag
prescribes and unrolls T steps: `agent.act` on the actor device (the host
observation goes in as it is, the actions come back to the host), then a host
environment step. Per step that is one program call and one read of its
actions: the timesteps stay on the host until the rollout ends, and the
episode statistics are summed once per rollout. The trajectory is then sent
to the learner devices, split along the batch axis with one shard per learner
device: the timesteps from the host, the actions and the policy outputs
device-to-device from the actor device. The handle goes on the thread's own
bounded queue.
"""

import queue
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding

from podracer.agents import Agent, Trajectory
from podracer.envs import episodes
from podracer.envs.actions import clip_to_spec
from podracer.envs.episodes import Completed
from podracer.envs.host import HostEnvironment
from podracer.envs.timestep import TimeStep
from podracer.sebulba.lifecycle import RunControl, Stopped
from podracer.sebulba.parameter_versions import ParameterVersions


class Rollout(NamedTuple):
    """What an actor hands the learner: a trajectory already on the learner devices, and telemetry."""

    trajectory: Trajectory  # Leaves [T (+ 1), B, ...], sharded along B over the learner mesh.
    params_version: int
    completed: Completed  # The episodes that ended during the rollout.
    env_seconds: float  # Time this thread spent stepping environments,
    inference_seconds: float  # ... choosing actions on the actor device,
    wait_seconds: float  # ... and waiting for parameters or queue space (since the previous rollout).


def make_act_step(agent: Agent, action_spec: Any) -> Callable:
    """`act_step(params, observation, key) -> (action, env_action, extras, next_key)`, jitted: one inference step.

    The step acts with one key per environment split from `key`, and hands back
    the key for the next step, so the thread's key stays on its actor device and
    what an actor draws depends only on the seed, the thread and the step.
    `env_action` is what the environment receives: the action, clipped into
    the bounds of a real-valued action spec (`podracer.envs.actions`); the
    trajectory keeps `action` itself.
    """

    @jax.jit
    def act_step(params: Any, observation: Any, key: chex.PRNGKey):
        key, step_key = jax.random.split(key)
        batch_size = jax.tree.leaves(observation)[0].shape[0]
        action, extras = agent.act(params, observation, jax.random.split(step_key, batch_size))
        return action, clip_to_spec(action, action_spec), extras, key

    return act_step


@jax.jit
def stack_steps(actions: list, extras: list) -> tuple[Any, Any]:
    """A rollout's per-step actions and policy outputs, stacked along a new leading time axis on the actor device."""
    stack = lambda xs: jax.tree.map(lambda *leaves: jnp.stack(leaves), *xs)  # noqa: E731
    return stack(actions), stack(extras)


def stack_timesteps(timesteps: list[TimeStep]) -> TimeStep:
    """Host timesteps `[B]` stacked along a new leading time axis, on the host: `[T + 1, B]`."""
    return jax.tree.map(lambda *leaves: np.stack(leaves), *timesteps)


def rollout_episodes(
    timesteps: TimeStep, episode_return: np.ndarray, episode_length: np.ndarray
) -> tuple[Completed, np.ndarray, np.ndarray]:
    """The episodes that ended during a rollout, and the running statistics after it.

    `timesteps` are the rollout's `[T + 1, B]` host timesteps, the first being
    the one the rollout started from (already counted by the previous rollout).
    """
    returns, lengths = [], []
    for t in range(1, timesteps.step_type.shape[0]):
        step = jax.tree.map(lambda x, t=t: x[t], timesteps)
        episode_return, episode_length = episodes.update(episode_return, episode_length, step, xp=np)
        returns.append(episode_return)
        lengths.append(episode_length)
    arrived = jax.tree.map(lambda x: x[1:], timesteps)
    return episodes.completed(arrived, np.stack(returns), np.stack(lengths), xp=np), episode_return, episode_length


def send_to_learners(trajectory: Trajectory, learner_sharding: NamedSharding) -> Trajectory:
    """Splits a local trajectory along its batch axis over this process's learner devices, device-to-device.

    The result is a global array over the whole learner mesh
    (`jax.make_array_from_single_device_arrays`), of which this process
    supplies its own contiguous part of the batch: with several processes, each
    one's trajectories only ever go to its own learner devices.
    """

    def place(x):
        global_shape = (x.shape[0], x.shape[1] * jax.process_count()) + x.shape[2:]
        indices = learner_sharding.addressable_devices_indices_map(global_shape)
        offset = min(index[1].start or 0 for index in indices.values())
        shards = [
            jax.device_put(x[:, (index[1].start or 0) - offset : (index[1].stop or x.shape[1]) - offset], device)
            for device, index in indices.items()
        ]
        return jax.make_array_from_single_device_arrays(global_shape, learner_sharding, shards)

    return jax.tree.map(place, trajectory)


def policy_version(rollout_index: int, policy_lag: int, first_version: int = 0) -> int:
    """The parameter version rollout `rollout_index` acts with: exactly `policy_lag` updates behind.

    No older than `first_version`, the version a run starts (or resumes) from.
    """
    return max(first_version, rollout_index - policy_lag)


def run_actor(
    *,
    env: HostEnvironment,
    device: jax.Device,
    act_step: Callable,
    parameters: ParameterVersions,
    rollouts: queue.Queue,
    learner_sharding: NamedSharding,
    control: RunControl,
    key: chex.PRNGKey,
    unroll_length: int,
    policy_lag: int,
    first_rollout: int,
    num_rollouts: int,
) -> None:
    """The body of one actor thread: rollouts `first_rollout` to `num_rollouts - 1` (a resumed run skips some).

    `env` was created on the main thread and is used only here.
    """
    key = jax.device_put(key, device)
    host_timestep = env.reset()
    episode_return, episode_length = np.zeros(env.num_envs, np.float64), np.zeros(env.num_envs, np.int64)
    wait_seconds = 0.0
    for index in range(first_rollout, num_rollouts):
        version = policy_version(index, policy_lag, first_rollout)
        start = time.perf_counter()
        params = control.wait(lambda t: parameters.get(version, device, t), f"parameters version {version}")
        wait_seconds += time.perf_counter() - start

        actions, extras, host_timesteps = [], [], [host_timestep]
        env_seconds = inference_seconds = 0.0
        for _ in range(unroll_length):
            if control.stop.is_set():
                raise Stopped
            start = time.perf_counter()
            action, env_action, step_extras, key = act_step(params, host_timestep.observation, key)
            host_action = np.asarray(env_action)
            inference_seconds += time.perf_counter() - start

            start = time.perf_counter()
            host_timestep = env.step(host_action)
            env_seconds += time.perf_counter() - start
            actions.append(action)
            extras.append(step_extras)
            host_timesteps.append(host_timestep)

        timesteps = stack_timesteps(host_timesteps)
        completed, episode_return, episode_length = rollout_episodes(timesteps, episode_return, episode_length)
        trajectory = Trajectory(timesteps, *stack_steps(actions, extras))
        rollout = Rollout(
            trajectory=send_to_learners(trajectory, learner_sharding),
            params_version=version,
            completed=completed,
            env_seconds=env_seconds,
            inference_seconds=inference_seconds,
            wait_seconds=wait_seconds,
        )
        start = time.perf_counter()
        control.wait(lambda t: rollouts.put(rollout, timeout=t), "space in the rollout queue")
        wait_seconds = time.perf_counter() - start
