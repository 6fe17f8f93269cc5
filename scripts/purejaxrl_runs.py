"""The two sides of `compare_purejaxrl.py`: one timed run of PureJaxRL's trainer or of podracer's, and its return.

PureJaxRL's single-file trainers (`purejaxrl/ppo.py`, `purejaxrl/ppo_rnn.py`)
were written against gymnax 0.0.x; `purejaxrl_make_train` imports one from a
checkout with what it needs to run on gymnax 1.0. A run's speed leaves
compilation out on both sides: PureJaxRL's program is compiled ahead of time,
before the call that is timed, and podracer's speed is read from its log
records, whose rates never include compiling. A run's return is the mean of
its last 100 episodes on both sides.

The other single-file trainers compared (purejaxql's, JaxMARL's) are timed
the same way (`purejaxrl_runner`, with their own `final_return`) and import
what they need for their command line and logging, which a timed run does
without (`stand_in_missing`).
"""

import dataclasses
import importlib
import os
import sys
import time
import types
from collections.abc import Callable, Sequence

import numpy as np

EPISODES = 100  # A run's final return: the mean of its last this many episodes (Gym's criterion for CartPole).


def last_episodes_mean(returns: np.ndarray, ended: np.ndarray, episodes: int = EPISODES) -> float:
    """The mean return of the last `episodes` episodes of a PureJaxRL run; NaN if none ended.

    `returns` and `ended` are its `metric["returned_episode_returns"]` and
    `metric["returned_episode"]`, `[updates, steps, environments]`: an episode's
    return stands at the step it ended. Episodes are ordered by that step, and
    those ending at the same step by environment.
    """
    finished = np.asarray(returns, np.float64)[np.asarray(ended, bool)]  # C order: update, step, environment.
    return float(np.mean(finished[-episodes:])) if finished.size else float("nan")


def podracer_rate(history: Sequence[dict]) -> float:
    """Steps per second of a podracer run from its log records: each one's `steps_per_second` covers its own
    dispatch (compilation never counts), and dispatches may differ in length (the last may be shorter)."""
    seconds, start = 0.0, 0
    for record in history:
        seconds += (record["step"] - start) / record["steps_per_second"]
        start = record["step"]
    return start / seconds


def purejaxrl_make_train(checkout: str, module: str) -> Callable:
    """`make_train` of PureJaxRL's `purejaxrl/<module>.py`, from a checkout, runnable on gymnax 1.0 and
    on flax from 0.7 (`_with_one_done_flag`, `_with_unsized_gru`).

    Its modules import their `wrappers` module as a top-level one, and that
    imports navix, which PPO does not use: a stand-in serves where navix is missing.
    """
    checkout = os.path.abspath(checkout)
    sys.path[:0] = [checkout, os.path.join(checkout, "purejaxrl")]
    import gymnax

    try:
        import navix  # noqa: F401
    except ImportError:
        sys.modules["navix"] = types.ModuleType("navix")
    if _gymnax_splits_done(gymnax):
        gymnax.make = _with_one_done_flag(gymnax.make)
    trainer = importlib.import_module(f"purejaxrl.{module}")
    if "features" in {field.name for field in dataclasses.fields(trainer.nn.GRUCell)}:
        trainer.nn = _with_unsized_gru(trainer.nn)
    return trainer.make_train


def _gymnax_splits_done(gymnax) -> bool:
    """Whether this gymnax's `step` returns terminated and truncated apart (1.0 on), not the one `done` of 0.0.x."""
    env, params = gymnax.make("CartPole-v1")
    import jax

    outputs = jax.eval_shape(env.step, jax.random.key(0), env.reset(jax.random.key(0), params)[1], 0, params)
    return len(outputs) == 6


def _with_one_done_flag(make):
    """`gymnax.make` whose environments' `step` returns gymnax 0.0.x's `(obs, state, reward, done, info)`.

    PureJaxRL's trainers were written against gymnax 0.0.x; with gymnax 1.0 a
    step returns terminated and truncated apart, and `done` is their union.
    """

    class OneDoneFlag:
        def __init__(self, env):
            self._env = env

        def __getattr__(self, name):
            return getattr(self._env, name)

        def step(self, key, state, action, params=None):
            obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
            return obs, state, reward, terminated | truncated, info

    def wrapped(name, **kwargs):
        env, params = make(name, **kwargs)
        return OneDoneFlag(env), params

    return wrapped


def _with_unsized_gru(nn: types.ModuleType) -> types.ModuleType:
    """`flax.linen` whose `GRUCell` is flax 0.6's, which `ppo_rnn.py` was written for: `GRUCell()` takes its size
    from the carry, and `GRUCell.initialize_carry(key, batch_dims, size)` is a static method (zeros)."""
    import jax.numpy as jnp

    class GRUCell(nn.Module):
        @nn.compact
        def __call__(self, carry, inputs):
            return nn.GRUCell(features=carry.shape[-1])(carry, inputs)

        @staticmethod
        def initialize_carry(key, batch_dims, size):
            del key  # The carry starts at zeros.
            return jnp.zeros((*batch_dims, size))

    shimmed = types.ModuleType(nn.__name__)
    shimmed.__dict__.update({**vars(nn), "GRUCell": GRUCell})
    return shimmed


def stand_in_missing(names: Sequence[str]) -> None:
    """An empty stand-in module for each of `names` that cannot be imported: a trainer's imports for its command
    line (hydra, omegaconf), logging (wandb) and saving (safetensors), none of which a timed run needs.

    What a trainer's module reads of them at import or in a run does nothing:
    `hydra.main(...)` decorates as the identity, wandb's `init` and `log` return None.
    """
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            stand_in = sys.modules[name] = types.ModuleType(name)
            stand_in.main = lambda **_: lambda function: function  # hydra.main, a decorator.
            stand_in.OmegaConf = stand_in.load_file = stand_in.save_file = None
            stand_in.init = stand_in.log = lambda *_, **__: None  # wandb's, which JaxMARL's trainer calls.


def episodes_return(outputs: dict) -> float:
    """A PureJaxRL run's final return from its outputs' metrics: the mean of its last 100 episodes."""
    metric = outputs["metric" if "metric" in outputs else "metrics"]  # ppo_rnn.py's name, ppo.py's.
    return last_episodes_mean(metric["returned_episode_returns"], metric["returned_episode"])


def purejaxrl_runner(
    make_train: Callable, settings: dict, steps: int, final_return: Callable[[dict], float] = episodes_return
) -> Callable[[int], tuple[float, float]]:
    """`run(seed) -> (steps per second, final return)` for a single-file trainer's `make_train` (PureJaxRL's, or
    one written like it), compiled here, before any run; `final_return` reads a run's return from its outputs."""
    import jax

    compiled = jax.jit(make_train(dict(settings))).lower(jax.random.PRNGKey(0)).compile()

    def run(seed: int) -> tuple[float, float]:
        start = time.perf_counter()
        outputs = jax.block_until_ready(compiled(jax.random.PRNGKey(seed)))
        rate = steps / (time.perf_counter() - start)
        return rate, final_return(outputs)

    return run


def podracer_runner(config) -> Callable[[int], tuple[float, float]]:
    """`run(seed) -> (steps per second, final return)` for podracer's `config`, from its log records."""
    import podracer
    from podracer.run.contract import recent_return

    def run(seed: int) -> tuple[float, float]:
        config.seed = seed
        history = podracer.train(config).history
        return podracer_rate(history), recent_return(history, EPISODES)

    return run
