"""How an actor thread unrolls its environments for T steps: step by step from Python, or as one compiled program.

Both ways act with the same `agent.act`, draw the same keys and give the same
`Unrolled`: the trajectory `[T + 1, B]`, already handed to `send` (which puts
it on the learner devices), and the episodes that ended in it. A recurrent
agent's state stays on the actor device from one rollout to the next, and
each trajectory carries it as its rollout began.

- `host_unroll` alternates, T times, one call of the jitted act step on the
  actor device (the host observation goes in, the actions come back) and one
  `env.step` on the host. Any `HostEnvironment` can be stepped this way.
- `compiled_unroll` runs the whole rollout as one program on the actor device:
  `lax.scan` over T steps of `agent.act` and the environment's own step as a
  JAX function (`HostEnvironment.compiled_step`: envpool's XLA interface,
  whose send and receive are custom calls into its C++ pool). There is no
  Python, no dispatch and no host round trip between two steps, which is what
  cheap environments (CartPole) spend most of a host-stepped rollout on. The
  episode statistics are computed in the program too.

`config.env_stepping` chooses (`podracer.sebulba.sebulba_settings.env_stepping`):
`auto` compiles where the environment can be stepped that way and the actor
devices are CPUs, the only place it is tested (on a GPU, envpool's custom call
copies between device and host itself; `compiled` may be asked for there).
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from podracer.agents import Agent, Trajectory
from podracer.agents.trajectory import with_time_axis
from podracer.envs import episodes
from podracer.envs.actions import clip_to_spec
from podracer.envs.episodes import Completed
from podracer.envs.host import HostEnvironment
from podracer.envs.timestep import TimeStep
from podracer.sebulba.phase_clock import PhaseClock


class Unrolled(NamedTuple):
    """One rollout as its actor thread made it, before it is sent to the learners."""

    trajectory: Trajectory  # Leaves [T (+ 1), B, ...], as `send` returned them.
    completed: Completed  # The episodes that ended during the rollout (host numbers).


Unroll = Callable[[Any], Unrolled]  # The acting parameters, on the actor device -> the next T steps.


def act_step(agent: Agent, action_spec: Any) -> Callable:
    """`act_step(params, timestep, state, key) -> (action, env_action, extras, state, next_key)`: one inference step.

    The step acts with one key per environment split from `key`, and hands back
    the key for the next step, so the thread's key stays on its actor device and
    what an actor draws depends only on the seed, the thread and the step.
    `env_action` is what the environment receives: the action, clipped into
    the bounds of a real-valued action spec (`podracer.envs.actions`); the
    trajectory keeps `action` itself. `state` is the agent's recurrent state
    (`()` for a feed-forward agent).
    """

    def step(params: Any, timestep: TimeStep, state: Any, key: chex.PRNGKey):
        key, step_key = jax.random.split(key)
        batch_size = timestep.step_type.shape[0]
        action, extras, state = agent.act_with_state(params, timestep, state, jax.random.split(step_key, batch_size))
        return action, clip_to_spec(action, action_spec), extras, state, key

    return step


def make_act_step(agent: Agent, action_spec: Any) -> Callable:
    """`act_step`, jitted: what a host-stepped rollout calls once per step."""
    return jax.jit(act_step(agent, action_spec))


def make_unroll(
    stepping: str,
    env: HostEnvironment,
    agent: Agent,
    device: jax.Device,
    key: chex.PRNGKey,
    unroll_length: int,
    send: Callable[[Trajectory], Trajectory],
    stop: Callable[[], None],
    clock: PhaseClock,
) -> Unroll:
    """The unroll `stepping` asks for: "compiled" or "host" (`config.env_stepping` as `settings.env_stepping` resolves it).

    Its time goes on the actor thread's `clock`: "inference" and "env" for a
    host-stepped rollout, "compiled" for a compiled one (`telemetry.ACTOR_PHASES`).
    """
    if stepping == "compiled":
        return compiled_unroll(env, agent, device, key, unroll_length, send, clock)
    act = make_act_step(agent, env.action_spec())
    return host_unroll(env, act, agent.state_for(env.num_envs), device, key, unroll_length, send, stop, clock)


def host_unroll(
    env: HostEnvironment,
    act_step: Callable,
    agent_state: Any,
    device: jax.Device,
    key: chex.PRNGKey,
    unroll_length: int,
    send: Callable[[Trajectory], Trajectory],
    stop: Callable[[], None],
    clock: PhaseClock,
) -> Unroll:
    """Rollouts stepped from Python: per step one `act_step` call and one read of its actions, then `env.step`.

    The timesteps stay on the host until the rollout ends, and the episode
    statistics are summed once per rollout. `stop()` is called before every
    step, to raise if the run is stopping. The environments are reset on the
    first call, in the calling thread. `agent_state` is the agent's state for
    the fresh environments, kept on `device` from then on.
    """
    key, agent_state = jax.device_put((key, agent_state), device)
    timestep: TimeStep | None = None
    episode_return, episode_length = np.zeros(env.num_envs, np.float64), np.zeros(env.num_envs, np.int64)

    def unroll(params: Any) -> Unrolled:
        nonlocal key, timestep, agent_state, episode_return, episode_length
        if timestep is None:
            timestep = env.reset()
        actions, extras, timesteps, first_state = [], [], [timestep], agent_state
        for _ in range(unroll_length):
            stop()
            clock.enter("inference")
            action, env_action, step_extras, agent_state, key = act_step(params, timestep, agent_state, key)
            host_action = np.asarray(env_action)
            clock.enter("env")
            timestep = env.step(host_action)
            actions.append(action)
            extras.append(step_extras)
            timesteps.append(timestep)
        clock.enter(None)
        stacked = stack_timesteps(timesteps)
        completed, episode_return, episode_length = rollout_episodes(stacked, episode_return, episode_length)
        trajectory = send(Trajectory(stacked, *stack_steps(actions, extras), with_time_axis(first_state)))
        return Unrolled(trajectory, completed)

    return unroll


def compiled_unroll(
    env: HostEnvironment,
    agent: Agent,
    device: jax.Device,
    key: chex.PRNGKey,
    unroll_length: int,
    send: Callable[[Trajectory], Trajectory],
    clock: PhaseClock,
) -> Unroll:
    """Rollouts as one program on `device`: `lax.scan` over `act_step` and `env.compiled_step()`.

    The program carries the environments' state, the last timestep, the running
    episode statistics and the key from one rollout to the next, all on the
    actor device; the host reads back only the finished episodes' three sums,
    after it has dispatched the program and the trajectory's `send`, so that the
    transfers start as soon as the program ends. The environments are reset on
    the first call, in the calling thread.
    """
    compiled = env.compiled_step()
    act = act_step(agent, env.action_spec())

    @jax.jit
    def program(params: Any, carry: tuple) -> tuple[tuple, Trajectory, Completed]:
        def body(carry, _):
            env_state, timestep, agent_state, episode_return, episode_length, key = carry
            action, env_action, extras, agent_state, key = act(params, timestep, agent_state, key)
            env_state, timestep = compiled.step(env_state, env_action)
            episode_return, episode_length = episodes.update(episode_return, episode_length, timestep)
            ended = episodes.completed(timestep, episode_return, episode_length)
            carry = (env_state, timestep, agent_state, episode_return, episode_length, key)
            return carry, (timestep, action, extras, ended)

        first, first_state = carry[1], carry[2]
        carry, (timesteps, actions, extras, ended) = jax.lax.scan(body, carry, length=unroll_length)
        timesteps = jax.tree.map(lambda x, xs: jnp.concatenate([x[None], xs]), first, timesteps)
        trajectory = Trajectory(timesteps, actions, extras, with_time_axis(first_state))
        return carry, trajectory, jax.tree.map(jnp.sum, ended)

    carry: tuple | None = None

    def unroll(params: Any) -> Unrolled:
        nonlocal carry
        if carry is None:
            zeros = np.zeros(env.num_envs, np.float32)
            fresh = (compiled.initial_state, env.reset(), agent.state_for(env.num_envs))
            carry = jax.device_put((*fresh, zeros, zeros.astype(np.int32), key), device)
        clock.enter("compiled")
        carry, trajectory, completed = program(params, carry)
        trajectory = send(trajectory)
        completed = Completed(*(float(x) for x in jax.device_get(completed)))  # Waits for the rollout.
        clock.enter(None)
        return Unrolled(trajectory, completed)

    return unroll


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
