"""AutoReset around a batch with a reset fraction: resetting only the few that end changes cost, never results.

The references are whole-batch resets (fraction 1, the rule before fractions) and the rule for one environment
vmapped over the batch (`batched=False`), which resets every environment from its own key whatever the others do.
"""

import dataclasses

import jax
import numpy as np
import pytest
from ml_collections import ConfigDict

import podracer
from podracer.anakin import anakin_settings
from podracer.envs import FIRST, LAST, AutoReset, CartPole, make, wrap_for_training
from podracer.envs.env_registry import EXPENSIVE_RESET_FRACTION
from podracer.envs.wrappers import Batched, resets_per_step
from podracer.run.checkpoints import refuse_incompatible

NUM_ENVS, NUM_STEPS = 16, 300
SMALL = 1 / 8  # K = 2 of 16: random play has steps with one end (padded), and steps with more than two.


def rollout(env, keys, actions):
    """`(first timestep, (states, timesteps) stacked over steps)` of `env` from `keys`, through `actions`."""

    def run():
        state, first = env.reset(keys)
        return first, jax.lax.scan(lambda s, a: (lambda s2, t: (s2, (s2, t)))(*env.step(s, a)), state, actions)[1]

    return jax.device_get(jax.jit(run)())


def random_actions(env, seed=0):
    high = env.action_spec().num_values
    return np.random.default_rng(seed).integers(0, high, (NUM_STEPS, NUM_ENVS)).astype(np.int32)


def raw_leaves(tree):
    as_data = lambda x: jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x  # noqa: E731
    return jax.tree.leaves(jax.tree.map(as_data, tree))


class _Reference:
    """`reset`/`step` of `wrap_for_training(env, batched=False)`, vmapped over the batch."""

    def __init__(self, env):
        single = wrap_for_training(env, batched=False)
        self.reset, self.step = jax.vmap(single.reset), jax.vmap(single.step)


# Integer-valued resets: XLA:CPU may contract a float reset's multiply-add into an FMA in one program and not in
# another, so only these are bitwise the same however they are batched (CartPole's agree to float rounding).
EXACT = [("four_rooms", {"random_goal": True, "max_episode_steps": 12}), ("lpg_delayed_chain", {"variant": "short"})]


@pytest.mark.parametrize("name,kwargs", EXACT)
@pytest.mark.parametrize("fraction", [SMALL, 1 / 16])
def test_any_fraction_gives_bitwise_the_trajectories_of_one_environment_at_a_time(name, kwargs, fraction):
    """The same as whole-batch resets (fraction 1), and as the rule for one environment, vmapped."""
    env = make(name, **kwargs)
    keys, actions = jax.random.split(jax.random.key(5), NUM_ENVS), random_actions(env)
    got = rollout(wrap_for_training(env, reset_fraction=fraction), keys, actions)
    ending = np.asarray(got[1][1].last()).sum(axis=1)  # How many episodes each step ends: resets on the next.
    few = resets_per_step((NUM_ENVS,), fraction)
    assert ((0 < ending) & (ending < max(few, 2))).any()  # Fewer than K where K > 1: padded.
    assert ((0 < ending) & (ending <= few)).any() and (ending > few).any()  # Both paths.
    for reference in (wrap_for_training(env, reset_fraction=1.0), _Reference(env)):
        for a, b in zip(raw_leaves(got), raw_leaves(rollout(reference, keys, actions)), strict=True):
            np.testing.assert_array_equal(a, b)


def test_layouts_survive_partial_resets():
    """reset_episode keeps what outlives an episode: an LPG environment's layout, through every reset."""
    env = make("lpg_delayed_chain", variant="short")
    _, (states, timesteps) = rollout(
        wrap_for_training(env, reset_fraction=SMALL), jax.random.split(jax.random.key(2), NUM_ENVS), random_actions(env)
    )
    assert (np.asarray(timesteps.step_type) == FIRST).sum(axis=0).min() >= 2  # Every environment started again.
    for leaf in jax.tree.leaves(states.env_state.env_state.layout):
        np.testing.assert_array_equal(leaf, np.broadcast_to(leaf[:1], leaf.shape))


