"""SAC's soft Bellman target, squashed log-probability and temperature loss against NumPy (`tests/references.py`),
its acting, and the checks of its fields and action specs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

import podracer
from podracer import agents
from podracer.agents.algorithms import off_policy, sac
from podracer.agents.models import continuous_networks
from podracer.config.errors import ConfigError
from tests import references as ref

S, D, GAMMA = 16, 2, 0.9
OBSERVATION_SPEC = specs.Array((3,), np.float32)
ACTION_SPEC = specs.BoundedArray((D,), np.float32, minimum=-2.0, maximum=[1.0, 3.0])


def make_state(name: str, **agent_fields):
    """A fresh learner state of `name` (sac or td3) with small MLPs and buffer, and the config it came from."""
    config = podracer.defaults(name)
    config.num_envs = 4
    config.network.hidden_sizes = (8, 8)
    config.agent.update(buffer_size=64, min_replay_size=8, **agent_fields)
    agent = agents.make(config, num_updates=10)
    return agent, jax.jit(lambda key: agent.init(key, OBSERVATION_SPEC, ACTION_SPEC))(jax.random.key(0))


def make_batch(seed: int = 0) -> off_policy.Batch:
    """Random transitions: some terminal (discount 0), some masked (an episode's last step to the next's first)."""
    rng = np.random.default_rng(seed)
    f32 = np.float32
    return off_policy.Batch(
        observation=rng.normal(size=(S, 3)).astype(f32),
        action=rng.uniform(-1, 1, size=(S, D)).astype(f32),
        reward=rng.normal(size=S).astype(f32),
        discount=(GAMMA * (rng.random(S) > 0.3)).astype(f32),
        next_observation=rng.normal(size=(S, 3)).astype(f32),
        valid=(rng.random(S) > 0.2).astype(f32),
        weights=np.ones(S, f32),
    )


def scaled(model: continuous_networks.Model, factor: float) -> continuous_networks.Model:
    return model.replace(variables=jax.tree.map(lambda x: x * factor, model.variables))


def test_soft_bellman_target_matches_numpy_term_by_term():
    """y = r + gamma d (min_i Q'_i(s', a') - alpha log pi(a'|s')): the target critics' smaller value at a fresh
    squashed sample, its tanh-corrected log-probability, the temperature, the discount and the terminal mask."""
    _, state = make_state("sac")
    log_alpha = np.log(0.3)
    state = state.replace(
        own=state.own.replace(params=jnp.float32(log_alpha)),
        target_critic=scaled(state.critic.params, 1.5),  # Apart from the online critics, which must not be used.
    )
    batch, key = make_batch(), jax.random.key(7)
    targets = off_policy.td_targets(batch, sac.next_value(state, batch, key))

    outputs = jax.tree.map(np.asarray, state.actor.params(batch.next_observation))
    noise = np.asarray(jax.random.normal(key, outputs["mean"].shape), np.float64)
    u = outputs["mean"] + np.exp(outputs["log_std"]) * noise
    log_prob = ref.np_squashed_gaussian_log_prob(outputs["mean"], outputs["log_std"], u)
    target_q = np.asarray(state.target_critic(batch.next_observation, jnp.asarray(np.tanh(u), jnp.float32)))
    online_q = np.asarray(state.critic.params(batch.next_observation, jnp.asarray(np.tanh(u), jnp.float32)))
    assert not np.allclose(target_q, online_q)
    expected = ref.np_soft_bellman_target(batch.reward, batch.discount / GAMMA, GAMMA, target_q, log_prob, 0.3)
    ref.close(targets, expected)
    terminal = batch.discount == 0
    ref.close(targets[terminal], batch.reward[terminal])  # No bootstrap past a termination.


def test_squashed_log_probability_stays_finite_and_exact_where_tanh_saturates():
    """Eq. 21 in float64 against the stable form in float32, for pre-squash values up to |u| = 12."""
    mean = np.array([[-9.0, 0.5], [3.0, 9.0], [0.0, -0.2]], np.float32)
    log_std = np.array([[0.0, -1.0], [1.0, 0.5], [-5.0, 2.0]], np.float32)
    noise = np.array([[-3.0, 1.0], [0.5, 3.0], [2.0, -1.5]], np.float32)
    action, log_prob = continuous_networks.squashed_sample({"mean": mean, "log_std": log_std}, noise)
    u = mean.astype(np.float64) + np.exp(log_std.astype(np.float64)) * noise
    ref.close(action, np.tanh(u), rtol=1e-6, atol=1e-6)
    ref.close(log_prob, ref.np_squashed_gaussian_log_prob(mean, log_std, u), rtol=1e-4, atol=1e-3)


def test_temperature_loss_and_its_gradient_match_numpy():
    """J(alpha) = E[-alpha log pi - alpha H_target] over valid samples, differentiated in log alpha (eq. 18)."""
    rng = np.random.default_rng(3)
    log_prob, valid = rng.normal(size=S).astype(np.float32), (rng.random(S) > 0.2).astype(np.float32)
    entropy = -off_policy.masked_mean(jnp.asarray(log_prob), jnp.asarray(valid))
    for log_alpha, target in ((0.0, -2.0), (np.log(0.05), -0.5), (1.0, 0.0)):
        loss, grad = jax.value_and_grad(lambda a: sac.temperature_loss(a, entropy, target)[0])(jnp.float32(log_alpha))
        expected_loss, expected_grad = ref.np_temperature_loss(log_prob, valid, log_alpha, target)
        ref.close(loss, expected_loss)
        ref.close(grad, expected_grad)


def test_acting_samples_within_the_bounds_and_greedy_acting_takes_the_squashed_mean():
    agent, state = make_state("sac")
    params, observation = agent.acting_params(state), make_batch().observation
    keys = jax.random.split(jax.random.key(1), S)
    action, extras = agent.act(params, observation, keys)
    assert action.shape == (S, D) and set(extras) == {"mean", "log_std"}
    assert np.all(action >= ACTION_SPEC.minimum) and np.all(action <= ACTION_SPEC.maximum)
    greedy, _ = agent.greedy_act(params, observation, keys)
    low, high = np.broadcast_to(ACTION_SPEC.minimum, D), ACTION_SPEC.maximum
    ref.close(greedy, low + (np.tanh(extras["mean"]) + 1) / 2 * (high - low), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("target_entropy", [1.0, 0.5, "auto"])
def test_a_target_entropy_above_zero_is_a_config_error(target_entropy):
    config = podracer.defaults("sac")
    config.agent.target_entropy = target_entropy
    with pytest.raises(ConfigError, match="<= 0") as error:
        podracer.validate_config(config)
    assert error.value.field == "agent.target_entropy"
    for fine in (None, -1.0, 0.0):
        config.agent.target_entropy = fine
        podracer.validate_config(config)


@pytest.mark.parametrize("name", ["sac", "td3"])
def test_a_continuous_agent_on_discrete_actions_is_a_config_error_naming_the_environment(name):
    agent = agents.make(podracer.defaults(name), num_updates=10)
    with pytest.raises(ConfigError, match="BoundedArray") as error:
        agent.init(jax.random.key(0), OBSERVATION_SPEC, specs.DiscreteArray(3))
    assert error.value.field == "env.name"


def test_a_discrete_agent_on_continuous_actions_is_a_config_error_naming_the_environment():
    agent = agents.make(podracer.defaults("dqn"), num_updates=10)
    with pytest.raises(ConfigError, match="DiscreteArray") as error:
        agent.init(jax.random.key(0), OBSERVATION_SPEC, ACTION_SPEC)
    assert error.value.field == "env.name"


@pytest.mark.parametrize(("field", "value"), [("network.torso", "nature_cnn"), ("network.core", "lstm")])
def test_sac_and_td3_refuse_networks_they_cannot_build(field, value):
    for name in ("sac", "td3"):
        config = podracer.defaults(name)
        group, leaf = field.split(".")
        config[group][leaf] = value
        with pytest.raises(ConfigError) as error:
            podracer.validate_config(config)
        assert error.value.field == field
