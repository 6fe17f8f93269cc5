"""The fused cells of `cores.Core` against flax's own cells: the same parameters, outputs and gradients.

The reference is `Core` as it was before its cells were fused (flax's
`OptimizedLSTMCell` and `GRUCell` scanned with `nn.scan`), kept here verbatim
so that its parameter tree is the one earlier checkpoints hold.
"""

from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents.models import cores, fused_cells


def flax_cell(core: str, size: int) -> nn.RNNCellBase:
    return nn.OptimizedLSTMCell(size) if core == "lstm" else nn.GRUCell(size)


class FlaxCellCore(nn.Module):
    """`cores.Core` before its cells were fused: flax's cell in an `nn.scan`, reset to zeros where `first`."""

    core: str
    size: int

    @nn.compact
    def __call__(self, state: Any, features: jnp.ndarray, first: jnp.ndarray) -> tuple[Any, jnp.ndarray]:
        fresh = flax_cell(self.core, self.size).initialize_carry(jax.random.key(0), (features.shape[1], self.size))

        def step(cell: nn.Module, carry: Any, inputs: tuple) -> tuple[Any, jnp.ndarray]:
            step_features, step_first = inputs
            return cell(fused_cells.reset_at_first(carry, fresh, step_first), step_features)

        scan = nn.scan(step, variable_broadcast="params", split_rngs={"params": False}, in_axes=0, out_axes=0)
        return scan(flax_cell(self.core, self.size), state, (features, first))


# (config, core, units, torso features F, steps T, environments B): each recurrent config's learner minibatch (T
# steps of num_envs x agents / num_minibatches environments) and its acting step (1 step of every environment).
# The widest are slow (much of it compiling flax's cells); `make test-fast` keeps both cells, learning and acting.
SHAPES = [
    ("anakin_cartpole_ppo_rnn", "gru", 128, 128, 128, 1),
    ("anakin_cartpole_ppo_rnn, acting", "gru", 128, 128, 1, 4),
    ("anakin_memory_chain", "lstm", 64, 64, 22, 16),
    ("anakin_memory_chain, acting", "lstm", 64, 64, 1, 64),
    ("anakin_mpe_spread_mappo", "gru", 128, 128, 128, 12),
    ("anakin_mpe_spread_mappo, acting", "gru", 128, 128, 1, 48),
    pytest.param("anakin_smax_3m_mappo_rnn", "gru", 128, 128, 128, 96, marks=pytest.mark.slow),
    ("anakin_smax_3m_mappo_rnn, acting", "gru", 128, 128, 1, 384),
    pytest.param("anakin_craftax_classic_ppo_rnn", "gru", 512, 512, 64, 128, marks=pytest.mark.slow),
    pytest.param("anakin_craftax_classic_ppo_rnn, acting", "gru", 512, 512, 1, 1024, marks=pytest.mark.slow),
    pytest.param("sebulba_pong_impala_lstm", "lstm", 256, 256, 20, 64, marks=pytest.mark.slow),
    pytest.param("sebulba_pong_impala_lstm, acting", "lstm", 256, 256, 1, 32, marks=pytest.mark.slow),
    ("lpg_rule (RuleSettings' defaults)", "lstm", 32, 6, 20, 16),
]