def test_every_episode_starts_afresh_from_its_own_key_and_statistics_count_it():
    env = CartPole()
    keys = jax.random.split(jax.random.key(9), NUM_ENVS)
    first, (states, timesteps) = rollout(wrap_for_training(env, reset_fraction=SMALL), keys, random_actions(env, 1))
    step_type, reward = np.asarray(timesteps.step_type), np.asarray(timesteps.reward)
    after_last = np.concatenate([np.zeros((1, NUM_ENVS), bool), step_type[:-1] == LAST])
    np.testing.assert_array_equal(step_type == FIRST, after_last)  # FIRST exactly on the step after LAST.
    starts = np.asarray(timesteps.observation)[after_last]
    assert len(starts) > 3 * NUM_ENVS and np.abs(starts).max() <= 0.05  # CartPole's uniform start.
    np.testing.assert_array_equal(reward[after_last], 0.0)
    np.testing.assert_array_equal(np.asarray(timesteps.discount)[after_last], 1.0)
    all_starts = np.concatenate([np.asarray(first.observation), starts])
    assert len({tuple(row) for row in all_starts.tolist()}) == len(all_starts)  # No two episodes share a start.
    # The running return and length, counted here in NumPy: zero at FIRST, then each step's reward and one step.
    episode_return, episode_length = np.zeros(NUM_ENVS), np.zeros(NUM_ENVS, int)
    for t in range(NUM_STEPS):
        fresh = step_type[t] == FIRST
        episode_return = np.where(fresh, 0.0, episode_return + reward[t])
        episode_length = np.where(fresh, 0, episode_length + 1)
        np.testing.assert_allclose(states.episode_return[t], episode_return, rtol=1e-6)
        np.testing.assert_array_equal(states.episode_length[t], episode_length)


@dataclasses.dataclass(frozen=True)
class _RecordingBatched(Batched):
    """Records the batch each traced `reset_episode` resets."""

    traced: list = dataclasses.field(default_factory=list, compare=False, hash=False)

    def reset_episode(self, state, key):
        self.traced.append(key.shape[0])
        return super().reset_episode(state, key)


@pytest.mark.parametrize("fraction,resets", [(1.0, [16]), (SMALL, [16, 2]), (1 / 16, [16, 1])])
def test_a_step_resets_the_few_alone_or_the_whole_batch(fraction, resets):
    batch = _RecordingBatched(CartPole())
    env = AutoReset(batch, fraction)
    state, _ = jax.eval_shape(env.reset, jax.random.split(jax.random.key(0), NUM_ENVS))
    jax.eval_shape(env.step, state, np.zeros(NUM_ENVS, np.int32))
    assert sorted(batch.traced, reverse=True) == resets


def test_resets_per_step():
    assert resets_per_step((1024,), 1 / 16) == 64
    assert resets_per_step((10,), 0.05) == 1  # At least one.
    assert resets_per_step((10,), 0.25) == 3  # Rounded up.
    assert resets_per_step((16,), 0.99) == 0  # K = B: the whole batch, as with 1.
    assert resets_per_step((16,), 1.0) == 0
    assert resets_per_step((), SMALL) == 0  # One environment.


@pytest.mark.parametrize("fraction", [0.0, -0.5, 1.5, float("nan")])
def test_a_fraction_outside_zero_to_one_is_refused(fraction):
    with pytest.raises(ValueError, match="reset_fraction must be in"):
        AutoReset(CartPole(), fraction)


@pytest.mark.parametrize(
    "name,default",
    [
        ("catch", 1.0),
        ("lpg_delayed_chain", 1.0),
        ("lpg_tabular", EXPENSIVE_RESET_FRACTION),
        ("lpg_random_grid", EXPENSIVE_RESET_FRACTION),
        ("gymnax:CartPole-v1", 1.0),
        ("craftax:Craftax-Classic-Symbolic-v1", EXPENSIVE_RESET_FRACTION),
        ("xminigrid:MiniGrid-Empty-8x8", EXPENSIVE_RESET_FRACTION),
        ("navix:Navix-Empty-8x8-v0", EXPENSIVE_RESET_FRACTION),
        ("jumanji:Snake-v1", EXPENSIVE_RESET_FRACTION),
    ],
)
def test_env_reset_fraction_zero_takes_the_environments_default_and_a_set_one_wins(name, default):
    config = podracer.defaults("actor_critic", "anakin")
    config.env.name = name
    assert config.env.reset_fraction == 0.0 and anakin_settings.reset_fraction(config) == default
    config.env.reset_fraction = 0.25
    assert anakin_settings.reset_fraction(config) == 0.25


def test_a_vmapped_population_resets_the_whole_batch_unless_told_otherwise():
    """Under vmap a switch runs all its branches, so the few alone would cost more, not less; one member at a time
    keeps the environment's default."""
    config = podracer.defaults("actor_critic", "anakin")
    config.env.name = "lpg_tabular"
    config.population = ConfigDict({"seed": [0, 1]})
    assert anakin_settings.reset_fraction(config) == 1.0
    config.members_in_parallel = 1
    assert anakin_settings.reset_fraction(config) == EXPENSIVE_RESET_FRACTION
    config.members_in_parallel, config.env.reset_fraction = 0, 0.25
    assert anakin_settings.reset_fraction(config) == 0.25


def test_a_checkpoint_resumes_under_another_reset_fraction_or_from_before_the_field():
    """It changes what resets cost, not what the run does; the environment's name still may not change."""
    config = podracer.defaults("actor_critic", "anakin")
    saved = config.to_dict()
    config.env.reset_fraction = 0.5
    refuse_incompatible(saved, config, "here")
    del saved["env"]["reset_fraction"]
    refuse_incompatible(saved, config, "here")
    config.env.name = "cartpole"
    with pytest.raises(podracer.ConfigError, match="env.name"):
        refuse_incompatible(saved, config, "here")
