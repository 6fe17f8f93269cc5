"""The actor-critic networks: output shapes, torsos wired from the config, parameters as data, policy heads."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

from podracer import agents
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.models.networks import ActorCritic, NetworkParams, init_params, make_network
from podracer.agents.models.torsos import TORSOS
from podracer.config.errors import ConfigError
from podracer.experiment.schema import defaults, validate
from tests.agents.network_cases import (
    ACTION_SPEC,
    ATARI_SHAPE,
    NUM_ACTIONS,
    PIXEL_SPEC,
    PIXEL_TORSOS,
    build_network,
    head_params,
    num_params,
    one_step,
    random_frames,
    random_params,
)


@pytest.mark.parametrize("torso", [torso for torso in TORSOS if torso != "muzero_resnet"])  # MuZero's own model.
def test_output_shapes(torso):
    """Over a sequence: observations `[T, B, ...]` give outputs `[T, B, ...]`, and a feed-forward state stays `()`."""
    observation = (
        jax.ShapeDtypeStruct((2, 3, 7), jnp.float32)
        if torso == "mlp"
        else jax.ShapeDtypeStruct((2, 3) + ATARI_SHAPE, jnp.uint8)
    )
    first = jax.ShapeDtypeStruct((2, 3), jnp.bool_)
    network = build_network(torso)
    params = jax.eval_shape(network.init, jax.random.PRNGKey(0), (), observation, first)
    state, (outputs, value) = jax.eval_shape(network.apply, params, (), observation, first)
    assert state == ()
    assert outputs["logits"].shape == (2, 3, NUM_ACTIONS) and outputs["logits"].dtype == jnp.float32
    assert value.shape == (2, 3) and value.dtype == jnp.float32


def test_mlp_torso_is_unchanged():
    config = NetworkSettings()
    assert config.torso == "mlp"
    observation_spec = {"a": specs.Array((3,), np.float32), "b": specs.Array((2, 2), np.float32)}
    assert make_network(config, observation_spec, ACTION_SPEC) == ActorCritic(
        action_size=NUM_ACTIONS, hidden_sizes=(64, 64), activation="tanh", shared_torso=True
    )
    observation = {"a": jnp.zeros((2, 3)), "b": jnp.zeros((2, 2, 2))}
    network = make_network(config, observation_spec, ACTION_SPEC)
    shared = jax.eval_shape(network.init, jax.random.PRNGKey(0), *one_step(observation))["params"]
    assert set(shared) == {"MLP_0", "Dense_0", "Dense_1"}
    assert shared["MLP_0"]["Dense_0"]["kernel"].shape == (7, 64)
    config = dataclasses.replace(config, shared_torso=False)
    network = make_network(config, observation_spec, ACTION_SPEC)
    separate = jax.eval_shape(network.init, jax.random.PRNGKey(0), *one_step(observation))["params"]
    assert set(separate) == {"MLP_0", "MLP_1", "Dense_0", "Dense_1"}


@pytest.mark.parametrize("torso", PIXEL_TORSOS)
def test_pixel_torsos_require_a_shared_torso(torso):
    network = ActorCritic(action_size=NUM_ACTIONS, torso=torso, shared_torso=False)
    with pytest.raises(ValueError, match="shared_torso=True"):
        jax.eval_shape(network.init, jax.random.PRNGKey(0), *one_step(random_frames(0, batch=1)))
    # Built from the config, the same mistake is a ConfigError naming the field, before anything runs.
    with pytest.raises(ConfigError, match="shared_torso=True") as error:
        build_network(torso, shared_torso=False)
    assert error.value.field == "network.shared_torso"


def test_pixel_torsos_refuse_observations_that_are_not_frames():
    config = NetworkSettings()
    config = dataclasses.replace(config, torso="nature_cnn")
    with pytest.raises(ConfigError, match="uint8 frames") as error:
        make_network(config, specs.Array((4,), np.float32), ACTION_SPEC)
    assert error.value.field == "network.torso"


def test_validate_rejects_an_unknown_torso():
    config = defaults("ppo")
    config.network.torso = "resnet50"
    with pytest.raises(ConfigError, match="network.torso") as error:
        validate(config)
    assert error.value.field == "network.torso"


def test_agent_builds_the_configured_torso_for_the_specs_it_is_shown():
    config = defaults("ppo")
    config.network.torso = "nature_cnn"
    agent = agents.make(config, num_updates=1)
    state = jax.eval_shape(lambda key: agent.init(key, PIXEL_SPEC, ACTION_SPEC), jax.random.PRNGKey(0))
    assert isinstance(state.params, NetworkParams)
    assert state.params.module.torso == "nature_cnn" and state.params.module.action_size == NUM_ACTIONS
    assert set(state.params.variables["params"]) == {"NatureCNN_0", "Dense_0", "Dense_1"}


def test_network_params_carry_their_module_as_static_data():
    """The leaves are the weights alone (what optimisers and collectives see); the module rides in the treedef."""
    config = NetworkSettings()
    observation_spec = specs.Array((5,), np.float32)
    abstract = jax.eval_shape(lambda key: init_params(key, config, observation_spec, ACTION_SPEC), jax.random.key(0))
    assert isinstance(abstract, NetworkParams) and abstract.module == make_network(
        config, observation_spec, ACTION_SPEC
    )
    assert num_params(abstract) == (5 * 64 + 64) + (64 * 64 + 64) + head_params(64)
    variables = random_params(abstract.module, jnp.zeros((1, 5)), bias_scale=0.1)
    params = NetworkParams(abstract.module, variables)
    leaves = jax.tree.leaves(params)
    assert len(leaves) == len(jax.tree.leaves(variables)) and all(
        a is b for a, b in zip(leaves, jax.tree.leaves(variables), strict=True)
    )
    doubled = jax.tree.map(lambda x: 2 * x, params)
    assert isinstance(doubled, NetworkParams) and doubled.module == params.module

    # Unrolled inside jit over a sequence, as the losses unroll it over [T + 1, B] observations: with no core,
    # every step is the network on its own observation, as one step of all six would be.
    observation = jnp.asarray(np.random.default_rng(0).normal(size=(3, 2, 5)), jnp.float32)
    first = jnp.asarray([[True, False], [False, True], [False, False]])
    state, (outputs, values) = jax.jit(lambda p, o, f: p.unroll((), o, f))(params, observation, first)
    assert state == () and outputs["logits"].shape == (3, 2, NUM_ACTIONS) and values.shape == (3, 2)
    state, (flat_outputs, flat_values) = params.step((), observation.reshape(6, 5))
    assert state == ()
    np.testing.assert_allclose(outputs["logits"].reshape(6, NUM_ACTIONS), flat_outputs["logits"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(values.reshape(6), flat_values, rtol=1e-6, atol=1e-6)


def test_action_spec_selects_the_policy_head():
    config = NetworkSettings()
    observation_spec = specs.Array((5,), np.float32)
    assert make_network(config, observation_spec, ACTION_SPEC).action_head == "categorical"
    gaussian = make_network(config, observation_spec, specs.BoundedArray((2,), np.float32, -1.0, 1.0))
    assert (gaussian.action_head, gaussian.action_size) == ("gaussian", 2)
    variables = gaussian.init(jax.random.PRNGKey(0), *one_step(jnp.zeros((3, 5))))
    np.testing.assert_array_equal(variables["params"]["log_std"], np.zeros(2))  # std 1 at the start.
    _, (outputs, value) = NetworkParams(gaussian, variables).step((), jnp.ones((3, 5)))
    assert outputs["mean"].shape == outputs["log_std"].shape == (3, 2) and value.shape == (3,)
    for spec in (specs.BoundedArray((2, 2), np.float32, -1.0, 1.0), specs.Array((2,), np.int32)):
        with pytest.raises(ConfigError, match="DiscreteArray or a float vector") as error:
            make_network(config, observation_spec, spec)
        assert error.value.field == "env.name"
