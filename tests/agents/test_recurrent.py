"""Recurrent agents: the state starts afresh where an episode starts, and `learn` replays exactly what `act` saw."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import podracer
from podracer import agents, envs
from podracer.agents.models import cores, fused_cells, networks, policy
from podracer.envs.timestep import FIRST, MID, TimeStep
from tests.helpers import load_config

B = 6


def recurrent_agent(core: str, name: str = "actor_critic") -> tuple[podracer.Agent, object]:
    config = podracer.defaults(name)
    config.network.core, config.network.core_size = core, 8
    agent = agents.make(config, num_updates=10)
    spec_env = envs.make("catch", rows=5)
    return agent, agent.init(jax.random.key(0), spec_env.observation_spec(), spec_env.action_spec())


def random_state(agent: podracer.Agent, key) -> object:
    fresh = agent.state_for(B)
    keys = jax.random.split(key, len(jax.tree.leaves(fresh)))
    leaves = [jax.random.normal(k, x.shape) for k, x in zip(keys, jax.tree.leaves(fresh), strict=True)]
    return jax.tree.unflatten(jax.tree.structure(fresh), leaves)


@pytest.mark.parametrize("core", [pytest.param("lstm", marks=pytest.mark.slow), "gru"])  # One in `make test-fast`.
def test_the_state_act_returns_at_a_first_timestep_is_the_initial_state_passed_through_one_step(core):
    agent, learner_state = recurrent_agent(core)
    params = agent.acting_params(learner_state)
    step_type = jnp.array([FIRST, MID, FIRST, MID, FIRST, MID], jnp.int32)
    observation = jax.random.uniform(jax.random.key(1), (B, 5, 5))
    timestep = TimeStep(step_type, jnp.zeros(B), jnp.ones(B), observation)
    keys = jax.random.split(jax.random.key(2), B)

    before = random_state(agent, jax.random.key(3))
    other_before = random_state(agent, jax.random.key(4))
    act = jax.jit(agent.act)
    _, _, after = act(params, timestep, before, keys)
    _, _, other_after = act(params, timestep, other_before, keys)
    # The initial state through one step of the network, with no episode starting in it.
    expected = jax.jit(lambda params: params.step(agent.state_for(B), observation)[0])(params)

    first = np.asarray(step_type == FIRST)
    for leaf, other_leaf, expected_leaf, before_leaf in zip(
        *(jax.tree.leaves(x) for x in (after, other_after, expected, before)), strict=True
    ):
        np.testing.assert_allclose(leaf[first], expected_leaf[first], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(other_leaf[first], expected_leaf[first], rtol=1e-6, atol=1e-6)
        assert not np.allclose(leaf[~first], other_leaf[~first])  # Mid-episode, the state before matters.
        assert leaf.shape == before_leaf.shape == (B, 8)


def test_a_core_resets_each_environment_independently_to_its_initial_state():
    fresh = cores.initial_state("lstm", 3, 4)
    state = jax.tree.map(lambda x: x + 7.0, fresh)
    first = jnp.array([True, False, False, True])
    reset = fused_cells.reset_at_first(state, fresh, first)
    for leaf in jax.tree.leaves(reset):
        np.testing.assert_array_equal(np.asarray(leaf)[:, 0], [0.0, 7.0, 7.0, 0.0])


def with_log_prob_probe(agent: podracer.Agent) -> podracer.Agent:
    """`agent` whose `learn` also reports how far the log-probabilities it replays are from those acted with."""

    def learn(state, trajectory, key, axis_name=None):
        params = agent.acting_params(state)
        outputs, _ = networks.unroll_trajectory(networks.unroll, params, trajectory)
        replayed = policy.log_prob(jax.tree.map(lambda x: x[:-1], outputs), trajectory.action)
        behaviour = policy.log_prob(trajectory.extras, trajectory.action)
        state, metrics = agent.learn(state, trajectory, key, axis_name)
        gap = jnp.max(jnp.abs(replayed - behaviour))
        starts = jnp.sum(trajectory.timestep.step_type[1:-1] == FIRST)
        return state, {**metrics, "log_prob_gap": gap, "episode_starts": starts.astype(jnp.float32)}

    return podracer.Agent(agent.init, agent.act, learn, agent.acting_params, agent.initial_state)


@pytest.mark.slow  # 6 updates on each architecture, compiled for an LSTM.
@pytest.mark.parametrize(
    "config_name, overrides",
    [
        ("anakin_catch", {"num_envs": 8, "unroll_length": 12, "total_steps": 8 * 12 * 6, "updates_per_dispatch": 1}),
        (
            "sebulba_cartpole_impala",
            {"envs_per_thread": 4, "unroll_length": 30, "total_steps": 4 * 30 * 2 * 6, "log_every_updates": 1},
        ),
        (
            "sebulba_cartpole_impala",
            {
                "envs_per_thread": 4,
                "unroll_length": 30,
                "total_steps": 4 * 30 * 2 * 6,
                "log_every_updates": 1,
                "env_stepping": "host",
            },
        ),
    ],
)
def test_learn_replays_the_behaviour_log_probs_from_the_stored_state_with_policy_lag_zero(config_name, overrides):
    """Replayed from the trajectory's initial state, resetting at FIRST as `act` did, the policy is the acted one."""
    fields = {"network.core": "lstm", "network.core_size": 16, "network.shared_torso": True}
    config = load_config(config_name, {**fields, **overrides})
    if config.architecture == "sebulba":
        config.policy_lag = 0
    agent = with_log_prob_probe(agents.make(config, num_updates=6))
    history = podracer.train(config, agent=agent).history
    assert sum(record["episode_starts"] for record in history) > 0  # Sequences crossed into new episodes.
    assert max(record["log_prob_gap"] for record in history) < 1e-4
