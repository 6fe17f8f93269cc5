"""`podracer collect`'s work: play a trained run's policy and record its episodes as a dataset.

The trained agent (`podracer.experiment.trained`) plays a batch of its run's
environment that starts each environment's next episode as one ends: an
Anakin run's pure-JAX environment stepped from the host (`JaxOnHost` with
auto-reset), a Sebulba run's host batch. It acts greedily or sampling, and
with probability `epsilon` per environment and step takes a uniformly random
action instead (within a continuous action's bounds), the mix D4RL's datasets
are made of: `epsilon=1` is a random policy's dataset. Whole episodes are
kept (`podracer.offline.recorder`) until they hold at least `steps`
transitions; the episodes still running then are dropped. An environment's
state in its observation, there for a search (Sampled AlphaZero's, a self-play
game's), is left out: the dataset is the environment's own observations. The dataset is
written whole (`podracer.offline.minari_files`), with what made it in its
metadata.
"""

import dataclasses
from collections.abc import Callable

import jax
import numpy as np
from dm_env import specs

from podracer.config.errors import UsageError
from podracer.envs.actions import clip_to_spec
from podracer.envs.host_suites.jax_on_host import JaxOnHost, evaluation_keys
from podracer.envs.observed_state import own_observation
from podracer.experiment.trained import TrainedAgent
from podracer.offline import minari_files
from podracer.offline.episode_data import Episode
from podracer.offline.recorder import EpisodeRecorder
from podracer.run.evaluation import step_keys
from podracer.sebulba.sebulba_evaluation import SEED_OFFSET, jitted_act


@dataclasses.dataclass(frozen=True)
class Policy:
    """How the trained agent acts while recorded."""

    greedy: bool = True  # Its most likely action; False samples its policy.
    epsilon: float = 0.0  # The probability of a uniformly random action instead, per environment and step.
    seed: int = 0  # The environments', the policy's and the random actions' draws.


def random_actions(rng: np.random.Generator, spec: specs.Array, num_envs: int) -> np.ndarray:
    """Uniformly random actions `[B, ...]`: any of a discrete spec's, or within a continuous one's bounds."""
    if isinstance(spec, specs.DiscreteArray):
        return rng.integers(0, spec.num_values, num_envs).astype(spec.dtype)
    low, high = (np.broadcast_to(bound, spec.shape) for bound in (spec.minimum, spec.maximum))
    return rng.uniform(low, high, (num_envs, *spec.shape)).astype(spec.dtype)


def play(trained: TrainedAgent, steps: int, policy: Policy, num_envs: int, own: Callable) -> list[Episode]:
    """Whole episodes of the trained agent acting by `policy`, at least `steps` transitions in all, each observation
    recorded as `own` keeps it (`recorded_observations`)."""
    agent, params, keys = trained.agent, trained.acting_params, jax.random.split(jax.random.key(policy.seed), num_envs)
    if trained.config.architecture == "anakin":
        env, act_keys = JaxOnHost(trained.make_env(), keys, auto_reset=True), evaluation_keys(keys)[1]
    else:
        env, act_keys = trained.make_env(num_envs, SEED_OFFSET + policy.seed), keys
    rng, act = np.random.default_rng(policy.seed), jitted_act(agent, policy.greedy)
    action_spec, agent_state = env.action_spec(), agent.state_for(num_envs)
    recorder, episodes, recorded, t = EpisodeRecorder(num_envs), [], 0, 0
    try:
        timestep = env.reset()
        recorder.start(timestep.replace(observation=own(timestep.observation)))
        while recorded < steps:
            if t > 10 * steps and not episodes:
                raise UsageError(
                    f"no episode of {trained.config.env.name} ended in {t:,} steps; collect needs whole ones"
                )
            action, _, agent_state = act(params, timestep, agent_state, step_keys(act_keys, t))
            action = np.asarray(clip_to_spec(np.asarray(action), action_spec, np))
            explore = rng.random(num_envs) < policy.epsilon
            action = np.where(
                explore.reshape((-1,) + (1,) * (action.ndim - 1)), random_actions(rng, action_spec, num_envs), action
            )
            timestep = env.step(action)
            ended = recorder.step(action, timestep.replace(observation=own(timestep.observation)))
            episodes += ended
            recorded, t = recorded + sum(episode.steps for episode in ended), t + 1
    finally:
        env.close()
    return episodes


def recorded_observations(trained: TrainedAgent) -> tuple:
    """`(observation -> what the dataset keeps of it, its spec)`: an Anakin environment's own observation, without a
    state only a search reads (`observed_state.own_observation`); a Sebulba batch's as it is."""
    if trained.config.architecture == "anakin":
        return own_observation(trained.make_env())
    return (lambda observation: observation), trained.specs[0]


def collect(trained: TrainedAgent, steps: int, out: str, policy: Policy, num_envs: int) -> list[Episode]:
    """Plays (`play`) and writes the episodes as the dataset `out`, its metadata saying what made it."""
    own, observation_spec = recorded_observations(trained)
    episodes = play(trained, steps, policy, num_envs, own)
    metadata = {
        **minari_files.run_metadata(trained.config),
        "checkpoint": trained.checkpoint,
        "checkpoint_step": trained.step,
        "policy": {**dataclasses.asdict(policy), "num_envs": num_envs},
    }
    minari_files.write(out, episodes, observation_spec, trained.specs[1], metadata)
    return episodes
