"""An actor's two ways of unrolling its environments, and how `config.env_stepping` chooses between them.

Stepped from Python or compiled into one program, the same agent, parameters,
key and environment seeds must give the same rollouts: the same actions, the
same timesteps (episode ends and restarts included), the same policy outputs
and the same finished-episode statistics, rollout after rollout.
"""

import types

import jax
import numpy as np
import pytest

import podracer
from podracer import agents
from podracer.config.errors import ConfigError
from podracer.envs import LAST, HostEnvironment, make_envpool_env
from podracer.sebulba import sebulba_settings
from podracer.sebulba.phase_clock import PhaseClock
from podracer.sebulba.telemetry import ACTOR_PHASES
from podracer.sebulba.unroll import make_unroll

UNROLL, ENVS, ROLLOUTS = 8, 4, 5


def _unrolls(stepping: str, agent, params, device):
    env = make_envpool_env("CartPole-v1", ENVS, seed=2, max_episode_steps=12)
    sent, clock = [], PhaseClock(ACTOR_PHASES)
    send = lambda trajectory: sent.append(trajectory) or trajectory  # noqa: E731
    unroll = make_unroll(stepping, env, agent, device, jax.random.key(7), UNROLL, send, lambda: None, clock)
    return [unroll(params) for _ in range(ROLLOUTS)], sent, env, clock.read().seconds


def test_compiled_and_host_unrolls_give_the_same_rollouts():
    agent = agents.make(podracer.defaults("impala", "sebulba"), num_updates=1)
    device = jax.devices()[0]
    spec_env = make_envpool_env("CartPole-v1", ENVS, seed=2)
    state = agent.init(jax.random.key(0), spec_env.observation_spec(), spec_env.action_spec())
    params = jax.device_put(agent.acting_params(state), device)
    host, host_sent, host_env, host_seconds = _unrolls("host", agent, params, device)
    compiled, compiled_sent, compiled_env, compiled_seconds = _unrolls("compiled", agent, params, device)
    assert len(host_sent) == len(compiled_sent) == ROLLOUTS  # Every trajectory went through `send`.
    step_types = []
    for a, b in zip(host, compiled, strict=True):
        assert a.trajectory.timestep.step_type.shape == (UNROLL + 1, ENVS)
        np.testing.assert_array_equal(a.trajectory.action, b.trajectory.action)
        jax.tree.map(np.testing.assert_array_equal, a.trajectory.timestep, b.trajectory.timestep)
        np.testing.assert_allclose(a.trajectory.extras["logits"], b.trajectory.extras["logits"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(a.completed, np.float64), np.asarray(b.completed, np.float64))
        step_types.append(np.asarray(a.trajectory.timestep.step_type))
    # Where the time went: stepping and inference from Python, or the compiled rollout as a whole.
    assert host_seconds["env"] > 0 and host_seconds["inference"] > 0 and host_seconds["compiled"] == 0
    assert compiled_seconds["env"] == compiled_seconds["inference"] == 0 and compiled_seconds["compiled"] > 0
    assert host_seconds["wait"] == compiled_seconds["wait"] == 0  # The actor thread waits, not the unroll.
    for earlier, later in zip(step_types, step_types[1:], strict=False):
        np.testing.assert_array_equal(earlier[-1], later[0])  # Each rollout starts where the last one ended.
    assert sum(float(u.completed.episodes) for u in host) == sum((s[1:] == LAST).sum() for s in step_types) > 0
    host_env.close()
    compiled_env.close()
    spec_env.close()


def _config(stepping: str):
    config = podracer.defaults("impala", "sebulba")
    config.env_stepping = stepping
    return config


CPU = types.SimpleNamespace(platform="cpu")
GPU = types.SimpleNamespace(platform="gpu")


class PythonOnly(HostEnvironment):
    """A host environment that does not say how to step it inside a program: `HostEnvironment`'s default."""

    num_envs = 2
    reset = step = observation_spec = action_spec = lambda self, *args: None


def test_auto_compiles_envpool_tasks_on_cpu_actors_and_steps_the_rest_from_python():
    cartpole = make_envpool_env("CartPole-v1", 2, seed=0)
    halfcheetah = make_envpool_env("HalfCheetah-v4", 2, seed=0)  # 64-bit arrays.
    python_only = PythonOnly()
    assert sebulba_settings.env_stepping(_config("auto"), cartpole, [CPU]) == "compiled"
    assert sebulba_settings.env_stepping(_config("auto"), cartpole, [CPU, GPU]) == "host"  # Only tested on CPUs.
    assert sebulba_settings.env_stepping(_config("compiled"), cartpole, [GPU]) == "compiled"  # Asked for explicitly.
    assert sebulba_settings.env_stepping(_config("host"), cartpole, [CPU]) == "host"
    for env in (halfcheetah, python_only):
        assert sebulba_settings.env_stepping(_config("auto"), env, [CPU]) == "host"
        with pytest.raises(ConfigError, match=r"config.env_stepping: 'compiled' cannot step .*env_stepping=host"):
            sebulba_settings.env_stepping(_config("compiled"), env, [CPU])
    cartpole.close()
    halfcheetah.close()
