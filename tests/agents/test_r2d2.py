"""Recurrent DQN the R2D2 way (Kapturowski et al. 2019): stored state, burn-in, trained transitions, sequence priorities.

The references are NumPy loops written from the paper and from the DQN and
`recurrent_replay` docstrings: a transition t of a sampled sequence is trained
when t >= burn_in and it is a real transition (not LAST -> FIRST); its target
sums real rewards until the n-th step or the episode's end, then bootstraps;
a sequence's priority is eta max |TD| + (1 - eta) mean |TD| over its trained
transitions.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from dm_env import specs

import podracer
from podracer.agents.algorithms import dqn
from podracer.agents.learning import exploration, recurrent_replay, replay
from podracer.agents.models import networks
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.trajectory import Trajectory
from podracer.config import settings
from podracer.envs.timestep import FIRST, LAST, MID, TimeStep
from podracer.experiment import schema
from tests.helpers import load_config

OBS, A, SIZE, GAMMA, ETA = 3, 4, 8, 0.9, 0.9
OBSERVATION_SPEC = specs.Array((OBS,), np.float32)
ACTION_SPEC = specs.DiscreteArray(A)

# A sampled batch of 3 sequences of L + n = 7 timesteps (L = 5 transitions, n = 2), with episode boundaries inside:
# column 0 a termination in the burn-in, column 1 a time limit (LAST, discount 1) among the trained transitions,
# column 2 a termination in the bootstrap tail, whose sequence also starts an episode.
STEP_TYPE = np.array(
    [
        [MID, MID, FIRST],
        [LAST, MID, MID],
        [FIRST, MID, MID],
        [MID, LAST, MID],
        [MID, FIRST, MID],
        [MID, MID, LAST],
        [MID, MID, FIRST],
    ],
    np.int32,
)
DISCOUNT = np.where(STEP_TYPE == LAST, 0.0, 1.0).astype(np.float32)
DISCOUNT[3, 1] = 1.0  # The time limit.
ITEMS, S = STEP_TYPE.shape


def sampled_sequences(seed: int, core: str = "lstm") -> replay.Sample:
    """The sequences of `STEP_TYPE` with random rewards, observations, actions, stored states and weights."""
    rng = np.random.default_rng(seed)
    reward = rng.normal(size=(ITEMS, S)).astype(np.float32)
    reward[STEP_TYPE == FIRST] = 0.0
    extras = {}
    if core != "none":
        state = networks.network_state(network_settings(core), ITEMS - 1)
        extras = {"state": jax.tree.map(lambda x: jnp.asarray(rng.normal(size=(ITEMS - 1, S, SIZE)), x.dtype), state)}
    trajectory = Trajectory(
        timestep=TimeStep(
            step_type=jnp.asarray(STEP_TYPE),
            reward=jnp.asarray(reward),
            discount=jnp.asarray(DISCOUNT),
            observation=jnp.asarray(rng.normal(size=(ITEMS, S, OBS)), jnp.float32),
        ),
        action=jnp.asarray(rng.integers(0, A, size=(ITEMS - 1, S)), jnp.int32),
        extras=extras,
    )
    weights = jnp.asarray(rng.uniform(0.2, 1.0, size=S), jnp.float32)
    return replay.Sample(trajectory, jnp.zeros(S, jnp.int32), weights)


def network_config(core: str):
    config = podracer.defaults("dqn").network
    config.core, config.core_size, config.hidden_sizes = core, SIZE, (8,)
    return config


def network_settings(core: str) -> NetworkSettings:
    return NetworkSettings(**network_config(core))


@functools.cache
def q_network_params(core: str, seed: int) -> networks.NetworkParams:
    """A small Q-network's first weights (compiled once per test session: an eager LSTM init is slow)."""
    module = networks.make_q_network(network_settings(core), OBSERVATION_SPEC, ACTION_SPEC)
    return jax.jit(lambda key: networks.init_module(key, module, OBSERVATION_SPEC))(jax.random.key(seed))


