"""dm_env's own conformance suite over `DmEnvAdapter`, for every registered environment and some suites' tasks.

One `absltest.TestCase` subclass per name in `podracer.envs.names()`, built by a
small class factory, so a newly registered environment is covered automatically
(the tests' own games are imported here, so that the set does not depend on
which test files a pytest worker collected first);
the same for `SUITE_NAMES`, a few tasks of each pure-JAX suite, discrete and
continuous.
"""

import re

import dm_env
import jax
import numpy as np
import pytest
from absl.testing import absltest
from dm_env import specs, test_utils

from podracer.envs import DmEnvAdapter, make, names
from tests.programs import coordination_game  # noqa: F401  Registers the tests' multi-agent games, teams among them.

# Long enough for every registered environment's random policy to finish an
# episode, so dm_env's end-of-episode contract is exercised (checked below).
SEQUENCE_LENGTH = 150
MAX_STEPS_TO_LAST = 2000
SUITE_NAMES = [
    "gymnax:CartPole-v1",
    "gymnax:Breakout-MinAtar",  # Image observations, stochastic.
    "gymnax:Pendulum-v1",  # Continuous actions; episodes end at the time limit only.
    "gymnax:FrozenLake-misc",  # Discrete observations.
    "pgx:tic_tac_toe",  # Two players, an action mask; random actions may be illegal, which ends the game.
    "jumanji:Game2048-v1",  # Structured observations with an action mask, through stoa.
    "navix:Navix-Empty-5x5-v0",
    "xminigrid:MiniGrid-Empty-8x8",
    "playground:PendulumSwingup",  # MuJoCo physics; ends at the time limit only.
    "popgym_arcade:CartPoleEasy",  # Images, through gymnax's adapter (Craftax's too, tested step by step).
    "jaxmarl:MPE_simple_spread_v3",  # Three agents: actions, rewards and discounts [3], a global state.
]  # Not Brax's: its adapter's timesteps and specs are tests/envs/suites/test_brax_env.py's, MuJoCo's physics here.
# Compiling MuJoCo's physics takes seconds; Jumanji's and JaxMARL's imports and the grid worlds' compilations several.
SLOW_NAMES = {name for name in SUITE_NAMES if not name.startswith(("gymnax:", "pgx:tic"))}


class _AdapterConformance(test_utils.EnvironmentTestMixin):
    env_name: str

    def make_object_under_test(self):
        return DmEnvAdapter(make(self.env_name), seed=0)

    def make_action_sequence(self):
        """Uniformly random actions, a dict of them where the environment's agents form teams of their own specs."""
        rng = np.random.default_rng(0)

        def random_action(spec: specs.Array):
            if isinstance(spec, specs.DiscreteArray):
                return spec.dtype.type(rng.integers(spec.num_values))
            if isinstance(spec, specs.BoundedArray):
                return rng.uniform(spec.minimum, spec.maximum, spec.shape).astype(spec.dtype)
            return spec.generate_value()

        for _ in range(SEQUENCE_LENGTH):
            yield jax.tree.map(random_action, self.environment.action_spec())

    def test_random_policy_reaches_last_then_restarts(self):
        self.reset_environment()
        actions = self.make_action_sequence()
        for _ in range(MAX_STEPS_TO_LAST):
            action = next(actions, None)
            step = self.step_environment(action)
            if step.last():
                break
        else:
            self.fail(f"{self.env_name}: no LAST timestep in {MAX_STEPS_TO_LAST} steps.")
        # One per agent in a multi-agent environment, by team where its agents form teams.
        self.assertTrue(all(np.isin(d, (0.0, 1.0)).all() for d in jax.tree.leaves(step.discount)))
        self.assertTrue(all(np.issubdtype(np.asarray(r).dtype, np.floating) for r in jax.tree.leaves(step.reward)))
        step = self.step_environment()
        self.assertIs(step.step_type, dm_env.StepType.FIRST)
        self.assertIsNone(step.reward)
        self.assertIsNone(step.discount)

    def test_specs_forwarded(self):
        env = make(self.env_name)
        adapter = self.environment
        self.assertEqual(repr(adapter.observation_spec()), repr(env.observation_spec()))
        self.assertEqual(adapter.action_spec(), env.action_spec())
        self.assertEqual(adapter.reward_spec(), env.reward_spec())
        self.assertEqual(adapter.discount_spec(), env.discount_spec())

    def test_observations_are_numpy(self):
        step = self.reset_environment()
        for leaf in _leaves(step.observation):
            self.assertIsInstance(leaf, np.ndarray)

    def test_same_seed_same_episode(self):
        a, b = DmEnvAdapter(make(self.env_name), seed=7), DmEnvAdapter(make(self.env_name), seed=7)
        for x, y in zip(_leaves(a.reset().observation), _leaves(b.reset().observation), strict=True):
            np.testing.assert_array_equal(x, y)


def _leaves(tree):
    if isinstance(tree, dict):
        return [leaf for value in tree.values() for leaf in _leaves(value)]
    return [tree]


for _name in [*names(), *SUITE_NAMES]:
    _class_name = "DmEnvConformanceTest_" + re.sub(r"\W", "_", _name)
    _marks = {"pytestmark": [pytest.mark.slow]} if _name in SLOW_NAMES else {}
    globals()[_class_name] = type(_class_name, (_AdapterConformance, absltest.TestCase), {"env_name": _name, **_marks})
del _name, _class_name, _marks


def test_every_registered_env_is_covered():
    covered = {
        cls.env_name
        for cls in globals().values()
        if isinstance(cls, type) and issubclass(cls, _AdapterConformance) and cls is not _AdapterConformance
    }
    assert covered == {*names(), *SUITE_NAMES}


if __name__ == "__main__":
    absltest.main()
