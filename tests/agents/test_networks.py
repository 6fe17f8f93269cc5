"""The actor-critic torsos: shapes, hand-counted parameters, pixel preprocessing, gradient flow, config wiring."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

from podracer import agents
from podracer.agents.networks import (
    TORSOS,
    TRANSPOSED_GRADIENT_ROWS,
    ActorCritic,
    ImpalaResNet,
    NatureCNN,
    NetworkParams,
    apply_merged,
    dense_product,
    init_params,
    make_network,
    preprocess_pixels,
)
from podracer.config.errors import ConfigError
from podracer.experiment.schema import defaults, validate

NUM_ACTIONS = 6
ATARI_SHAPE = (4, 84, 84)  # envpool's channels-first stack of four 84x84 greyscale frames.
# Tests that run a pixel torso use smaller, non-square frames: cheaper on CPU, and with H != W and C
# unlike both, any mixed-up axis changes shapes or values. 84x84 itself is checked by the counts.
RUN_SHAPE = (4, 44, 52)
PIXEL_TORSOS = {"nature_cnn": NatureCNN, "impala_resnet": ImpalaResNet}
PIXEL_SPEC = specs.Array(ATARI_SHAPE, np.uint8)  # One environment's observation, as envpool's Atari gives it.
ACTION_SPEC = specs.DiscreteArray(NUM_ACTIONS)


def _frames(seed: int, batch: int = 2, shape: tuple = RUN_SHAPE) -> jnp.ndarray:
    return jnp.asarray(np.random.default_rng(seed).integers(0, 256, (batch,) + shape, dtype=np.uint8))


def _network(torso: str, **fields) -> ActorCritic:
    config = defaults("ppo").network
    config.torso = torso
    config.update(fields)
    observation_spec = specs.Array((7,), np.float32) if torso == "mlp" else PIXEL_SPEC
    return make_network(config, observation_spec, ACTION_SPEC)


def _num_params(tree) -> int:
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(tree))


def _abstract_params(network: ActorCritic, shape: tuple = ATARI_SHAPE):
    """Parameter shapes only (nothing is computed), for counting."""
    dummy = jax.ShapeDtypeStruct((1,) + shape, jnp.uint8)
    return jax.eval_shape(network.init, jax.random.PRNGKey(0), dummy)["params"]


def _heads(features: int) -> int:
    return (features * NUM_ACTIONS + NUM_ACTIONS) + (features * 1 + 1)  # Policy logits, then value.


def _random_params(network: ActorCritic, observation: jnp.ndarray, bias_scale: float, seed: int = 0):
    """Gaussian parameters of `network`'s shapes, built in NumPy: weights scaled by 1/sqrt(fan-in).

    Compiling `init` (a random draw and a QR per layer) costs several seconds per torso on CPU; the
    tests using this are about the data path, not the initialiser (which is traced, shapes only, by
    the parameter-count tests).
    """
    rng = np.random.default_rng(seed)
    abstract = jax.eval_shape(network.init, jax.random.PRNGKey(0), observation)

    def draw(path, leaf) -> jnp.ndarray:
        is_bias = jax.tree_util.keystr(path).endswith("['bias']")
        scale = bias_scale if is_bias else np.prod(leaf.shape[:-1]) ** -0.5
        return jnp.asarray(rng.normal(0, scale, leaf.shape), leaf.dtype)

    return jax.tree_util.tree_map_with_path(draw, abstract)


@pytest.mark.parametrize("torso", [torso for torso in TORSOS if torso != "muzero_resnet"])  # MuZero's own model.
def test_output_shapes(torso):
    observation = (
        jax.ShapeDtypeStruct((3, 7), jnp.float32)
        if torso == "mlp"
        else jax.ShapeDtypeStruct((3,) + ATARI_SHAPE, jnp.uint8)
    )
    network = _network(torso)
    params = jax.eval_shape(network.init, jax.random.PRNGKey(0), observation)
    outputs, value = jax.eval_shape(network.apply, params, observation)
    assert outputs["logits"].shape == (3, NUM_ACTIONS) and outputs["logits"].dtype == jnp.float32
    assert value.shape == (3,) and value.dtype == jnp.float32


def test_nature_cnn_parameter_count():
    # VALID convolutions on 84x84: (84 - 8) / 4 + 1 = 20, (20 - 4) / 2 + 1 = 9, 9 - 3 + 1 = 7.
    conv1 = 8 * 8 * 4 * 32 + 32  # 8,224
    conv2 = 4 * 4 * 32 * 64 + 64  # 32,832
    conv3 = 3 * 3 * 64 * 64 + 64  # 36,928
    dense = 7 * 7 * 64 * 512 + 512  # 3,136 inputs -> 1,606,144
    torso = conv1 + conv2 + conv3 + dense
    assert torso == 1_684_128
    params = _abstract_params(_network("nature_cnn"))
    assert _num_params(params["NatureCNN_0"]) == torso
    assert _num_params(params) == torso + _heads(512)


def _conv3x3(c_in: int, c_out: int) -> int:
    return 3 * 3 * c_in * c_out + c_out


def test_impala_resnet_parameter_count_default():
    # channels (16, 32, 32), 2 blocks of 2 convs each per stage; SAME max-pools halve 84 -> 42 -> 21 -> 11.
    stage1 = _conv3x3(4, 16) + 4 * _conv3x3(16, 16)  # 592 + 4 * 2,320 = 9,872
    stage2 = _conv3x3(16, 32) + 4 * _conv3x3(32, 32)  # 4,640 + 4 * 9,248 = 41,632
    stage3 = _conv3x3(32, 32) + 4 * _conv3x3(32, 32)  # 9,248 + 4 * 9,248 = 46,240
    dense = 11 * 11 * 32 * 256 + 256  # 3,872 inputs -> 991,488
    torso = stage1 + stage2 + stage3 + dense
    assert torso == 1_089_232
    params = _abstract_params(_network("impala_resnet"))
    assert _num_params(params["ImpalaResNet_0"]) == torso
    assert _num_params(params) == torso + _heads(256)


def test_impala_resnet_parameter_count_wider_and_deeper():
    # channels (32, 64, 64, 64), 3 blocks (6 convs) per stage, 512 units; 84 -> 42 -> 21 -> 11 -> 6.
    stage1 = _conv3x3(4, 32) + 6 * _conv3x3(32, 32)  # 1,184 + 6 * 9,248 = 56,672
    stage2 = _conv3x3(32, 64) + 6 * _conv3x3(64, 64)  # 18,496 + 6 * 36,928 = 240,064
    stage3 = _conv3x3(64, 64) + 6 * _conv3x3(64, 64)  # 7 * 36,928 = 258,496
    stage4 = stage3
    dense = 6 * 6 * 64 * 512 + 512  # 2,304 inputs -> 1,180,160
    torso = stage1 + stage2 + stage3 + stage4 + dense
    assert torso == 1_993_888
    network = _network("impala_resnet", channels=(32, 64, 64, 64), num_blocks=3, hidden_size=512)
    params = _abstract_params(network)
    assert _num_params(params["ImpalaResNet_0"]) == torso
    assert _num_params(params) == torso + _heads(512)


def test_preprocess_pixels_transposes_to_nhwc_and_scales():
    frames = np.random.default_rng(0).integers(0, 256, (2, 3, 5, 7), dtype=np.uint8)  # N, C, H, W all distinct.
    pixels = preprocess_pixels(jnp.asarray(frames))
    assert pixels.shape == (2, 5, 7, 3) and pixels.dtype == jnp.float32
    n, c, h, w = 1, 2, 4, 6
    np.testing.assert_allclose(pixels[n, h, w, c], frames[n, c, h, w] / 255, rtol=1e-6)
    np.testing.assert_allclose(pixels, frames.transpose(0, 2, 3, 1) / 255, rtol=1e-6)
    np.testing.assert_allclose(preprocess_pixels(jnp.full((1, 1, 1, 1), 255, jnp.uint8)), 1.0, rtol=1e-6)


@pytest.mark.parametrize("observation", [jnp.zeros((2, 4, 84, 84)), jnp.zeros((2, 84, 84), jnp.uint8)])
def test_preprocess_pixels_rejects_float_or_unbatched_frames(observation):
    with pytest.raises(ValueError, match=r"uint8 .*\[N, C, H, W\]"):
        preprocess_pixels(observation)


@pytest.mark.parametrize("torso", PIXEL_TORSOS)
@pytest.mark.parametrize("kind", ["random", "all_255"])
def test_pixel_torso_sees_the_frames_transposed_and_scaled(torso, kind):
    """The torso inside ActorCritic computes what the bare torso computes on hand-made float NHWC input.

    With H != W a swapped H and W changes the feature maps' shapes and values; C mixed up with H or W
    changes the first kernel's shape.
    """
    frames = _frames(1) if kind == "random" else jnp.full((2,) + RUN_SHAPE, 255, jnp.uint8)
    by_hand = np.asarray(frames).transpose(0, 2, 3, 1).astype(np.float32) / np.float32(255)
    if kind == "all_255":
        np.testing.assert_array_equal(by_hand, np.ones_like(by_hand))
    network = _network(torso)
    params = _random_params(network, frames, bias_scale=0.1)
    _, state = network.apply(params, frames, capture_intermediates=lambda module, name: name == "__call__")
    name = f"{PIXEL_TORSOS[torso].__name__}_0"
    (seen,) = state["intermediates"][name]["__call__"]
    bare = PIXEL_TORSOS[torso]()  # The default config builds each torso with its defaults.
    expected = bare.apply({"params": params["params"][name]}, jnp.asarray(by_hand))
    # Equal up to float rounding (XLA scales by a reciprocal); a mixed-up axis changes every value.
    np.testing.assert_allclose(seen, expected, rtol=1e-5, atol=1e-4)
    assert float(jnp.abs(expected).max()) > 0.1


@pytest.mark.parametrize("torso", PIXEL_TORSOS)
def test_gradient_reaches_every_parameter(torso):
    """With zero biases, as at initialisation, a random batch moves every parameter."""
    frames = _frames(2)
    network = _network(torso)
    weights = jnp.asarray(np.random.default_rng(1).normal(size=(2, NUM_ACTIONS)), jnp.float32)

    def loss(params):
        outputs, value = network.apply(params, frames)
        return jnp.sum(outputs["logits"] * weights) + jnp.sum(value**2)

    grads = jax.jit(jax.grad(loss))(_random_params(network, frames, bias_scale=0.0))
    dead = [
        jax.tree_util.keystr(path)
        for path, g in jax.tree_util.tree_leaves_with_path(grads)
        if not np.any(np.asarray(g) != 0)
    ]
    assert not dead, f"zero gradient for {dead}"
    assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(grads))


def _product_loss(product, inputs, kernel, weights):
    return jnp.sum(jnp.tanh(product(inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())))) * weights)


def _product_case(leading: tuple, kernel_shape: tuple) -> tuple:
    rng = np.random.default_rng(5)
    inputs = jnp.asarray(rng.normal(size=leading + kernel_shape[:1]), jnp.float32)
    kernel = jnp.asarray(rng.normal(size=kernel_shape), jnp.float32)
    weights = jnp.asarray(rng.normal(size=leading + kernel_shape[1:]), jnp.float32)
    return inputs, kernel, weights


# 15 rows, and 1,200 >= TRANSPOSED_GRADIENT_ROWS; inputs narrower than the outputs (the inputs are copied
# transposed) and wider (the output gradient is).
@pytest.mark.parametrize("leading", [(3, 5), (4, 300)])
@pytest.mark.parametrize("kernel_shape", [(4, 7), (7, 4)])
def test_dense_product_has_the_value_and_gradients_of_a_plain_product(leading, kernel_shape):
    """`dense_product` only changes how XLA:CPU lays out the weight gradient; inputs may have several leading axes."""
    inputs, kernel, weights = _product_case(leading, kernel_shape)
    ours_fn = jax.jit(jax.value_and_grad(functools.partial(_product_loss, dense_product), argnums=(0, 1)))
    held = "optimization_barrier" in ours_fn.lower(inputs, kernel, weights).as_text()
    assert held == (np.prod(leading) >= TRANSPOSED_GRADIENT_ROWS)  # On CPU, from that many rows.
    ours = ours_fn(inputs, kernel, weights)
    plain = jax.value_and_grad(functools.partial(_product_loss, jax.lax.dot_general), argnums=(0, 1))(
        inputs, kernel, weights
    )
    for got, expected in zip(jax.tree.leaves(ours), jax.tree.leaves(plain), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("kernel_shape", [(4, 7), (7, 4)])
def test_dense_product_gradients_sum_over_devices_as_autodiff_does(kernel_shape):
    """Under `shard_map`, with the rows split over two devices and the kernel replicated, as in a learner update."""
    inputs, kernel, weights = _product_case((2, 1200), kernel_shape)
    mesh = jax.make_mesh((2,), ("d",), devices=jax.devices()[:2])
    rows, replicated = jax.P(None, "d"), jax.P()

    def mean_gradient(product):
        def per_device(inputs, kernel, weights):
            grad = jax.grad(functools.partial(_product_loss, product), argnums=1)(inputs, kernel, weights)
            return jax.lax.pmean(grad, "d")

        spec = (rows, replicated, rows)
        placed = [
            jax.device_put(x, jax.NamedSharding(mesh, s)) for x, s in zip((inputs, kernel, weights), spec, strict=True)
        ]
        return jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=spec, out_specs=replicated))(*placed)

    np.testing.assert_allclose(mean_gradient(dense_product), mean_gradient(jax.lax.dot_general), rtol=1e-5, atol=1e-4)


def test_mlp_torso_is_unchanged():
    config = defaults("ppo").network
    assert config.torso == "mlp"
    observation_spec = {"a": specs.Array((3,), np.float32), "b": specs.Array((2, 2), np.float32)}
    assert make_network(config, observation_spec, ACTION_SPEC) == ActorCritic(
        action_size=NUM_ACTIONS, hidden_sizes=(64, 64), activation="tanh", shared_torso=True
    )
    observation = {"a": jnp.zeros((2, 3)), "b": jnp.zeros((2, 2, 2))}
    network = make_network(config, observation_spec, ACTION_SPEC)
    shared = jax.eval_shape(network.init, jax.random.PRNGKey(0), observation)["params"]
    assert set(shared) == {"MLP_0", "Dense_0", "Dense_1"}
    assert shared["MLP_0"]["Dense_0"]["kernel"].shape == (7, 64)
    config.shared_torso = False
    network = make_network(config, observation_spec, ACTION_SPEC)
    separate = jax.eval_shape(network.init, jax.random.PRNGKey(0), observation)["params"]
    assert set(separate) == {"MLP_0", "MLP_1", "Dense_0", "Dense_1"}


@pytest.mark.parametrize("torso", PIXEL_TORSOS)
def test_pixel_torsos_require_a_shared_torso(torso):
    network = ActorCritic(action_size=NUM_ACTIONS, torso=torso, shared_torso=False)
    with pytest.raises(ValueError, match="shared_torso=True"):
        jax.eval_shape(network.init, jax.random.PRNGKey(0), _frames(0, batch=1))
    # Built from the config, the same mistake is a ConfigError naming the field, before anything runs.
    with pytest.raises(ConfigError, match="shared_torso=True") as error:
        _network(torso, shared_torso=False)
    assert error.value.field == "network.shared_torso"


def test_pixel_torsos_refuse_observations_that_are_not_frames():
    config = defaults("ppo").network
    config.torso = "nature_cnn"
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
    config = defaults("ppo").network
    observation_spec = specs.Array((5,), np.float32)
    abstract = jax.eval_shape(lambda key: init_params(key, config, observation_spec, ACTION_SPEC), jax.random.key(0))
    assert isinstance(abstract, NetworkParams) and abstract.module == make_network(
        config, observation_spec, ACTION_SPEC
    )
    assert _num_params(abstract) == (5 * 64 + 64) + (64 * 64 + 64) + _heads(64)
    variables = _random_params(abstract.module, jnp.zeros((1, 5)), bias_scale=0.1)
    params = NetworkParams(abstract.module, variables)
    leaves = jax.tree.leaves(params)
    assert len(leaves) == len(jax.tree.leaves(variables)) and all(
        a is b for a, b in zip(leaves, jax.tree.leaves(variables), strict=True)
    )
    doubled = jax.tree.map(lambda x: 2 * x, params)
    assert isinstance(doubled, NetworkParams) and doubled.module == params.module

    # Applied inside jit to a batch with two leading axes, as the losses apply it to [T + 1, B] observations.
    observation = jnp.asarray(np.random.default_rng(0).normal(size=(3, 2, 5)), jnp.float32)
    outputs, values = jax.jit(lambda p, o: apply_merged(lambda q, x: q.apply(x), p, o, (3, 2)))(params, observation)
    assert outputs["logits"].shape == (3, 2, NUM_ACTIONS) and values.shape == (3, 2)
    flat_outputs, flat_values = params.apply(observation.reshape(6, 5))
    np.testing.assert_allclose(outputs["logits"].reshape(6, NUM_ACTIONS), flat_outputs["logits"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(values.reshape(6), flat_values, rtol=1e-6, atol=1e-6)


def test_action_spec_selects_the_policy_head():
    config = defaults("ppo").network
    observation_spec = specs.Array((5,), np.float32)
    assert make_network(config, observation_spec, ACTION_SPEC).action_head == "categorical"
    gaussian = make_network(config, observation_spec, specs.BoundedArray((2,), np.float32, -1.0, 1.0))
    assert (gaussian.action_head, gaussian.action_size) == ("gaussian", 2)
    variables = gaussian.init(jax.random.PRNGKey(0), jnp.zeros((3, 5)))
    np.testing.assert_array_equal(variables["params"]["log_std"], np.zeros(2))  # std 1 at the start.
    outputs, value = gaussian.apply(variables, jnp.ones((3, 5)))
    assert outputs["mean"].shape == outputs["log_std"].shape == (3, 2) and value.shape == (3,)
    for spec in (specs.BoundedArray((2, 2), np.float32, -1.0, 1.0), specs.Array((2,), np.int32)):
        with pytest.raises(ConfigError, match="DiscreteArray or a float vector") as error:
            make_network(config, observation_spec, spec)
        assert error.value.field == "env.name"