def inputs(core: str, size: int, features: int, steps: int, envs: int) -> tuple:
    """A random state, features and episode starts: about one step in five starts an episode, the first included."""
    state_key, sequence_key, first_key = jax.random.split(jax.random.key(1), 3)
    fresh = cores.initial_state(core, size, envs)
    leaves = jax.random.normal(state_key, (len(jax.tree.leaves(fresh)), envs, size))
    state = jax.tree.unflatten(jax.tree.structure(fresh), list(leaves))
    sequence = jax.random.normal(sequence_key, (steps, envs, features))
    first = jax.random.bernoulli(first_key, 0.2, (steps, envs))
    if steps > 1:
        first = first.at[steps // 2].set(True)  # An episode starts mid-sequence in every environment.
    return state, sequence, first


@pytest.mark.parametrize("core", ["lstm", "gru"])
def test_the_fused_core_has_flax_cell_parameters_by_the_same_paths_shapes_and_initial_values(core):
    args = (cores.initial_state(core, 16, 3), jnp.ones((5, 3, 7)), jnp.zeros((5, 3), bool))
    fused = cores.Core(core, 16).init(jax.random.key(0), *args)
    reference = FlaxCellCore(core, 16).init(jax.random.key(0), *args)
    assert jax.tree.structure(fused) == jax.tree.structure(reference)
    chex.assert_trees_all_equal_shapes(fused, reference)
    chex.assert_trees_all_equal(fused, reference)  # The same initialisers, drawn from the same keys.


@pytest.mark.parametrize(("config", "core", "size", "features", "steps", "envs"), SHAPES)
def test_the_fused_core_computes_what_flax_cells_do_forward_and_backward(config, core, size, features, steps, envs):
    state, sequence, first = inputs(core, size, features, steps, envs)
    params = FlaxCellCore(core, size).init(jax.random.key(0), state, sequence, first)
    # Cotangents of every output and of the final state, so that each gradient reads all of them.
    weights = jax.random.normal(jax.random.key(2), (steps, envs, size))

    def loss(module: nn.Module, params, state, sequence):
        final, outputs = module.apply(params, state, sequence, first)
        return jnp.sum(outputs * weights) + sum(jnp.sum(jnp.sin(leaf)) for leaf in jax.tree.leaves(final)), (
            final,
            outputs,
        )

    def run(module: nn.Module):
        return jax.jit(jax.value_and_grad(lambda *a: loss(module, *a), argnums=(0, 1, 2), has_aux=True))(
            params, state, sequence
        )

    (_, (final, outputs)), grads = run(cores.Core(core, size))
    (_, (expected_final, expected_outputs)), expected_grads = run(FlaxCellCore(core, size))
    np.testing.assert_allclose(outputs, expected_outputs, rtol=1e-5, atol=1e-5)
    chex.assert_trees_all_close(final, expected_final, rtol=1e-5, atol=1e-5)
    chex.assert_trees_all_close(grads, expected_grads, rtol=1e-4, atol=1e-4)


def test_the_gru_gradient_written_out_is_autodiff_of_the_same_steps_from_any_fresh_state():
    """`fused_cells.gru_sequence`'s hand-written backward against `jax.grad` of its own steps in a plain scan, with a
    fresh state that is not zeros, so that what reaches the fresh state through the resets is checked too."""
    size, steps, envs = 8, 9, 5
    keys = jax.random.split(jax.random.key(3), 7)
    hidden_kernel = jax.random.normal(keys[0], (size, 3 * size)) * 0.5
    hn_bias = jax.random.normal(keys[1], (size,))
    products = tuple(jax.random.normal(key, (steps, envs, size)) for key in keys[2:5])
    state, fresh = (jax.random.normal(key, (envs, size)) for key in keys[5:7])
    first = jax.random.bernoulli(jax.random.key(4), 0.3, (steps, envs)).at[steps // 2].set(True)
    weights = jax.random.normal(jax.random.key(5), (steps, envs, size))

    def autodiff_steps(hidden_kernel, hn_bias, products, state, fresh, first):
        def step(h, step_products):
            new, _ = fused_cells.gru_gates(hidden_kernel, hn_bias, h, step_products)
            return new, new

        return fused_cells.scan_cell(step, products, state, fresh, first)

    def loss(sequence, *args):
        final, outputs = sequence(*args, first)
        return jnp.sum(outputs * weights) + jnp.sum(jnp.sin(final))

    args = (hidden_kernel, hn_bias, products, state, fresh)
    written_out = jax.grad(lambda *a: loss(fused_cells.gru_sequence, *a), argnums=range(5))(*args)
    expected = jax.grad(lambda *a: loss(autodiff_steps, *a), argnums=range(5))(*args)
    chex.assert_trees_all_close(written_out, expected, rtol=1e-5, atol=1e-5)
    assert float(jnp.max(jnp.abs(written_out[4]))) > 0.1  # The resets pass the fresh state a gradient.
