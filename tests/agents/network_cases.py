"""What the tests of the torsos and of the networks share: the specs they use, and networks and weights built cheaply."""

import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.models.networks import ActorCritic, make_network
from podracer.agents.models.torsos import ImpalaResNet, NatureCNN

NUM_ACTIONS = 6
ATARI_SHAPE = (4, 84, 84)  # envpool's channels-first stack of four 84x84 greyscale frames.
# Tests that run a pixel torso use smaller, non-square frames: cheaper on CPU, and with H != W and C
# unlike both, any mixed-up axis changes shapes or values. 84x84 itself is checked by the counts.
RUN_SHAPE = (4, 44, 52)
PIXEL_TORSOS = {"nature_cnn": NatureCNN, "impala_resnet": ImpalaResNet}
PIXEL_SPEC = specs.Array(ATARI_SHAPE, np.uint8)  # One environment's observation, as envpool's Atari gives it.
ACTION_SPEC = specs.DiscreteArray(NUM_ACTIONS)


def random_frames(seed: int, batch: int = 2, shape: tuple = RUN_SHAPE) -> jnp.ndarray:
    return jnp.asarray(np.random.default_rng(seed).integers(0, 256, (batch,) + shape, dtype=np.uint8))


def one_step(observation):
    """`(state, observation [1, N, ...], first [1, N])`: a batch `[N, ...]` as a network's `init` and `apply` read it,
    one step of N environments, none of them starting an episode, with a feed-forward network's state `()`.

    Works on arrays and on `jax.ShapeDtypeStruct`s (for `jax.eval_shape`) alike.
    """
    leaves = jax.tree.leaves(observation)
    if isinstance(leaves[0], jax.ShapeDtypeStruct):
        timed = jax.tree.map(lambda x: jax.ShapeDtypeStruct((1,) + x.shape, x.dtype), observation)
        return (), timed, jax.ShapeDtypeStruct((1, leaves[0].shape[0]), jnp.bool_)
    return (), jax.tree.map(lambda x: x[None], observation), jnp.zeros((1, leaves[0].shape[0]), bool)


def build_network(torso: str, **fields) -> ActorCritic:
    observation_spec = specs.Array((7,), np.float32) if torso == "mlp" else PIXEL_SPEC
    return make_network(NetworkSettings(torso=torso, **fields), observation_spec, ACTION_SPEC)


def num_params(tree) -> int:
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(tree))


def head_params(features: int) -> int:
    return (features * NUM_ACTIONS + NUM_ACTIONS) + (features * 1 + 1)  # Policy logits, then value.


def random_params(network: ActorCritic, observation: jnp.ndarray, bias_scale: float, seed: int = 0):
    """Gaussian parameters of `network`'s shapes, built in NumPy: weights scaled by 1/sqrt(fan-in).

    Compiling `init` (a random draw and a QR per layer) costs several seconds per torso on CPU; the
    tests using this are about the data path, not the initialiser (which is traced, shapes only, by
    the parameter-count tests).
    """
    rng = np.random.default_rng(seed)
    abstract = jax.eval_shape(network.init, jax.random.PRNGKey(0), *one_step(observation))

    def draw(path, leaf) -> jnp.ndarray:
        is_bias = jax.tree_util.keystr(path).endswith("['bias']")
        scale = bias_scale if is_bias else np.prod(leaf.shape[:-1]) ** -0.5
        return jnp.asarray(rng.normal(0, scale, leaf.shape), leaf.dtype)

    return jax.tree_util.tree_map_with_path(draw, abstract)
