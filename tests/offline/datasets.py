"""Small datasets for the offline tests: random episodes of given shapes, with nested observations."""

import numpy as np
from dm_env import specs

from podracer.offline.episode_data import Episode

OBSERVATION_SPEC = {"frame": specs.Array((2, 2), np.uint8, "frame"), "vector": specs.Array((3,), np.float32, "vector")}
DISCRETE_ACTIONS = specs.DiscreteArray(4, name="action")
CONTINUOUS_ACTIONS = specs.BoundedArray((2,), np.float32, -2.0, 2.0, name="action")


def random_episodes(count: int, seed: int = 0, discrete: bool = True, max_steps: int = 8) -> list[Episode]:
    """`count` episodes of 1 to `max_steps` steps, alternately terminated and truncated, observations as
    `OBSERVATION_SPEC`, actions as `DISCRETE_ACTIONS` or `CONTINUOUS_ACTIONS`."""
    rng = np.random.default_rng(seed)
    episodes = []
    for index in range(count):
        steps = int(rng.integers(1, max_steps + 1))
        ended = np.arange(steps) == steps - 1
        actions = rng.integers(0, 4, steps) if discrete else rng.uniform(-2, 2, (steps, 2)).astype(np.float32)
        episodes.append(
            Episode(
                observations={
                    "frame": rng.integers(0, 256, (steps + 1, 2, 2), dtype=np.uint8),
                    "vector": rng.normal(size=(steps + 1, 3)).astype(np.float32),
                },
                actions=actions.astype(np.int32) if discrete else actions,
                rewards=rng.normal(size=steps).astype(np.float32),
                terminations=ended & (index % 2 == 0),
                truncations=ended & (index % 2 == 1),
            )
        )
    return episodes


def record(env_name: str, steps: int, path: str, choose=None, seed: int = 0, num_envs: int = 8) -> list[Episode]:
    """Plays `num_envs` environments of the pure-JAX `env_name` with `choose(observation [B, ...], rng) -> actions`
    (uniformly random actions by default), cuts whole episodes of at least `steps` transitions in all
    (`EpisodeRecorder`) and writes them as the dataset `path`."""
    import jax

    from podracer import envs
    from podracer.envs.host_suites.jax_on_host import JaxOnHost
    from podracer.experiment.collect import random_actions
    from podracer.offline import minari_files
    from podracer.offline.recorder import EpisodeRecorder

    env = JaxOnHost(envs.make(env_name), jax.random.split(jax.random.key(seed), num_envs), auto_reset=True)
    rng, recorder, episodes = np.random.default_rng(seed), EpisodeRecorder(num_envs), []
    timestep = env.reset()
    recorder.start(timestep)
    while sum(episode.steps for episode in episodes) < steps:
        if choose is None:
            action = random_actions(rng, env.action_spec(), num_envs)
        else:
            action = np.asarray(choose(timestep.observation, rng), env.action_spec().dtype)
        timestep = env.step(action)
        episodes += recorder.step(action, timestep)
    minari_files.write(path, episodes, env.observation_spec(), env.action_spec(), {"steps": steps})
    return episodes
