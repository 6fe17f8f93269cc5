"""envpool alone: how fast the environments step with random actions, the ceiling a Sebulba pipeline is held to.

Each of `threads` Python threads steps its own batch of `envs_per_thread`
environments, as Sebulba's actor threads do, so the ratio of Sebulba's rate to
this one (the pipeline efficiency) says how much of the environments' speed
the actor / learner pipeline keeps. The pools are built as Sebulba builds them
(`make_envpool_env`, so Atari gets the same preprocessing), but stepped through
envpool's own `step`: the conversion to podracer's timesteps
(`EnvpoolEnvironment.step`) is the pipeline's work, and counts against it. On
CartPole, where envpool's step is cheap, that conversion alone costs envpool a
quarter to a third of its rate on the 2-core CI machine (docs/benchmarks.md).
"""

import threading
import time

import numpy as np


def envpool_frames_per_second(name: str, steps: int, threads: int, envs_per_thread: int) -> float:
    """Frames per second (agent steps x frame skip) of `threads` threads stepping their own pools `steps` times."""
    from podracer.envs import make_envpool_env

    envs = [make_envpool_env(name, envs_per_thread, seed=i * envs_per_thread) for i in range(threads)]
    try:
        for env in envs:  # Warm-up: the first reset loads ROMs and starts envpool's threads.
            env.reset()
        workers = [threading.Thread(target=_step_randomly, args=(env, steps, i)) for i, env in enumerate(envs)]
        start = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        seconds = time.perf_counter() - start
    finally:
        for env in envs:
            env.close()
    return threads * envs_per_thread * steps * envs[0].frames_per_step / seconds


def _step_randomly(env, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    spec = env.action_spec()
    env.reset()
    for _ in range(steps):
        if hasattr(spec, "num_values"):
            env.pool.step(rng.integers(0, spec.num_values, env.num_envs, dtype=spec.dtype))
        else:
            env.pool.step(rng.uniform(spec.minimum, spec.maximum, (env.num_envs, *spec.shape)).astype(spec.dtype))
