"""The torsos: hand-counted parameters, pixel preprocessing, what the pixel torsos see, gradient flow."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

import podracer
from podracer.agents.models.networks import ActorCritic, NetworkParams
from podracer.agents.models.torsos import GridCNN, MultiInput, check_reads_observations, preprocess_pixels
from podracer.config.errors import ConfigError
from tests.agents.network_cases import (
    ATARI_SHAPE,
    NUM_ACTIONS,
    PIXEL_TORSOS,
    RUN_SHAPE,
    build_network,
    head_params,
    num_params,
    one_step,
    random_frames,
    random_params,
)


def _abstract_params(network: ActorCritic, shape: tuple = ATARI_SHAPE):
    """Parameter shapes only (nothing is computed), for counting."""
    dummy = jax.ShapeDtypeStruct((1,) + shape, jnp.uint8)
    return jax.eval_shape(network.init, jax.random.PRNGKey(0), *one_step(dummy))["params"]


def _conv3x3(c_in: int, c_out: int) -> int:
    return 3 * 3 * c_in * c_out + c_out


def test_nature_cnn_parameter_count():
    # VALID convolutions on 84x84: (84 - 8) / 4 + 1 = 20, (20 - 4) / 2 + 1 = 9, 9 - 3 + 1 = 7.
    conv1 = 8 * 8 * 4 * 32 + 32  # 8,224
    conv2 = 4 * 4 * 32 * 64 + 64  # 32,832
    conv3 = 3 * 3 * 64 * 64 + 64  # 36,928
    dense = 7 * 7 * 64 * 512 + 512  # 3,136 inputs -> 1,606,144
    torso = conv1 + conv2 + conv3 + dense
    assert torso == 1_684_128
    params = _abstract_params(build_network("nature_cnn"))
    assert num_params(params["NatureCNN_0"]) == torso
    assert num_params(params) == torso + head_params(512)


def test_impala_resnet_parameter_count_default():
    # channels (16, 32, 32), 2 blocks of 2 convs each per stage; SAME max-pools halve 84 -> 42 -> 21 -> 11.
    stage1 = _conv3x3(4, 16) + 4 * _conv3x3(16, 16)  # 592 + 4 * 2,320 = 9,872
    stage2 = _conv3x3(16, 32) + 4 * _conv3x3(32, 32)  # 4,640 + 4 * 9,248 = 41,632
    stage3 = _conv3x3(32, 32) + 4 * _conv3x3(32, 32)  # 9,248 + 4 * 9,248 = 46,240
    dense = 11 * 11 * 32 * 256 + 256  # 3,872 inputs -> 991,488
    torso = stage1 + stage2 + stage3 + dense
    assert torso == 1_089_232
    params = _abstract_params(build_network("impala_resnet"))
    assert num_params(params["ImpalaResNet_0"]) == torso
    assert num_params(params) == torso + head_params(256)


def test_impala_resnet_parameter_count_wider_and_deeper():
    # channels (32, 64, 64, 64), 3 blocks (6 convs) per stage, 512 units; 84 -> 42 -> 21 -> 11 -> 6.
    stage1 = _conv3x3(4, 32) + 6 * _conv3x3(32, 32)  # 1,184 + 6 * 9,248 = 56,672
    stage2 = _conv3x3(32, 64) + 6 * _conv3x3(64, 64)  # 18,496 + 6 * 36,928 = 240,064
    stage3 = _conv3x3(64, 64) + 6 * _conv3x3(64, 64)  # 7 * 36,928 = 258,496
    stage4 = stage3
    dense = 6 * 6 * 64 * 512 + 512  # 2,304 inputs -> 1,180,160
    torso = stage1 + stage2 + stage3 + stage4 + dense
    assert torso == 1_993_888
    network = build_network("impala_resnet", channels=(32, 64, 64, 64), num_blocks=3, hidden_size=512)
    params = _abstract_params(network)
    assert num_params(params["ImpalaResNet_0"]) == torso
    assert num_params(params) == torso + head_params(512)


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
    frames = random_frames(1) if kind == "random" else jnp.full((2,) + RUN_SHAPE, 255, jnp.uint8)
    by_hand = np.asarray(frames).transpose(0, 2, 3, 1).astype(np.float32) / np.float32(255)
    if kind == "all_255":
        np.testing.assert_array_equal(by_hand, np.ones_like(by_hand))
    network = build_network(torso)
    params = random_params(network, frames, bias_scale=0.1)
    _, state = network.apply(params, *one_step(frames), capture_intermediates=lambda module, name: name == "__call__")
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
    frames = random_frames(2)
    network = build_network(torso)
    weights = jnp.asarray(np.random.default_rng(1).normal(size=(2, NUM_ACTIONS)), jnp.float32)

    def loss(params):
        _, (outputs, value) = NetworkParams(network, params).step((), frames)
        return jnp.sum(outputs["logits"] * weights) + jnp.sum(value**2)

    grads = jax.jit(jax.grad(loss))(random_params(network, frames, bias_scale=0.0))
    dead = [
        jax.tree_util.keystr(path)
        for path, g in jax.tree_util.tree_leaves_with_path(grads)
        if not np.any(np.asarray(g) != 0)
    ]
    assert not dead, f"zero gradient for {dead}"
    assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(grads))


def test_multi_input_torso_parameter_count_and_what_it_reads():
    """A 12x12x5 grid (Jumanji Snake's) through convs of (16, 32) with 2x2 pools, beside a 4-vector, into 64 units."""
    torso = MultiInput(channels=(16, 32), hidden_sizes=(64,))
    grid, vector = jnp.ones((2, 12, 12, 5)), jnp.ones((2, 4))
    params = jax.eval_shape(torso.init, jax.random.PRNGKey(0), {"grid": grid, "vector": vector})["params"]
    convs = _conv3x3(5, 16) + _conv3x3(16, 32)  # 12 -> 6 -> 3 after the pools: 3 * 3 * 32 = 288 features.
    assert num_params(params["GridCNN_0"]) == convs
    assert num_params(params["MLP_0"]) == (288 + 4) * 64 + 64
    variables = torso.init(jax.random.PRNGKey(0), {"grid": grid, "vector": vector})
    out = torso.apply(variables, {"grid": grid, "vector": vector})
    assert out.shape == (2, 64)
    # Both inputs are read: changing either changes the features.
    assert not np.allclose(out, torso.apply(variables, {"grid": grid * 0, "vector": vector}))
    assert not np.allclose(out, torso.apply(variables, {"grid": grid, "vector": vector * 0}))


def test_grid_cnn_scales_uint8_images_to_the_unit_interval():
    cnn = GridCNN(channels=(8,))
    pixels = jax.random.randint(jax.random.PRNGKey(1), (2, 6, 6, 3), 0, 256).astype(jnp.uint8)
    variables = cnn.init(jax.random.PRNGKey(0), pixels)
    np.testing.assert_allclose(
        cnn.apply(variables, pixels), cnn.apply(variables, pixels.astype(jnp.float32) / 255.0), rtol=1e-6
    )


def test_multi_input_refuses_observations_of_more_than_three_axes():
    config = podracer.defaults("ppo")
    config.network.torso = "multi_input"
    with pytest.raises(ConfigError, match="'multi_input' reads vectors and images"):
        check_reads_observations(config.network.torso, {"video": specs.Array((2, 8, 8, 3), np.uint8)})
