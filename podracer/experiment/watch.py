"""`podracer evaluate`'s work: play a trained agent's episodes, and draw them into a video file.

The episodes are those a periodic evaluation (`podracer.run.evaluation`) of the
run would play with the same `seed`: the same keys, the same environments (an
Anakin run's pure-JAX one, batched and stepped from Python by `JaxOnHost`; a
Sebulba run's host batch, seeded as its evaluations are), acting greedily or
sampling. With a video path, the first `video_episodes` episodes are drawn
(`podracer.envs.frames`) from their first observation to their last, and
written by imageio, MP4 through its ffmpeg plugin or GIF through Pillow.
"""

import dataclasses
import os
import warnings
from typing import Any

import jax
import numpy as np

from podracer.envs.frames import frame
from podracer.envs.host_suites.jax_on_host import JaxOnHost, evaluation_keys
from podracer.envs.timestep import LAST
from podracer.experiment.trained import TrainedAgent
from podracer.run.whole_files import written_whole
from podracer.sebulba.sebulba_evaluation import SEED_OFFSET, jitted_act, play_host_episodes


@dataclasses.dataclass(frozen=True)
class Played:
    """The episodes `play` played, one per environment, and the frames drawn of the first few."""

    returns: np.ndarray  # [episodes]
    lengths: np.ndarray  # [episodes]
    ended: np.ndarray  # [episodes]: False where max_steps came first.
    frames: list[np.ndarray]  # uint8 [H, W, 3]: each drawn episode's length + 1 frames, one episode after another.


def play(
    trained: TrainedAgent,
    episodes: int,
    greedy: bool = True,
    seed: int = 0,
    max_steps: int = 100_000,
    video_episodes: int = 0,
) -> Played:
    """Plays `episodes` episodes of the trained agent; draws the first `video_episodes` of them (`CannotRender`)."""
    agent, keys = trained.agent, jax.random.split(jax.random.key(seed), episodes)
    if trained.config.architecture == "anakin":
        env, act_keys = JaxOnHost(trained.make_env(), keys), evaluation_keys(keys)[1]
    else:
        env, act_keys = trained.make_env(episodes, SEED_OFFSET + seed), keys
    drawn: list[list[np.ndarray]] = [[] for _ in range(video_episodes)]
    ended = np.zeros(episodes, bool)

    renderer = env.env if isinstance(env, JaxOnHost) else None  # Host batches are drawn from their observations.

    def draw(timestep: Any) -> None:
        for index, episode in enumerate(drawn):
            if not ended[index]:
                observation = jax.tree.map(lambda x, i=index: x[i], timestep.observation)
                state = jax.tree.map(lambda x, i=index: x[i], env.state) if renderer else None
                episode.append(frame(renderer, state, observation))
        ended[:] |= np.asarray(timestep.step_type) == LAST  # Drawn, then no more.

    act = jitted_act(agent, greedy)
    try:
        returns, lengths, finished = play_host_episodes(
            env, act, trained.acting_params, agent.state_for(episodes), act_keys, max_steps, draw
        )
    finally:
        env.close()
    return Played(returns, lengths, finished, [image for episode in drawn for image in episode])


def write_video(frames: list[np.ndarray], path: str, fps: int = 30) -> None:
    """Writes `frames` to `path` (.mp4 or .gif) with imageio, through a temporary file: never half a video."""
    try:
        import imageio.v3 as imageio
    except ImportError:
        raise ImportError("videos need imageio: pip install -e '.[video]'") from None
    extension = os.path.splitext(path)[1].lower()
    video = np.stack(frames)
    if extension == ".mp4":  # H.264 wants sides in whole 16-pixel blocks: black margins rather than a resize.
        height, width = video.shape[1:3]
        video = np.pad(video, ((0, 0), (0, -height % 16), (0, -width % 16), (0, 0)))
    options = {"fps": fps} if extension == ".mp4" else {"duration": 1000 / fps, "loop": 0}
    with written_whole(path, extension) as partial, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)  # imageio's ffmpeg: a fork, then exec, no Python.
        imageio.imwrite(partial, video, extension=extension, **options)
