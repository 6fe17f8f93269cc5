"""TD3's clipped double-Q target with target policy smoothing against NumPy (`tests/references.py`), its delayed
actor and target updates, and the check of its policy delay."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

import podracer
from podracer import agents
from podracer.agents.algorithms import off_policy, td3
from podracer.agents.trajectory import Trajectory
from podracer.config.errors import ConfigError
from podracer.envs.timestep import MID, TimeStep
from tests import references as ref

S, D, GAMMA = 16, 2, 0.9
OBSERVATION_SPEC = specs.Array((3,), np.float32)
ACTION_SPEC = specs.BoundedArray((D,), np.float32, minimum=-1.0, maximum=1.0)


def make_agent(**agent_fields) -> tuple[podracer.Agent, off_policy.OffPolicyState]:
    config = podracer.defaults("td3")
    config.num_devices, config.num_envs, config.unroll_length = 1, 4, 2
    config.network.hidden_sizes = (8, 8)
    config.agent.update(buffer_size=64, min_replay_size=8, batch_size=8, **agent_fields)
    agent = agents.make(config, num_updates=10)
    return agent, jax.jit(lambda key: agent.init(key, OBSERVATION_SPEC, ACTION_SPEC))(jax.random.key(0))


def test_clipped_double_q_target_with_smoothing_noise_matches_numpy_term_by_term():
    """y = r + gamma d min_i Q'_i(s', clip(mu'(s') + clip(sigma eps, -c, c), -1, 1)), with the target actor
    saturated at the bounds and sigma 0.6 against c 0.5, so that both clips act."""
    _, state = make_agent()
    state = state.replace(
        own=jax.tree.map(lambda x: 1e3 * x, state.own),  # The target actor, apart from the actor: tanh saturates.
        target_critic=state.critic.params.replace(
            variables=jax.tree.map(lambda x: 1.5 * x, state.critic.params.variables)
        ),
    )
    rng = np.random.default_rng(0)
    next_observation = rng.normal(size=(S, 3)).astype(np.float32)
    reward, terminal = rng.normal(size=S).astype(np.float32), rng.random(S) < 0.3
    batch = off_policy.Batch(
        observation=next_observation,
        action=np.zeros((S, D), np.float32),
        reward=reward,
        discount=(GAMMA * ~terminal).astype(np.float32),
        next_observation=next_observation,
        valid=np.ones(S, np.float32),
        weights=np.ones(S, np.float32),
    )
    key = jax.random.key(5)
    targets = off_policy.td_targets(batch, td3.next_value(state, batch, key, 0.6, 0.5))

    target_mu = np.asarray(state.actor.params.replace(variables=state.own)(next_observation), np.float64)
    noise = np.asarray(jax.random.normal(key, target_mu.shape), np.float64)
    assert np.any(np.abs(0.6 * noise) > 0.5) and np.any(np.abs(target_mu) > 0.99)
    action = ref.np_td3_target_action(target_mu, noise, 0.6, 0.5)
    assert np.any(np.abs(target_mu + np.clip(0.6 * noise, -0.5, 0.5)) > 1.0)  # The action clip acts too.
    target_q = np.asarray(state.target_critic(next_observation, jnp.asarray(action, jnp.float32)))
    ref.close(targets, ref.np_clipped_double_q_target(reward, ~terminal, GAMMA, target_q))


def rollout(seed: int) -> Trajectory:
    """Two steps of 4 environments, none ending, with random observations, rewards and actions."""
    rng = np.random.default_rng(seed)
    timestep = TimeStep(
        step_type=np.full((3, 4), MID, np.int32),
        reward=rng.normal(size=(3, 4)).astype(np.float32),
        discount=np.ones((3, 4), np.float32),
        observation=rng.normal(size=(3, 4, 3)).astype(np.float32),
    )
    return Trajectory(timestep, rng.uniform(-1, 1, size=(2, 4, D)).astype(np.float32), {})


def test_actor_and_targets_move_only_every_policy_delay_critic_steps():
    """With policy_delay 2, the first gradient step trains the critics alone; the second the actor too, and moves
    both targets (Fujimoto et al. 2018, Algorithm 1)."""
    agent, state = make_agent(policy_delay=2, replay_ratio=1)
    learn = jax.jit(agent.learn)

    def changed(a, b) -> bool:
        return any(not np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))

    first, _ = learn(state, rollout(0), jax.random.key(1))
    assert int(first.gradient_steps) == 1 and changed(state.critic, first.critic)
    assert not changed(state.actor, first.actor)
    assert not changed(state.own, first.own) and not changed(state.target_critic, first.target_critic)
    second, _ = learn(first, rollout(1), jax.random.key(2))
    assert int(second.gradient_steps) == 2 and changed(first.actor, second.actor)
    assert changed(first.own, second.own) and changed(first.target_critic, second.target_critic)


def test_a_policy_delay_of_zero_is_a_config_error():
    config = podracer.defaults("td3")
    config.agent.policy_delay = 0
    with pytest.raises(ConfigError, match=">= 1") as error:
        podracer.validate_config(config)
    assert error.value.field == "agent.policy_delay"
