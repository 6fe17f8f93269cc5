"""Sampled AlphaZero: its loss against NumPy, its search through the environment's own steps (every edge the step of
the sample its index names, nothing after an episode's end), its refusals, and its learning."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs
from ml_collections import ConfigDict

import podracer
from podracer.agents.algorithms import search
from podracer.agents.continuous_search import sampled_alphazero, sampled_model
from podracer.agents.continuous_search.sampled_search import SampleSettings
from podracer.agents.learning import replay
from podracer.agents.models import continuous_networks as cn
from podracer.agents.models import support
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.trajectory import Trajectory
from podracer.config import loading
from podracer.config.errors import ConfigError
from podracer.envs import env_registry, restart, transition
from podracer.envs.actions import OBSERVATION
from podracer.envs.observed_state import ObservesState
from podracer.envs.timestep import LAST, MID, TimeStep
from tests.agents.cued_target import UNIFORM_RETURN, CuedTarget
from tests.agents.test_support import np_two_hot
from tests.helpers import load_config
from tests.references import np_squashed_gaussian_log_prob

N_STEP, S, D, K, SUPPORT, GAMMA = 3, 4, 2, 3, 5, 0.9  # n-step, sequences, action size, samples, support, discount.
L = N_STEP + 2  # Timesteps per sampled sequence.
LOW, HIGH = (-2.0, -1.0), (2.0, 3.0)  # The action spec's bounds, different in each dimension.
NETWORK = NetworkSettings(torso="mlp", hidden_sizes=(8,), activation="relu", hidden_size=8, channels=(), num_blocks=0)


def tiny_params(observation_size=2, seed=0) -> cn.Model:
    observation_spec = {OBSERVATION: specs.Array((observation_size,), np.float32)}
    action_spec = specs.BoundedArray((D,), np.float32, LOW, HIGH)
    module = sampled_model.make_policy_value(NETWORK, observation_spec, action_spec, SUPPORT)
    return cn.init_model(jax.random.key(seed), module, observation_spec)


def sequences(seed=0, first_step_type=MID) -> replay.Sample:
    """Sequences within one episode (every later step MID), stored observations without the state, K samples and a
    search policy over them per step; the first step of sequence 0 is `first_step_type`."""
    rng = np.random.default_rng(seed)
    step_type = np.full((L, S), MID, np.int32)
    step_type[0, 0] = first_step_type
    trajectory = Trajectory(
        timestep=TimeStep(
            step_type=jnp.asarray(step_type),
            reward=jnp.asarray(rng.normal(size=(L, S)), jnp.float32),
            discount=jnp.ones((L, S), jnp.float32),
            observation={OBSERVATION: jnp.asarray(rng.normal(size=(L, S, 2)), jnp.float32)},
        ),
        action=jnp.asarray(rng.uniform(LOW, HIGH, size=(L - 1, S, D)), jnp.float32),
        extras={
            "search_policy": jnp.asarray(rng.dirichlet(np.ones(K), size=(L - 1, S)), jnp.float32),
            "sampled_actions": jnp.asarray(rng.uniform(-0.99, 0.99, size=(L - 1, S, K, D)), jnp.float32),
            "root_value": jnp.asarray(rng.normal(size=(L - 1, S)) * 3, jnp.float32),
        },
    )
    return replay.Sample(trajectory, jnp.zeros(S, jnp.int32), jnp.asarray(rng.uniform(0.2, 1.0, S), jnp.float32))


def loss_config(value_bootstrap):
    fields = {"gamma": GAMMA, "n_step": N_STEP, "support_size": SUPPORT, "value_cost": 0.5}
    return ConfigDict({**sampled_alphazero.defaults(), **fields, "value_bootstrap": value_bootstrap})


def np_log_softmax(logits):
    logits = np.asarray(logits, np.float64)
    return (
        logits
        - np.log(np.sum(np.exp(logits - logits.max(-1, keepdims=True)), -1, keepdims=True))
        - logits.max(-1, keepdims=True)
    )


@pytest.mark.parametrize("value_bootstrap", ["search", "model"])
def test_loss_is_the_sampled_policy_loss_and_the_value_cross_entropy_at_the_first_step(value_bootstrap):
    """At step 0 of each sequence: -sum_i pi_hat_i log pi(a_i | s_0) over the stored samples, plus value_cost times
    the cross-entropy of the value logits against the two-hot of z_0 = r_1 + g r_2 + g^2 r_3 + g^3 v_3, v_3 the
    stored root value or the network's value of the observation at step 3; importance-weighted."""
    params, drawn = tiny_params(), sequences()
    targets_settings = sampled_alphazero.loss_settings(loss_config(value_bootstrap))
    total, (metrics, priorities) = jax.jit(lambda p, s: sampled_alphazero.loss(p, s, targets_settings))(params, drawn)
    tr = jax.tree.map(lambda x: np.asarray(x, np.float64), drawn.trajectory)
    policy, value_logits = params(jax.tree.map(lambda x: x[0], drawn.trajectory.timestep.observation))
    _, later_logits = params(jax.tree.map(lambda x: x[N_STEP], drawn.trajectory.timestep.observation))
    bootstrap = (
        tr.extras["root_value"][N_STEP]
        if value_bootstrap == "search"
        else np.asarray(support.to_scalar(later_logits), np.float64)
    )
    z = sum(GAMMA**j * tr.timestep.reward[j + 1] for j in range(N_STEP)) + GAMMA**N_STEP * bootstrap
    log_pi = np_squashed_gaussian_log_prob(
        np.asarray(policy["mean"])[:, None],
        np.asarray(policy["log_std"])[:, None],
        np.arctanh(tr.extras["sampled_actions"][0]),
    )
    policy_loss = -np.sum(tr.extras["search_policy"][0] * log_pi, axis=-1)
    value_loss = np.array(
        [-np.sum(np_two_hot(z[s], SUPPORT) * np_log_softmax(value_logits[s])) for s in range(S)], np.float64
    )
    expected = np.mean(np.asarray(drawn.weights) * (policy_loss + 0.5 * value_loss))
    np.testing.assert_allclose(total, expected, rtol=1e-4)
    np.testing.assert_allclose(metrics["value_target"], z.mean(), rtol=1e-4)
    value = np.asarray(support.to_scalar(value_logits), np.float64)
    np.testing.assert_allclose(priorities, np.abs(value - z), rtol=1e-4, atol=1e-5)


