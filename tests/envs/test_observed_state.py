"""`ObservesState`: the observation carries the environment's state, and a step from that state is the real step."""

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ml_collections import ConfigDict

from podracer import envs
from podracer.config.errors import ConfigError
from podracer.envs.actions import ACTION_MASK, ENV_STATE, OBSERVATION, network_input
from podracer.envs.env_registry import with_config_kwargs
from podracer.envs.observed_state import ObservesState, own_observation


def same(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)


def test_a_step_from_the_observed_state_is_the_environments_own_step():
    """gymnax's Pendulum through its adapter, whose state holds a PRNG key: the observation holds the state with the
    key as raw data; `model_step` from it gives the timestep and next state the environment's own step gives."""
    plain, observing = envs.make("gymnax:Pendulum-v1"), envs.make("gymnax:Pendulum-v1", observe_state=True)
    assert isinstance(observing, ObservesState) and not isinstance(plain, ObservesState)
    state, timestep = observing.reset(jax.random.key(3))
    same(timestep.observation[OBSERVATION], plain.reset(jax.random.key(3))[1].observation)
    assert timestep.observation[ENV_STATE].key.dtype == jnp.uint32  # Plain arrays, as mctx's tree keeps them.
    torque = jnp.array([1.5])
    for _ in range(3):  # The state's key is split on every step: each step reads the one the last left.
        observed_next, modelled = jax.jit(observing.model_step)(timestep.observation[ENV_STATE], torque)
        _, plain_timestep = plain.step(state, torque)
        state, timestep = observing.step(state, torque)
        same(modelled, timestep)
        same(observed_next, timestep.observation[ENV_STATE])
        same((plain_timestep.observation, plain_timestep.reward), (timestep.observation[OBSERVATION], timestep.reward))
    assert float(timestep.reward) < 0.0


def test_the_spec_has_the_states_leaves_and_no_torso_reads_them():
    env = envs.make("gymnax:Pendulum-v1", observe_state=True)
    spec = env.observation_spec()
    _, timestep = env.reset(jax.random.key(0))
    shapes = jax.tree.map(lambda x: (x.shape, x.dtype), timestep.observation)
    assert jax.tree.map(lambda s: (s.shape, s.dtype), spec) == shapes
    assert set(network_input(spec)) == {OBSERVATION}


def test_an_observed_dict_keeps_its_entries_and_its_action_mask():
    """A Pgx game observes `{observation, action_mask}`: both stay where the agent looks for them, beside the state."""
    pytest.importorskip("pgx")
    env = envs.make("pgx:tic_tac_toe", observe_state=True)
    _, timestep = env.reset(jax.random.key(0))
    assert set(timestep.observation) == {OBSERVATION, ACTION_MASK, ENV_STATE}
    assert timestep.observation[ACTION_MASK].shape == (9,)


def test_observe_state_must_be_a_bool_and_names_the_field():
    config = ConfigDict({"env": {"name": "gymnax:Pendulum-v1", "kwargs": {"observe_state": "yes"}}})
    with pytest.raises(ConfigError, match="env.kwargs"):
        with_config_kwargs(config, envs.make, config.env.name)


def test_what_a_dataset_keeps_is_the_observation_of_the_environment_without_the_option():
    """`own_observation`: the state a search reads is left out, and what remains is what the environment observes
    without `observe_state` (Pendulum: its array) or `self_play` (a Pgx game: its planes and mask); spec and values."""
    cases = [("gymnax:Pendulum-v1", "observe_state")]
    if importlib.util.find_spec("pgx") is not None:
        cases.append(("pgx:tic_tac_toe", "self_play"))
    for name, option in cases:
        plain, searched = envs.make(name), envs.make(name, **{option: True})
        own, spec = own_observation(searched)
        assert jax.tree.structure(spec) == jax.tree.structure(plain.observation_spec())
        same(own(searched.reset(jax.random.key(1))[1].observation), plain.reset(jax.random.key(1))[1].observation)
    own, spec = own_observation(envs.make("catch"))
    assert spec == envs.make("catch").observation_spec() and own("anything") == "anything"