def agent_config(burn_in: int, sequence_length: int, n_step: int = 2) -> dqn.LossSettings:
    """DQN's defaults with these sequences, as the loss reads them."""
    config = podracer.defaults("dqn").agent
    config.gamma, config.n_step, config.priority_eta = GAMMA, n_step, ETA
    config.burn_in, config.sequence_length = burn_in, sequence_length
    return settings.read(dqn.LossSettings, config)


def np_sequence_reference(sample, q_online, q_target, burn_in, length, n):
    """(trained mask, targets, TD errors) `[L, S]` and priorities `[S]` of sequences, one transition at a time."""
    ts = sample.trajectory.timestep
    step_type, reward, discount = (np.asarray(x, np.float64) for x in (ts.step_type, ts.reward, ts.discount))
    action = np.asarray(sample.trajectory.action)
    q_online, q_target = np.asarray(q_online, np.float64), np.asarray(q_target, np.float64)
    mask, targets, td = (np.zeros((length, S)) for _ in range(3))
    for s in range(S):
        for t in range(length):
            mask[t, s] = t >= burn_in and step_type[t, s] != LAST
            total, scale = 0.0, 1.0
            for k in range(1, n + 1):
                total += scale * reward[t + k, s]
                scale *= GAMMA * discount[t + k, s]
                if step_type[t + k, s] == LAST or k == n:
                    bootstrap = q_target[t + k, s, np.argmax(q_online[t + k, s])]
                    targets[t, s] = total + scale * bootstrap
                    break
            td[t, s] = targets[t, s] - q_online[t, s, action[t, s]]
    priorities = np.zeros(S)
    for s in range(S):
        trained = np.abs(td[mask[:, s] == 1, s])
        if trained.size:
            priorities[s] = ETA * trained.max() + (1 - ETA) * trained.mean()
    return mask, targets, td, priorities


@pytest.mark.parametrize("burn_in, length", [(0, 5), (2, 5), (1, 3)])
def test_trained_mask_targets_and_priorities_match_the_numpy_loop(burn_in, length):
    n = ITEMS - length
    sample = sampled_sequences(seed=burn_in + length)
    trajectory = sample.trajectory
    rng = np.random.default_rng(7)
    q_online, q_target = (jnp.asarray(rng.normal(size=(ITEMS, S, A)), jnp.float32) for _ in range(2))
    mask, targets, td, priorities = np_sequence_reference(sample, q_online, q_target, burn_in, length, n)

    got_targets = dqn.sequence_targets(trajectory, q_online, q_target, GAMMA, True, 0.0, n)
    got_mask = recurrent_replay.trained_mask(trajectory, burn_in, length)
    chosen = jnp.take_along_axis(q_online[:length], trajectory.action[:length, :, None], axis=-1)[..., 0]
    got_priorities = recurrent_replay.sequence_priorities(jnp.abs(got_targets - chosen), got_mask, ETA)

    np.testing.assert_array_equal(got_mask, mask)
    np.testing.assert_allclose(got_targets, targets, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_priorities, priorities, rtol=1e-5, atol=1e-5)
    assert 0 < mask.sum() < (length - burn_in) * S  # Some trained transitions, and some masked past the burn-in.


@pytest.mark.parametrize("core, burn_in, length", [("lstm", 2, 5), ("gru", 0, 3), ("none", 0, 1)])
def test_loss_and_priorities_of_sequences_replayed_from_their_stored_state_match_numpy(core, burn_in, length):
    """The Q-values are those of the network unrolled over the whole sequence from the first item's stored state."""
    n = ITEMS - length
    sample = sampled_sequences(seed=3, core=core)
    online, target = q_network_params(core, 0), q_network_params(core, 1)
    timestep = sample.trajectory.timestep
    stored = jax.tree.map(lambda x: x[0], sample.trajectory.extras.get("state", ()))
    first = timestep.step_type == FIRST
    q_online = networks.unroll(online, stored, timestep.observation, first)[1]
    q_target = networks.unroll(target, stored, timestep.observation, first)[1]
    mask, _, td, priorities = np_sequence_reference(sample, q_online, q_target, burn_in, length, n)

    config = agent_config(burn_in, length, n)
    loss, (metrics, got_priorities) = jax.jit(lambda p, t: dqn.loss(p, sample, t, config))(online, target)

    huber = np.where(np.abs(td) <= 1.0, 0.5 * td**2, np.abs(td) - 0.5)
    expected = np.sum(mask * np.asarray(sample.weights)[None] * huber) / mask.sum()
    np.testing.assert_allclose(loss, expected, rtol=1e-4)
    np.testing.assert_allclose(metrics["td_abs"], np.sum(mask * np.abs(td)) / mask.sum(), rtol=1e-4)
    np.testing.assert_allclose(got_priorities, priorities, rtol=1e-4, atol=1e-6)


