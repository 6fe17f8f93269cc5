"""A task that needs memory: a feed-forward agent stays at chance, a recurrent one solves it, on both architectures
and with R2D2.

`Recall` (written here) shows a cue, one of two, on the first step of an
episode only; after `delay` blank steps it asks, and the action must name the
cue: +1 if it does, -1 if not. With no memory the question looks the same
whichever the cue was, so the best a policy can do is chance, a mean of 0.
The Sebulba variant steps the same environment on the host, one jitted call
per step, as any host simulator would be stepped. The R2D2 variant is DQN on
Anakin: with an LSTM core it acts from its carried state and learns from
replayed sequences started from the state stored with their first step, after
a burn-in (`recurrent_replay`); without one it is plain DQN, and stays at chance.
"""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs
from flax import struct

import podracer
from podracer.envs import timestep as ts
from podracer.envs.base import Environment
from podracer.envs.host import HostEnvironment
from podracer.run.contract import recent_return
from tests.helpers import load_config

RECURRENT = {"network.core": "lstm", "network.core_size": 32, "network.shared_torso": True}
FEED_FORWARD = {"network.core": "none"}


@struct.dataclass
class RecallState:
    cue: jnp.ndarray  # 0 or 1.
    t: jnp.ndarray  # Steps taken in the episode.


@dataclasses.dataclass(frozen=True)
class Recall(Environment):
    delay: int = 4

    def reset(self, key: chex.PRNGKey) -> tuple[RecallState, ts.TimeStep]:
        state = RecallState(cue=jax.random.bernoulli(key).astype(jnp.int32), t=jnp.int32(0))
        return state, ts.restart(self._observe(state))

    def step(self, state: RecallState, action: chex.Array) -> tuple[RecallState, ts.TimeStep]:
        asked = state.t == self.delay
        reward = jnp.where(asked, jnp.where(action == state.cue, 1.0, -1.0), 0.0)
        state = RecallState(cue=state.cue, t=state.t + 1)
        return state, ts.transition(self._observe(state), reward, terminated=asked, truncated=False)

    def _observe(self, state: RecallState) -> jnp.ndarray:
        shown = jax.nn.one_hot(state.cue, 2) * (state.t == 0)
        return jnp.concatenate([shown, (state.t == self.delay)[None].astype(jnp.float32)])

    def observation_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((3,), jnp.float32, 0.0, 1.0, name="cue_and_question")

    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(2, name="answer")


class HostRecall(HostEnvironment):
    """`num_envs` copies of `Recall`, auto-resetting as host environments do, stepped by jitted calls on the host."""

    def __init__(self, num_envs: int, seed: int):
        self.num_envs = num_envs
        env = podracer.envs.wrap_for_training(Recall())
        self._reset = jax.jit(lambda key: env.reset(jax.random.split(key, num_envs)))
        self._step = jax.jit(env.step)
        self._key, self._state = jax.random.key(seed), None

    def reset(self) -> ts.TimeStep:
        self._state, timestep = self._reset(self._key)
        return jax.tree.map(np.asarray, timestep)

    def step(self, action) -> ts.TimeStep:
        self._state, timestep = self._step(self._state, jnp.asarray(action))
        return jax.tree.map(np.asarray, timestep)

    def observation_spec(self) -> specs.BoundedArray:
        return Recall().observation_spec()

    def action_spec(self) -> specs.DiscreteArray:
        return Recall().action_spec()


def test_recall_pays_for_naming_the_cue_only_at_the_question():
    env = Recall(delay=2)
    for cue in (0, 1):
        state = RecallState(cue=jnp.int32(cue), t=jnp.int32(0))
        np.testing.assert_array_equal(env._observe(state), [cue == 0, cue == 1, 0.0])
        rewards = []
        for _ in range(3):
            state, timestep = env.step(state, jnp.int32(cue))
            rewards.append(float(timestep.reward))
        assert rewards == [0.0, 0.0, 1.0] and int(timestep.step_type) == ts.LAST
        np.testing.assert_array_equal(timestep.observation, [0.0, 0.0, 0.0])
        _, wrong = env.step(RecallState(cue=jnp.int32(cue), t=jnp.int32(2)), jnp.int32(1 - cue))
        assert float(wrong.reward) == -1.0


