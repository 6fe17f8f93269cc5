"""Action masks: the categorical head and epsilon-greedy never choose an illegal action; torsos never read the mask."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

import podracer
from podracer import agents
from podracer.agents.learning import exploration
from podracer.agents.models import normalization, policy
from podracer.config.errors import ConfigError
from podracer.envs.actions import ACTION_MASK

A, B, SAMPLES = 6, 32, 64
OBSERVATION_SPEC = {
    "board": specs.Array((3, 3, 2), np.float32, "board"),
    "features": specs.Array((4,), np.float32, "features"),
    ACTION_MASK: specs.Array((A,), bool, ACTION_MASK),
}
ACTION_SPEC = specs.DiscreteArray(A, name="action")


@jax.jit  # One program, not a compile for each of its operations.
def masked_observations(key) -> dict:
    """B observations with random legal sets, each with at least one legal action."""
    board_key, features_key, mask_key = jax.random.split(key, 3)
    legal = jax.random.bernoulli(mask_key, 0.4, (B, A)).at[:, 0].set(False)
    legal = legal.at[jnp.arange(B), jax.random.randint(mask_key, (B,), 1, A)].set(True)
    return {
        "board": jax.random.normal(board_key, (B, 3, 3, 2)),
        "features": jax.random.normal(features_key, (B, 4)),
        ACTION_MASK: legal,
    }


def make_agent(name: str, torso: str = "multi_input"):
    config = podracer.defaults(name)
    config.network.torso = torso
    agent = agents.make(config, num_updates=10)
    state = jax.jit(lambda key: agent.init(key, OBSERVATION_SPEC, ACTION_SPEC))(jax.random.key(0))
    return agent, agent.acting_params(state)


def test_mask_illegal_is_the_lowest_float_where_illegal_and_the_values_elsewhere():
    values = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -0.5]], np.float32)
    legal = np.array([[True, False, True], [False, False, True]])
    masked = np.asarray(policy.mask_illegal(jnp.asarray(values), jnp.asarray(legal)))
    np.testing.assert_array_equal(masked, np.where(legal, values, np.finfo(np.float32).min))
    probabilities = np.asarray(jax.nn.softmax(masked))
    np.testing.assert_array_equal(probabilities[~legal], 0.0)
    assert np.isfinite(np.asarray(policy.entropy({"logits": jnp.asarray(masked)}))).all()


@pytest.mark.parametrize("torso", ["mlp", pytest.param("multi_input", marks=pytest.mark.slow)])
def test_the_categorical_head_never_samples_a_masked_action(torso):
    agent, params = make_agent("ppo", torso)
    observation = masked_observations(jax.random.key(1))
    legal = np.asarray(observation[ACTION_MASK])

    @jax.jit
    def draw(key):
        return jax.vmap(lambda k: agent.act(params, observation, jax.random.split(k, B))[0])(
            jax.random.split(key, SAMPLES)
        )

    actions = np.asarray(draw(jax.random.key(2)))  # [SAMPLES, B]
    chosen = np.take_along_axis(np.broadcast_to(legal, (SAMPLES, B, A)), actions[..., None], -1)[..., 0]
    assert chosen.all(), f"{(~chosen).sum()} of {chosen.size} actions were masked"
    # Every legal action is still drawn: the mask removes the illegal ones and nothing else.
    drawn = np.zeros((B, A), bool)
    drawn[np.arange(B)[None, :].repeat(SAMPLES, 0), actions] = True
    np.testing.assert_array_equal(drawn, legal)


def test_masked_log_probabilities_give_illegal_actions_no_mass():
    agent, params = make_agent("ppo")
    observation = masked_observations(jax.random.key(3))
    _, (outputs, _) = params.step((), observation)
    log_probs = jnp.stack([policy.log_prob(outputs, jnp.full((B,), a)) for a in range(A)], axis=-1)
    probabilities = np.exp(np.asarray(log_probs))
    legal = np.asarray(observation[ACTION_MASK])
    np.testing.assert_array_equal(probabilities[~legal], 0.0)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, rtol=1e-5)


def test_epsilon_greedy_chooses_only_legal_actions():
    """At epsilon 0, 0.5 and 1, in one program: epsilon is an input to `act`, not a constant compiled in."""
    agent, params = make_agent("dqn")
    observation = masked_observations(jax.random.key(4))
    legal = np.asarray(observation[ACTION_MASK])
    draw = jax.jit(jax.vmap(lambda p, k: agent.act(p, observation, jax.random.split(k, B))[0], in_axes=(None, 0)))
    for epsilon in (0.0, 0.5, 1.0):
        actions = np.asarray(
            draw(params.replace(epsilon=jnp.float32(epsilon)), jax.random.split(jax.random.key(5), SAMPLES))
        )
        legal_taken = np.take_along_axis(np.broadcast_to(legal, (SAMPLES, B, A)), actions[..., None], -1)
        assert legal_taken.all(), f"epsilon {epsilon}"


def test_epsilon_greedy_without_a_mask_draws_every_action():
    keys = jax.random.split(jax.random.key(6), 4096)
    actions = np.asarray(exploration.epsilon_greedy(jnp.zeros((4096, A)), jnp.float32(1.0), keys))
    assert set(actions.tolist()) == set(range(A))


def test_the_torso_does_not_read_the_mask():
    """Two observations that differ only in their masks give the same value and the same logits where legal."""
    _, params = make_agent("ppo")
    observation = masked_observations(jax.random.key(7))
    all_legal = {**observation, ACTION_MASK: jnp.ones((B, A), bool)}
    (_, (masked, value)), (_, (unmasked, other_value)) = (params.step((), o) for o in (observation, all_legal))
    np.testing.assert_allclose(value, other_value, rtol=1e-6)
    legal = np.asarray(observation[ACTION_MASK])
    np.testing.assert_allclose(np.asarray(masked["logits"])[legal], np.asarray(unmasked["logits"])[legal], rtol=1e-6)


def test_muzero_refuses_a_masked_environment():
    config = podracer.defaults("muzero")
    agent = agents.make(config, num_updates=10)
    with pytest.raises(ConfigError, match="masks illegal actions"):
        agent.init(jax.random.key(0), OBSERVATION_SPEC, ACTION_SPEC)


def test_observation_normalisation_passes_the_mask_through():
    observation = masked_observations(jax.random.key(8))
    statistics = normalization.update(normalization.init(OBSERVATION_SPEC), observation, 1, None)
    normalized = normalization.normalize_observation(statistics, observation)
    np.testing.assert_array_equal(normalized[ACTION_MASK], observation[ACTION_MASK])
    assert normalized[ACTION_MASK].dtype == bool
    assert abs(float(jnp.mean(normalized["features"]))) < 1e-5  # The other entries are normalised.