def test_burn_in_warms_the_state_but_takes_no_gradient():
    """Burning in 2 steps is learning from the rest of the sequence started from the burned-in state, held fixed."""
    burn_in, length = 2, 5
    sample = sampled_sequences(seed=11, core="gru")
    params = q_network_params("gru", 0)
    trajectory = sample.trajectory
    timestep = trajectory.timestep
    stored = jax.tree.map(lambda x: x[0], trajectory.extras["state"])
    prefix = jax.tree.map(lambda x: x[:burn_in], (timestep.observation, timestep.step_type == FIRST))
    burned_in, _ = networks.unroll(params, stored, *prefix)
    rest_states = jax.tree.map(
        lambda all_, first: all_[burn_in:].at[0].set(first), trajectory.extras["state"], burned_in
    )
    rest = Trajectory(
        timestep=jax.tree.map(lambda x: x[burn_in:], timestep),
        action=trajectory.action[burn_in:],
        extras={"state": rest_states},
    )
    # The target network is the online one, so that its state after the burn-in is the burned-in state too.
    rest_sample = sample._replace(trajectory=rest)
    burned = jax.jit(jax.grad(lambda p: dqn.loss(p, sample, p, agent_config(burn_in, length))[0]))(params)
    expected = jax.jit(jax.grad(lambda p: dqn.loss(p, rest_sample, p, agent_config(0, length - burn_in))[0]))(params)

    for got, want in zip(jax.tree.leaves(burned), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert optax.tree.norm(expected) > 0


def test_the_bootstrap_steps_keep_their_values_and_take_no_gradient():
    """Cutting the unroll after the trained steps changes no Q-value and no gradient of the trained steps' values;
    the bootstrap steps after them carry none."""
    trained = 4
    trajectory = recurrent_replay.from_stored_state(sampled_sequences(seed=5, core="gru").trajectory)
    params = q_network_params("gru", 0)

    def q_values(p, cut):
        return recurrent_replay.online_q_values(p, trajectory, 1, trained=trained if cut else None)

    np.testing.assert_allclose(q_values(params, True), q_values(params, False), rtol=1e-6, atol=1e-6)
    trained_grads = [jax.grad(lambda p, cut=cut: jnp.sum(q_values(p, cut)[:trained] ** 2))(params) for cut in (1, 0)]
    for got, want in zip(*map(jax.tree.leaves, trained_grads), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert optax.tree.norm(trained_grads[0]) > 0
    tail = jax.grad(lambda p: jnp.sum(q_values(p, True)[trained:] ** 2))(params)
    assert optax.tree.norm(tail) == 0
    assert optax.tree.norm(jax.grad(lambda p: jnp.sum(q_values(p, False)[trained:] ** 2))(params)) > 0


def test_a_recurrent_dqn_acts_from_its_state_stores_the_state_it_was_given_and_restarts_at_first():
    config = podracer.defaults("dqn")
    config.network = network_config("lstm")
    agent = dqn.build(config, num_updates=10)
    assert agent.recurrent and dqn.build(podracer.defaults("dqn"), num_updates=10).initial_state is None
    params = exploration.ActingParams(q_network_params("lstm", 0), epsilon=jnp.float32(0.0))  # Greedy.
    rng = np.random.default_rng(0)
    state = jax.tree.map(lambda x: jnp.asarray(rng.normal(size=x.shape), x.dtype), agent.initial_state(3))
    timestep = TimeStep(
        step_type=jnp.array([FIRST, MID, MID]),
        reward=jnp.zeros(3),
        discount=jnp.ones(3),
        observation=jnp.asarray(rng.normal(size=(3, OBS)), jnp.float32),
    )
    keys = jax.random.split(jax.random.key(1), 3)
    action, extras, next_state = agent.act(params, timestep, state, keys)
    fresh = agent.initial_state(3)
    _, fresh_extras, fresh_next = agent.act(params, timestep, fresh, keys)

    for given, stored in zip(jax.tree.leaves(state), jax.tree.leaves(extras["state"]), strict=True):
        np.testing.assert_array_equal(stored, given)
    np.testing.assert_array_equal(action, jnp.argmax(extras["q_values"], axis=-1))
    for leaf, fresh_leaf in zip(jax.tree.leaves(next_state), jax.tree.leaves(fresh_next), strict=True):
        np.testing.assert_allclose(leaf[0], fresh_leaf[0], rtol=1e-6)  # FIRST: the given state is dropped.
        assert not np.allclose(leaf[1:], fresh_leaf[1:])  # MID: it is carried on.
    np.testing.assert_allclose(extras["q_values"][0], fresh_extras["q_values"][0], rtol=1e-6)


@pytest.mark.parametrize(
    "core, fields, words",
    [
        ("lstm", {"burn_in": 4, "sequence_length": 4}, ["config.agent.burn_in", "nothing to learn from"]),
        ("none", {"burn_in": 1, "sequence_length": 4}, ["config.agent.burn_in", "recurrent core"]),
        ("none", {"sequence_length": 4}, ["config.agent.sequence_length", "recurrent core"]),
        ("lstm", {"sequence_length": 0}, ["config.agent.sequence_length", ">= 1"]),
        ("lstm", {"burn_in": -1}, ["config.agent.burn_in", ">= 0"]),
        ("lstm", {"priority_eta": 1.5}, ["config.agent.priority_eta", "<= 1"]),
    ],
)
def test_static_validation_rejects_burn_in_and_sequences_that_cannot_work(core, fields, words):
    config = load_config("anakin_cartpole_dqn", {"network.core": core, **{f"agent.{k}": v for k, v in fields.items()}})
    with pytest.raises(podracer.ConfigError) as error:
        schema.validate(config)
    for word in words:
        assert word in str(error.value), str(error.value)


def test_static_validation_accepts_a_burn_in_shorter_than_the_sequence_with_a_core():
    schema.validate(
        load_config("anakin_cartpole_dqn", {"network.core": "lstm", "agent.burn_in": 2, "agent.sequence_length": 3})
    )


R2D2_FIELDS = {
    "network.core": "lstm",
    "network.core_size": 32,
    "agent.burn_in": 2,
    "agent.sequence_length": 6,
    "agent.batch_size": 8,
    "agent.min_replay_size": 64,
}


@pytest.mark.slow  # 15-40 s on a busy 2-core host: compiling a recurrent replay learner.
@pytest.mark.parametrize(
    "name, fields",
    [
        ("anakin_cartpole_dqn", {"total_steps": 8 * 2 * 20, "updates_per_dispatch": 10}),
        ("sebulba_cartpole_dqn", {"total_steps": 2 * 4 * 8 * 6, "envs_per_thread": 4, "unroll_length": 8}),
    ],
)
def test_a_recurrent_dqn_trains_with_burn_in_and_keeps_each_steps_state_in_its_buffer(name, fields):
    fields = {**R2D2_FIELDS, **fields, "log_every_updates": 2, "agent.replay_ratio": 2}
    if name.startswith("anakin"):
        fields.pop("log_every_updates")
    result = podracer.train(load_config(name, fields))
    learned = [record for record in result.history if record["loss"] != 0]
    assert learned and all(np.isfinite(record["loss"]) and np.isfinite(record["q_mean"]) for record in learned)
    stored = result.learner_state.replay.value.buffer.experience["extras"]["state"]
    assert [leaf.shape[-1] for leaf in jax.tree.leaves(stored)] == [32, 32]  # The LSTM's (c, h) of each item.
    assert any(np.any(np.asarray(leaf) != 0) for leaf in jax.tree.leaves(stored))
