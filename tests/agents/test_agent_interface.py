"""The agent interface of every built-in agent: `learn` outside any mesh equals `learn` on a one-device mesh."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import podracer
from podracer import agents, envs
from podracer.agents.trajectory import with_time_axis
from podracer.devices.topology import DEVICE_AXIS, REPLICATED, device_mesh
from podracer.envs.actions import action_mask

T, B = 8, 6
CONTINUOUS = ("sac", "td3")  # Off-policy agents for continuous actions: tested on Pendulum.


def task(config) -> envs.Environment:
    """The environment an agent is tested on: Catch, Pendulum for a continuous agent, or the config's own game."""
    if config.agent.name in CONTINUOUS:
        return envs.make("gymnax:Pendulum-v1")
    if config.agent.name == "alphazero":
        return envs.make(config.env.name, **config.env.kwargs)
    return envs.make("catch", rows=5)


def random_legal_moves(params, timestep, state, keys):
    """AlphaZero's behaviour here: a uniformly random legal move, and that uniform distribution as the search policy.

    Its search compiled in a scan would cost more than the two `learn`s compared (`test_alphazero` checks acting by
    search and its search policies); `learn` only needs a trajectory whose targets are legal distributions.
    """
    legal = action_mask(timestep.observation)
    logits = jnp.where(legal, 0.0, -jnp.inf)
    action = jax.vmap(jax.random.categorical)(keys, logits).astype(jnp.int32)
    return action, {"search_policy": legal / legal.sum(-1, keepdims=True), "root_value": jnp.zeros(B)}, state


def rollout(agent: podracer.Agent, learner_state, key, spec_env: envs.Environment) -> podracer.Trajectory:
    """T steps of `agent.act` on B environments, as Anakin collects them, from B fresh agent states."""
    env = envs.wrap_for_training(spec_env)
    reset_key, step_key = jax.random.split(key)
    env_state, timestep = env.reset(jax.random.split(reset_key, B))
    params = agent.acting_params(learner_state)
    first_state = agent.state_for(B)
    act = agent.act_with_state if action_mask(spec_env.observation_spec()) is None else random_legal_moves

    def step(carry, key):
        env_state, timestep, state = carry
        action, extras, state = act(params, timestep, state, jax.random.split(key, B))
        env_state, next_timestep = env.step(env_state, action)
        return (env_state, next_timestep, state), (timestep, action, extras)

    carry = (env_state, timestep, first_state)
    (_, last, _), (timesteps, actions, extras) = jax.lax.scan(step, carry, jax.random.split(step_key, T))
    timesteps = jax.tree.map(lambda xs, x: jnp.concatenate([xs, x[None]]), timesteps, last)
    return podracer.Trajectory(timesteps, actions, extras, with_time_axis(first_state))


@pytest.mark.parametrize(
    "name",
    [
        "actor_critic",
        *(pytest.param(n, marks=pytest.mark.slow) for n in ("impala", "ppo", "pqn", "alphazero", *CONTINUOUS)),
    ],
)
def test_learn_without_a_mesh_equals_learn_on_a_one_device_mesh(name):
    assert name in agents.names()
    config = podracer.defaults(name)
    if name in ("ppo", "pqn"):
        config.agent.num_minibatches = 2  # 8 x 6 transitions in 2 minibatches of 24.
    if name in CONTINUOUS:  # The buffer's rows are the rollout's environments; two gradient steps on the first rollout.
        config.num_devices, config.num_envs, config.unroll_length = 1, B, T
        config.agent.update(buffer_size=B * 16, min_replay_size=B, batch_size=16, replay_ratio=2)
    if name == "alphazero":  # Self-play on tic-tac-toe (its defaults); the buffer samples sequences of 6 at once.
        config.num_envs, config.num_devices, config.unroll_length = B, 1, T
        config.agent.update(outcome_horizon=5, buffer_size=10 * B, min_replay_size=T * B, num_simulations=4)
    spec_env = task(config)
    agent = agents.make(config, num_updates=10)
    init_key, data_key, learn_key = jax.random.split(jax.random.key(0), 3)
    state = agent.init(init_key, spec_env.observation_spec(), spec_env.action_spec())
    trajectory = jax.jit(rollout, static_argnums=(0, 3))(agent, state, data_key, spec_env)
    if name not in CONTINUOUS:
        policy = trajectory.extras[{"pqn": "q_values", "alphazero": "search_policy"}.get(name, "logits")]
        assert policy.shape == (T, B, spec_env.action_spec().num_values)

    outside = jax.jit(agent.learn)(state, trajectory, learn_key, None)
    mesh = device_mesh(jax.devices()[:1])
    on_mesh = jax.jit(
        jax.shard_map(
            lambda s, t, k: agent.learn(s, t, k, DEVICE_AXIS),
            mesh=mesh,
            in_specs=(REPLICATED, REPLICATED, REPLICATED),
            out_specs=(REPLICATED, REPLICATED),
        )
    )(state, trajectory, learn_key)

    (state_outside, metrics_outside), (state_on_mesh, metrics_on_mesh) = outside, on_mesh
    assert set(metrics_outside) == set(metrics_on_mesh) and "loss" in metrics_outside
    # The same arithmetic in two programs; XLA may fuse them differently, so allow a rounding difference.
    for a, b in zip(jax.tree.leaves(state_outside), jax.tree.leaves(state_on_mesh), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    for metric in metrics_outside:
        np.testing.assert_allclose(metrics_outside[metric], metrics_on_mesh[metric], rtol=1e-6, err_msg=metric)
    before, after = agent.acting_params(state), agent.acting_params(state_outside)
    moved = [not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True)]
    assert any(moved)  # The update did change the parameters.


def test_every_builtin_agent_is_registered_with_defaults_and_checks():
    for name in ("actor_critic", "impala", "ppo"):
        entry = agents.lookup(name)
        assert entry.name == name and "gamma" in entry.defaults() and entry.validate is not None
    with pytest.raises(ValueError, match="Unknown agent 'nope'"):
        agents.lookup("nope")


@pytest.mark.parametrize(
    ("name", "weighs"),
    [
        ("actor_critic", "logits"),
        ("ppo", "logits"),
        ("impala", "logits"),
        ("dqn", "q_values"),
        ("pqn", "q_values"),
        pytest.param("muzero", "search_policy", marks=pytest.mark.slow),
    ],
)
def test_every_built_in_agents_greedy_act_takes_what_its_policy_weighs_most(name, weighs):
    """`greedy_act` returns the argmax of the outputs `act` reports for the same observations (DQN: no epsilon)."""
    config = podracer.defaults(name)
    if name == "muzero":
        config.agent.num_simulations = 4
    env = envs.make("catch", rows=5)
    agent = agents.make(config, num_updates=10)
    state = agent.init(jax.random.key(0), env.observation_spec(), env.action_spec())
    _, timestep = envs.wrap_for_training(env).reset(jax.random.split(jax.random.key(1), B))
    keys, params = jax.random.split(jax.random.key(2), B), agent.acting_params(state)
    act = jax.jit(
        functools.partial(agent.act_with_state, greedy=True)
    )  # MuZero's search: 20 s run eagerly, 3 s jitted.
    action, extras, _ = act(params, timestep, agent.state_for(B), keys)
    np.testing.assert_array_equal(action, np.argmax(extras[weighs], axis=-1))
    assert action.dtype == jnp.int32 and action.shape == (B,)