def test_a_sequence_that_starts_on_a_last_step_adds_nothing():
    """A LAST timestep chose no action: its sequence's terms and priority are 0."""
    params, drawn = tiny_params(), sequences(first_step_type=LAST)
    targets_settings = sampled_alphazero.loss_settings(loss_config("search"))
    _, (metrics, priorities) = sampled_alphazero.loss(params, drawn, targets_settings)
    assert float(priorities[0]) == 0.0 and np.all(np.asarray(priorities[1:]) > 0.0)
    kept = replay.Sample(jax.tree.map(lambda x: x[:, 1:], drawn.trajectory), drawn.indices[1:], drawn.weights[1:])
    _, (kept_metrics, _) = sampled_alphazero.loss(params, kept, targets_settings)
    np.testing.assert_allclose(metrics["policy_loss"] * S, kept_metrics["policy_loss"] * (S - 1), rtol=1e-5)


@dataclasses.dataclass(frozen=True)
class Walk(podracer.envs.Environment):
    """A point moved by the actions: state (position [2], steps taken); the reward is the first component of the
    action; the episode terminates on the second step."""

    def reset(self, key):
        del key
        state = (jnp.zeros(2), jnp.int32(0))
        return state, restart(state[0])

    def step(self, state, action):
        position, steps = state[0] + action, state[1] + 1
        return (position, steps), transition(position, action[0], terminated=steps >= 2, truncated=False)

    def observation_spec(self):
        return specs.Array((2,), np.float32)

    def action_spec(self):
        return specs.BoundedArray((D,), np.float32, LOW, HIGH)


SIMULATIONS = 24


@pytest.fixture(scope="module")
def walk_search():
    """One pUCT search of 24 simulations over K = 2 samples from the root of `Walk`, deep enough to pass the end."""
    env, sample_settings = ObservesState(Walk()), SampleSettings(num_samples=2)
    plan = search.planner(
        search.SearchSettings(search="muzero", num_simulations=SIMULATIONS),
        sampled_alphazero.rules(env, GAMMA, sample_settings),
    )

    def run(params, key):
        _, timestep = env.reset(key)
        observation = jax.tree.map(lambda x: x[None], timestep.observation)
        root_output, _ = sampled_alphazero.root(sample_settings)(params, observation, jax.random.key(1))
        return plan(params, root_output, key)

    return jax.jit(run)(tiny_params(), jax.random.key(2))


@pytest.mark.slow  # A search compiled.
def test_each_edge_is_the_environments_step_with_the_sample_its_index_names(walk_search):
    """Every expanded node's state is its parent's stepped by the environment with the parent's sample (in the
    spec's bounds) at the index mctx chose: its position the parent's plus that action, its reward the action's
    first component and its discount gamma, 0 on the terminating second step; below it every reward and value is
    0."""
    tree = jax.tree.map(lambda x: np.asarray(x[0]), walk_search.search_tree)
    (positions, steps), samples, ended = tree.embeddings
    depth = {0: 0}
    for node in range(1, SIMULATIONS + 1):
        parent, index = tree.parents[node], tree.action_from_parent[node]
        depth[node] = depth[parent] + 1
        action = np.asarray(cn.to_bounds(samples[parent, index], tiny_params().module))
        np.testing.assert_allclose(positions[node], positions[parent] + action, rtol=1e-5, atol=1e-5)
        assert steps[node] == depth[node] and ended[node] == (depth[node] >= 2)
        reward, discount = tree.children_rewards[parent, index], tree.children_discounts[parent, index]
        if depth[node] <= 2:
            np.testing.assert_allclose(reward, action[0], rtol=1e-5)
            assert discount == pytest.approx(GAMMA if depth[node] == 1 else 0.0)
        else:
            assert reward == 0.0 and discount == 0.0
        if depth[node] >= 2:  # After the end: its value and everything backed up into it.
            assert tree.node_values[node] == 0.0
    assert max(depth.values()) >= 3  # The search went past the episode's end.