def anakin(network: dict, seed: int) -> float:
    # 60 updates: seed 0's LSTM scores 0.86 at update 32, 0.98 at 36 and 0.99-1.0 from 44 on (1.00 over the last 100
    # episodes); seed 1's 0.88 at 36, 0.95 at 40, 0.98-1.0 from 42 on. The feed-forward agent: -0.05.
    overrides = {**network, "num_envs": 64, "unroll_length": 16, "total_steps": 64 * 16 * 60, "num_devices": 2}
    config = load_config("anakin_catch", {**overrides, "optimizer.learning_rate": 3e-3}, seed=seed)
    return recent_return(podracer.train(config, env=Recall()).history)


def anakin_r2d2(network: dict, seed: int, config_name: str = "anakin_cartpole_dqn", agent: dict | None = None) -> float:
    # 60 updates of 160 steps: seeds 0-4's LSTM first score 1.0 at 3,360-4,000 steps, as epsilon ends its decay (from 1
    # to the config's 0.01 over the first 30% of the run), and 0.98-1.0 over the last 100 episodes; the feed-forward
    # DQN's distance from 0 is 0.02-0.16. With epsilon at 0.01 a solved agent scores 0.99: 0.8 still means solved.
    # Sequences of 8 transitions, the first 2 burn-in; a feed-forward Q-network learns from single transitions.
    # About 17 s alone (both runs, compiled as the suite compiles; on the 2 cores shared with other work).
    recurrent = network["network.core"] != "none"
    sequences = {"agent.sequence_length": 8, "agent.burn_in": 2} if recurrent else {}
    overrides = {
        **network,
        **sequences,
        "num_envs": 16,
        "unroll_length": 10,
        "total_steps": 16 * 10 * 60,
        "num_devices": 1,
        "network.hidden_sizes": (64,),
        "agent.batch_size": 32,
        "agent.buffer_size": 4_000,
        "agent.min_replay_size": 320,
        "optimizer.learning_rate": 3e-3,
        **(agent or {}),
    }
    config = load_config(config_name, overrides, seed=seed)
    return recent_return(podracer.train(config, env=Recall()).history)


def anakin_r2d2_iqn(network: dict, seed: int) -> float:
    # IQN in R2D2's sequence replay, the DQN variant's settings, 16 sampled and 16 acting quantile fractions.
    return anakin_r2d2(network, seed, "anakin_cartpole_iqn", {"agent.num_atoms": 16, "agent.acting_quantiles": 16})


def sebulba(network: dict, seed: int) -> float:
    # 50 updates: seed 0's LSTM scores 0.90 in the window to 40,960 steps, 0.98 to 51,200 (and 1.0 to 61,440).
    overrides = {**network, "envs_per_thread": 32, "unroll_length": 16, "total_steps": 32 * 16 * 2 * 50}
    config = load_config("sebulba_cartpole_impala", {**overrides, "optimizer.learning_rate": 3e-3}, seed=seed)
    config.actor_device_ids, config.learner_device_ids = (0,), (1,)
    return recent_return(podracer.train(config, env=HostRecall).history)


@pytest.mark.slow
@pytest.mark.parametrize(
    "train",
    [
        pytest.param(anakin, id="anakin_over_2_devices"),
        # R2D2's sequence replay and burn-in learn with IQN's head below: DQN's is a second proof.
        pytest.param(anakin_r2d2, id="anakin_r2d2", marks=pytest.mark.extended),
        pytest.param(anakin_r2d2_iqn, id="anakin_r2d2_iqn"),
        pytest.param(sebulba, id="sebulba_1_actor_1_learner"),
    ],
)
@pytest.mark.learning("LSTM, last 100 episodes", at_least=0.8, random=0)
@pytest.mark.learning("feed-forward, last 100 episodes, distance from 0", at_most=0.3)  # No memory: chance.
def test_a_recurrent_agent_solves_recall_and_a_feed_forward_one_stays_at_chance(train, learning):
    learning.check(train(RECURRENT, seed=learning.seed), "LSTM, last 100 episodes")
    learning.check(abs(train(FEED_FORWARD, seed=learning.seed)), "feed-forward, last 100 episodes, distance from 0")
