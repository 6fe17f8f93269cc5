"""A Sebulba actor thread: steps its envpool batch, acts on its actor device, ships trajectories.

For every rollout the thread takes the parameter version its policy lag
prescribes, unrolls T steps (host environment step, then batched inference on
the actor device, whose output action comes back to the host), assembles the
trajectory on the actor device, and sends it device-to-device to the learner
devices, split along the batch axis with one shard per learner device. The
handle goes on the thread's own bounded queue.
"""

import queue
import time
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding

from podracer.agents.policy import sample_with_noise
from podracer.agents.trajectory import Trajectory
from podracer.envs.envpool_env import HostEnvironment
from podracer.envs.timestep import LAST, TimeStep
from podracer.sebulba.lifecycle import RunControl, Stopped
from podracer.sebulba.parameters import ParameterServer


class Rollout(NamedTuple):
    """What an actor hands the learner: a trajectory already on the learner devices, and telemetry."""

    trajectory: Trajectory  # Leaves [T (+ 1), B, ...], sharded along B over the learner mesh.
    params_version: int
    episodes: int  # Episodes that ended during the rollout, with their summed returns and lengths.
    episode_return_sum: float
    episode_length_sum: float
    env_seconds: float  # Time this thread spent stepping environments,
    inference_seconds: float  # ... choosing actions on the actor device,
    wait_seconds: float  # ... and waiting for parameters or queue space (since the previous rollout).


def make_act(apply_fn: Callable) -> Callable:
    """`act(params, observation, key) -> (action, logits, key)`, jitted: one inference step."""

    @jax.jit
    def act(params, observation, key):
        key, noise_key = jax.random.split(key)
        logits, _ = apply_fn(params, observation)
        action = sample_with_noise(logits, jax.random.gumbel(noise_key, logits.shape))
        return action, logits, key

    return act


@jax.jit
def assemble_trajectory(observations: list, actions: list, logits: list, step_type, reward, discount) -> Trajectory:
    """Stacks a rollout's per-step device arrays (and its host-side scalars) into a `Trajectory`."""
    stack = lambda xs: jax.tree.map(lambda *leaves: jnp.stack(leaves), *xs)
    timestep = TimeStep(step_type=step_type, reward=reward, discount=discount, observation=stack(observations))
    return Trajectory(timestep=timestep, action=stack(actions), behaviour_logits=stack(logits))


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


def policy_version(rollout_index: int, policy_lag: int) -> int:
    """The parameter version rollout `rollout_index` acts with: exactly `policy_lag` updates behind."""
    return max(0, rollout_index - policy_lag)


def run_actor(
    *,
    env: HostEnvironment,
    device: jax.Device,
    act: Callable,
    parameters: ParameterServer,
    rollouts: queue.Queue,
    learner_sharding: NamedSharding,
    control: RunControl,
    key: Any,
    unroll_length: int,
    policy_lag: int,
    num_rollouts: int,
) -> None:
    """The body of one actor thread; `env` was created on the main thread and is used only here."""
    key = jax.device_put(key, device)
    host_timestep = env.reset()
    observation = jax.device_put(host_timestep.observation, device)
    wait_seconds = 0.0
    for index in range(num_rollouts):
        version = policy_version(index, policy_lag)
        start = time.perf_counter()
        params = control.wait(lambda t: parameters.get(version, device, t), f"parameters version {version}")
        wait_seconds += time.perf_counter() - start

        observations, actions, logits, host_timesteps = [observation], [], [], [host_timestep]
        env_seconds = inference_seconds = 0.0
        finished_returns, finished_lengths = [], []
        for _ in range(unroll_length):
            if control.stop.is_set():
                raise Stopped
            start = time.perf_counter()
            action, step_logits, key = act(params, observation, key)
            host_action = np.asarray(action)
            inference_seconds += time.perf_counter() - start

            start = time.perf_counter()
            host_timestep = env.step(host_action)
            ended = host_timestep.step_type == LAST
            finished_returns.append(env.episode_return[ended])
            finished_lengths.append(env.episode_length[ended])
            env_seconds += time.perf_counter() - start

            start = time.perf_counter()
            observation = jax.device_put(host_timestep.observation, device)
            inference_seconds += time.perf_counter() - start
            observations.append(observation)
            actions.append(action)
            logits.append(step_logits)
            host_timesteps.append(host_timestep)

        scalars = [np.stack([getattr(ts, name) for ts in host_timesteps]) for name in ("step_type", "reward", "discount")]
        trajectory = assemble_trajectory(observations, actions, logits, *jax.device_put(scalars, device))
        finished_returns, finished_lengths = np.concatenate(finished_returns), np.concatenate(finished_lengths)
        rollout = Rollout(
            trajectory=send_to_learners(trajectory, learner_sharding),
            params_version=version,
            episodes=len(finished_returns),
            episode_return_sum=float(np.sum(finished_returns)),
            episode_length_sum=float(np.sum(finished_lengths)),
            env_seconds=env_seconds,
            inference_seconds=inference_seconds,
            wait_seconds=wait_seconds,
        )
        start = time.perf_counter()
        control.wait(lambda t: rollouts.put(rollout, timeout=t), "space in the rollout queue")
        wait_seconds = time.perf_counter() - start