def pendulum_config(fields=None):
    config = podracer.defaults("sampled_alphazero")
    config.env.name = "gymnax:Pendulum-v1"
    for field, value in (fields or {}).items():
        loading.override(config, field, value)
    return config


@pytest.mark.parametrize(
    "fields, field",
    [
        ({"agent.num_samples": 1}, "agent.num_samples"),
        ({"agent.uniform_fraction": 1.5}, "agent.uniform_fraction"),
        ({"env.kwargs.observe_state": False}, "env.kwargs.observe_state"),
        ({"architecture": "sebulba"}, "architecture"),
    ],
)
def test_validate_names_the_field(fields, field):
    with pytest.raises(ConfigError, match=field):
        sampled_alphazero.validate(pendulum_config(fields))


def test_discrete_actions_are_refused_towards_alphazero():
    class Discrete:
        def action_spec(self):
            return specs.DiscreteArray(3)

    config = ConfigDict({"env": {"name": "cartpole"}, "agent": {"name": "sampled_alphazero"}})
    with pytest.raises(ConfigError, match="agent.name=alphazero"):
        sampled_model.refuse_discrete(config, Discrete())


def test_an_environment_that_is_not_the_configs_is_refused_before_compiling():
    """The search steps the environment `config.env.name` builds: training on another (here one without the state,
    then another one's state) is refused, naming the field."""
    config = pendulum_config()
    agent = podracer.agents.make(config, num_updates=1)
    pendulum = podracer.envs.make("gymnax:Pendulum-v1")
    with pytest.raises(ConfigError, match="env.kwargs.observe_state"):
        agent.init(jax.random.key(0), pendulum.observation_spec(), pendulum.action_spec())
    walk = ObservesState(Walk())
    with pytest.raises(ConfigError, match="env.name"):
        agent.init(jax.random.key(0), walk.observation_spec(), walk.action_spec())


@pytest.mark.slow  # About 20 s here, a few of them compiling.
@pytest.mark.learning("last 100 episodes", at_least=-500, random=-1200)
def test_sampled_alphazero_learns_to_swing_pendulum_up(learning):
    """The config's first 32,000 steps (250 of its 500 updates): seeds 0-4 end their last 100 episodes (from about
    12,000 steps on) at -219 to -313 (docs/testing.md); a uniformly random policy scores -1,200, and the same search
    with a network that does not learn (learning rate 1e-9) -1,301."""
    result = podracer.train(load_config("anakin_pendulum_sampled_alphazero", seed=learning.seed, total_steps=32_000))
    learning.check(podracer.recent_return(result.history))


@pytest.fixture
def cued_target(monkeypatch):
    """`CuedTarget` registered as `cued_target` for this test alone: the search steps the config's environment."""
    monkeypatch.setitem(env_registry._JAX, "cued_target", CuedTarget)
    return "cued_target"


@pytest.mark.slow  # About 14 s here, most of it compiling the search and the loss.
@pytest.mark.extended  # The Pendulum test above learns with the same search, network and loss.
@pytest.mark.learning("last 100 episodes", at_least=-0.4, random=UNIFORM_RETURN)
def test_sampled_alphazero_learns_to_point_at_a_cued_target(learning, cued_target):
    """The Pendulum config's search and learning on a task of one step (`tests/agents/cued_target.py`), with K = 2
    samples of the policy alone: the search takes the better of the two, which from a policy that does not learn
    scores -0.85 to -0.88 (learning rate 1e-9, seeds 0 and 1); the policy learns towards the search's choices and
    points at the target: seeds 0-4 end at -0.12 to -0.14 (docs/testing.md)."""
    fields = {"num_envs": 32, "unroll_length": 4, "updates_per_dispatch": 25, "agent.min_replay_size": 256}
    fields |= {"agent.n_step": 1, "agent.num_samples": 2, "agent.uniform_fraction": 0.0}
    fields |= {"env.name": cued_target, "agent.support_size": 10}
    config = load_config("anakin_pendulum_sampled_alphazero", fields, seed=learning.seed, total_steps=12_800)
    learning.check(podracer.recent_return(podracer.train(config).history))
