"""The open platform, end to end: a new environment and a new agent, written here, trained by `podracer.train`.

The environment is a cued corridor that podracer does not ship; the agent is
REINFORCE with a learned baseline, written from scratch against the agent
interface (plain JAX and optax, no podracer network). Anakin trains them
together over the test process's two devices; the very same agent object
then runs under Sebulba on envpool CartPole, whose specs it has never seen.
"""

import dataclasses
import inspect
import json
import os
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from dm_env import specs
from flax import struct
from ml_collections import ConfigDict

import podracer
from podracer.devices import collectives
from podracer.envs import LAST, restart, transition
from tests.helpers import ROOT, run_cli

# ---------------------------------------------------------------------------------------------
# A new pure-JAX environment: walk to the end of a corridor that the first observation points to.


@struct.dataclass
class CorridorState:
    position: jax.Array
    goal_is_right: jax.Array
    steps: jax.Array


@dataclasses.dataclass(frozen=True)
class CuedCorridor(podracer.envs.Environment):
    """Start in the middle of `length` cells; a cue says which end pays +1 (the other pays -1).

    Observation: the position one-hot, then the cue (left, right) one-hot.
    Actions: 0 steps left, 1 steps right. An episode terminates at either end
    and is truncated after `max_steps`. A random walk scores 0 on average, a
    policy that reads the cue scores 1.
    """

    length: int = 7
    max_steps: int = 20

    def reset(self, key):
        state = CorridorState(jnp.int32(self.length // 2), jax.random.bernoulli(key), jnp.int32(0))
        return state, restart(self._observe(state))

    def step(self, state, action):
        position = state.position + jnp.where(action == 1, 1, -1)
        state = CorridorState(position, state.goal_is_right, state.steps + 1)
        at_right, at_left = position == self.length - 1, position == 0
        reward = jnp.where(at_right | at_left, jnp.where(at_right == state.goal_is_right, 1.0, -1.0), 0.0)
        return state, transition(self._observe(state), reward, at_left | at_right, state.steps >= self.max_steps)

    def _observe(self, state):
        cue = jax.nn.one_hot(state.goal_is_right.astype(jnp.int32), 2)
        return jnp.concatenate([jax.nn.one_hot(state.position, self.length), cue])

    def observation_spec(self):
        return specs.BoundedArray((self.length + 2,), np.float32, 0.0, 1.0, name="observation")

    def action_spec(self):
        return specs.DiscreteArray(2, name="action")


# ---------------------------------------------------------------------------------------------
# A new agent: REINFORCE with a learned baseline (Williams 1992; Sutton & Barto 2018, section 13.4).


class ReinforceState(NamedTuple):
    params: dict
    opt_state: Any


def reinforce(learning_rate: float = 3e-3, gamma: float = 0.95, hidden: int = 32) -> podracer.Agent:
    """G_t is the discounted return to the episode's end, completed by the baseline where the unroll stops first.

    Loss: -E[log pi(a_t|s_t) sg(G_t - b(s_t))] + 1/2 E[(G_t - b(s_t))^2].
    """
    optimizer = optax.adam(learning_rate)

    def dense(key, n_in, n_out, scale):
        return {"w": scale * jax.random.normal(key, (n_in, n_out)) / np.sqrt(n_in), "b": jnp.zeros(n_out)}

    def forward(params, observation):
        x = observation.reshape(observation.shape[0], -1).astype(jnp.float32)
        h = jnp.tanh(x @ params["hidden"]["w"] + params["hidden"]["b"])
        logits = h @ params["policy"]["w"] + params["policy"]["b"]
        return logits, (h @ params["baseline"]["w"] + params["baseline"]["b"])[:, 0]

    def init(key, observation_spec, action_spec):
        keys = jax.random.split(key, 3)
        n_in = int(np.prod(observation_spec.shape))
        params = {
            "hidden": dense(keys[0], n_in, hidden, 1.0),
            "policy": dense(keys[1], hidden, action_spec.num_values, 0.01),
            "baseline": dense(keys[2], hidden, 1, 1.0),
        }
        return ReinforceState(params, optimizer.init(params))

    def act(params, observation, key):
        logits, _ = forward(params, observation)
        return jax.vmap(jax.random.categorical)(key, logits), {}  # On-policy: nothing to keep.

    def learn(state, trajectory, key, axis_name=None):
        timestep = trajectory.timestep  # [T + 1, B]
        rewards, discounts = timestep.reward[1:], gamma * timestep.discount[1:]
        episode_ends = timestep.step_type[1:] == LAST
        valid = (timestep.step_type[:-1] != LAST).astype(jnp.float32)  # Not the LAST -> FIRST reset step.
        num_steps, batch = rewards.shape

        def loss(params):
            logits, values = forward(params, timestep.observation.reshape((num_steps + 1) * batch, -1))
            logits, values = logits.reshape(num_steps + 1, batch, -1), values.reshape(num_steps + 1, batch)
            next_values = jax.lax.stop_gradient(values[1:])

            def backward(next_return, x):
                reward, discount, ends, next_value = x
                g = reward + discount * jnp.where(ends, next_value, next_return)
                return g, g

            _, returns = jax.lax.scan(
                backward, next_values[-1], (rewards, discounts, episode_ends, next_values), reverse=True
            )
            log_probs = jax.nn.log_softmax(logits[:-1])
            chosen = jnp.take_along_axis(log_probs, trajectory.action[..., None], -1)[..., 0]
            advantages = returns - values[:-1]
            policy_loss = -jnp.mean(valid * chosen * jax.lax.stop_gradient(advantages))
            baseline_loss = 0.5 * jnp.mean(valid * advantages**2)
            return policy_loss + baseline_loss, {"policy_loss": policy_loss, "baseline_loss": baseline_loss}

        grads, metrics = collectives.mean_grad(loss, axis_name)(state.params)
        updates, opt_state = optimizer.update(grads, state.opt_state)
        return ReinforceState(optax.apply_updates(state.params, updates), opt_state), metrics

    return podracer.Agent(init=init, act=act, learn=learn, acting_params=lambda state: state.params)


# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.learning("last 100 episodes", at_least=0.95, random=0)
def test_a_new_agent_learns_a_new_environment_on_anakin_over_two_devices(learning):
    assert jax.device_count() == 2
    config = podracer.defaults(architecture="anakin")
    config.num_envs, config.unroll_length, config.updates_per_dispatch = 64, 16, 5
    config.total_steps = 64 * 16 * 5 * 20
    config.seed = learning.seed
    result = podracer.train(config, env=CuedCorridor(), agent=reinforce())

    assert len(result.learner_state.params["hidden"]["w"].sharding.device_set) == 2  # Replicated on both.
    assert result.learner_state.params["hidden"]["w"].shape == (9, 32)
    assert result.steps == config.total_steps == result.history[-1]["step"]
    assert abs(result.history[0]["mean_episode_return"]) < 0.3  # About 0 for a random walk.
    chex.assert_trees_all_equal(result.acting_params, result.learner_state.params)
    learning.check(podracer.recent_return(result.history))


def test_the_same_agent_object_runs_under_sebulba_on_envpool_cartpole():
    agent = reinforce()
    config = podracer.defaults(architecture="sebulba")
    config.env.name = "CartPole-v1"
    config.envs_per_thread, config.unroll_length, config.log_every_updates = 4, 8, 1
    config.total_steps = 8 * 4 * 2 * 3  # 3 updates of 2 actor threads.
    result = podracer.train(config, agent=agent)

    assert [record["step"] for record in result.history] == [64, 128, 192]
    assert result.learner_state.params["policy"]["w"].shape == (32, 2)  # CartPole's 2 actions, 4 inputs.
    assert result.learner_state.params["hidden"]["w"].shape == (4, 32)
    assert all(np.isfinite(record["policy_loss"]) for record in result.history)
    assert result.history[-1]["episodes"] >= 0 and result.history[-1]["policy_lag"] == 1.0


@pytest.mark.slow  # Runs on both architectures.
def test_registered_names_build_the_environment_and_the_agent_from_the_config():
    podracer.envs.register("cued_corridor_for_tests", CuedCorridor)
    podracer.agents.register(
        "reinforce_for_tests",
        defaults=lambda: ConfigDict({"learning_rate": 3e-3, "gamma": 0.95}),
        build=lambda config, num_updates: reinforce(config.agent.learning_rate, config.agent.gamma),
    )
    config = podracer.defaults("reinforce_for_tests")
    config.env.name, config.env.kwargs.length = "cued_corridor_for_tests", 9
    config.num_envs, config.unroll_length, config.updates_per_dispatch, config.total_steps = 8, 4, 2, 8 * 4 * 2 * 2
    result = podracer.train(config)  # Nothing passed in: the names build both.

    assert result.learner_state.params["hidden"]["w"].shape == (11, 32)  # 9 cells and the cue.
    assert [record["step"] for record in result.history] == [64, 128]
    assert "baseline_loss" in result.history[-1]


@pytest.mark.slow  # A learning run in a fresh process, about 17 s.
@pytest.mark.learning("last record's mean episode return", at_least=0.8, random=0.25)
def test_a_config_file_can_register_its_own_environment_for_the_command_line(tmp_path, learning):
    config, seed = "tests/programs/config_with_own_environment.py", f"--config.seed={learning.seed}"
    result = run_cli("train", "--config", config, seed, "--workdir", str(tmp_path), "--noprogress")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    learning.check(records[-1]["mean_episode_return"])
    assert json.loads((tmp_path / "config.json").read_text())["env"] == {
        "name": "cued_bandit",
        "kwargs": {"arms": 4},
        "reset_fraction": 0.0,
    }


def test_the_docs_show_this_very_agent():
    # The page's examples run in tests/test_docs.py; this keeps its agent the one tested here.
    page = open(os.path.join(ROOT, "docs", "agents-and-environments.md")).read()
    assert inspect.getsource(reinforce) in page
    assert inspect.getsource(ReinforceState) in page
