"""envpool's step compiled into JAX programs: the same timesteps as the host step, without declared side effects."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.envs import FIRST, LAST, make_envpool_env
from tests.envs.envpool_streams import run


def _run_compiled(env, actions):
    """Resets `env` and steps it with `actions` [T, B] inside one jitted `lax.scan` of its `compiled_step`."""
    compiled = env.compiled_step()
    first = env.reset()

    @jax.jit
    def scan(state, actions):
        return jax.lax.scan(compiled.step, state, actions)

    _, timesteps = scan(compiled.initial_state, jnp.asarray(actions))
    # No side effects declared (`envpool_xla.xla_step`): JAX dispatches such a program on its fast path.
    assert not jax.make_jaxpr(scan)(compiled.initial_state, jnp.asarray(actions)).effects
    return [first] + [jax.tree.map(lambda x, t=t: np.asarray(x[t]), timesteps) for t in range(len(actions))]


@pytest.mark.parametrize(
    "name, options, num_actions",
    [
        ("CartPole-v1", {"max_episode_steps": 15}, 2),  # Pole falls (discount 0) and time limits (discount 1).
        ("Breakout-v5", {"episodic_life": True, "max_episode_steps": 40}, 4),  # Lives: FIRST after envpool's done.
        ("Pong-v5", {"max_episode_steps": 9}, 6),  # Atari's game-over flag and frame stacks.
    ],
)
def test_compiled_step_gives_exactly_the_timesteps_of_step(name, options, num_actions):
    actions = np.random.default_rng(0).integers(0, num_actions, (60, 3), dtype=np.int32)
    host = run(make_envpool_env(name, 3, seed=4, **options), actions)[0]
    compiled = _run_compiled(make_envpool_env(name, 3, seed=4, **options), actions)
    step_type = np.stack([t.step_type for t in host])
    assert (step_type == LAST).any() and (step_type[1:] == FIRST).any()  # Episodes end and restart in the stream.
    for a, b in zip(host, compiled, strict=True):
        jax.tree.map(np.testing.assert_array_equal, a, b)
        assert jax.tree.map(lambda x: x.dtype, a) == jax.tree.map(lambda x: x.dtype, b)
    if name == "CartPole-v1":  # Both kinds of ending, so both discounts were compared.
        discount = np.stack([t.discount for t in host])
        assert (discount[step_type == LAST] == 0).any() and (discount[step_type == LAST] == 1).any()


def test_compiled_step_refuses_pools_with_64_bit_arrays():
    env = make_envpool_env("HalfCheetah-v4", num_envs=2, seed=0)
    with pytest.raises(NotImplementedError, match=r"obs \(float64\).*64-bit.*Python only"):
        env.compiled_step()
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.compiled_step()
