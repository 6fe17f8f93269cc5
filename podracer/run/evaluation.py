"""Periodic evaluation, both architectures: its config fields, when it is due, and the fields its episodes add.

Training records report the episodes the exploring policy played while it
learned. An evaluation plays `evaluation.episodes` whole episodes of
environments of its own (never the training ones, whose states, keys and
records it leaves exactly as they were), with the policy's most likely action
(`evaluation.greedy`, the agent's `greedy_act`) or sampling it. Every
evaluation of a run starts from the same keys (`evaluation.seed`): the same
first observations and, when sampling, the same draws, so the points of an
evaluation curve differ only by the parameters they evaluate.

An evaluation runs at the first log record at or after each multiple of
`evaluation.every_steps`, and at the run's last record; it adds
`eval_mean_return`, its standard error, `eval_mean_length` and
`eval_episodes` to that record, and with a finite `evaluation.success_return`
the share of episodes whose return exceeds it, `eval_success_rate` (an SMAX
battle is won exactly where the team's return exceeds 1). An episode that has not ended after
`evaluation.max_steps` steps is left out (and counted in
`eval_unfinished`), so an environment without a time limit cannot hold a run.
"""

import math
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from ml_collections import ConfigDict

from podracer.agents import Agent
from podracer.config import field_checks, population
from podracer.config.errors import ConfigError
from podracer.envs import episodes
from podracer.envs.timestep import LAST
from podracer.run.metrics_writer import MEMBERS

FIELDS = ("eval_mean_return", "eval_return_stderr", "eval_mean_length", "eval_episodes", "eval_unfinished")


def defaults() -> ConfigDict:
    """The `evaluation` group of every config: off until `every_steps` is set."""
    return ConfigDict(
        {
            "every_steps": 0,  # Evaluate at the first log record at or after each multiple (0: never).
            "episodes": 32,  # Whole episodes per evaluation, on environments of its own.
            "greedy": True,  # The policy's most likely action (argmax, a Gaussian's mean); False samples it.
            "seed": 0,  # The evaluation environments' and draws' keys: the same at every evaluation.
            "max_steps": 100_000,  # Steps after which an episode that has not ended is left out.
            "success_return": math.inf,  # An episode of a higher return is a success (eval_success_rate); inf: none.
        }
    )


def validate(config: ConfigDict) -> None:
    """Types and ranges of the `evaluation` fields."""
    field_checks.integer(config, "evaluation.every_steps", at_least=0, example=100_000, at_most=None)
    field_checks.integer(config, "evaluation.episodes", at_least=1, example=32)
    field_checks.boolean(config, "evaluation.greedy")
    field_checks.integer(config, "evaluation.seed", at_least=0)
    field_checks.integer(config, "evaluation.max_steps", at_least=1, example=10_000)
    if config.evaluation.success_return != math.inf:  # Infinity: no episode is a success, none is counted.
        field_checks.number(config, "evaluation.success_return", example=1.0)


def enabled(config: ConfigDict) -> bool:
    return config.evaluation.every_steps > 0


def check_agent(config: ConfigDict, agent: Agent) -> None:
    """A greedy evaluation needs the agent's `greedy_act`; a `ConfigError` before anything compiles if it has none."""
    if enabled(config) and config.evaluation.greedy and agent.greedy_act is None:
        raise ConfigError(
            "evaluation.greedy",
            "the agent has no greedy_act (its most likely action), so it cannot be evaluated greedily",
            "set --config.evaluation.greedy=False to evaluate its sampled actions, or give the Agent a greedy_act",
        )


def evaluate_if_due(
    evaluate: Callable[[], Any] | None,
    config: ConfigDict,
    record: dict,
    previous_step: int,
    final: bool,
    members: int = 0,
) -> None:
    """Adds an evaluation's fields and `eval_seconds` to `record` when one is due: a multiple of
    `evaluation.every_steps` lies between the previous record's step and this one's, or this is the run's last.

    `evaluate()` plays the episodes (`play`'s outputs); a population's, with `members` on their leading axis, go to
    each member's record.
    """
    if evaluate is None or not is_due(record["step"], next_due(previous_step, config.evaluation.every_steps), final):
        return
    started = time.perf_counter()
    outputs = evaluate()
    member_records = record[MEMBERS] if members else [record]
    for member_record, member_outputs in zip(member_records, population.members_of(outputs, members), strict=True):
        member_record.update(record_fields(*member_outputs, config.evaluation.success_return))
    record["eval_seconds"] = time.perf_counter() - started


def next_due(step: int, every_steps: int) -> int:
    """The step of the first evaluation after `step`: the next multiple of `every_steps`."""
    return (step // every_steps + 1) * every_steps


def is_due(step: int, due_step: int, final: bool) -> bool:
    """Whether the record at `step` evaluates: it reached the due step, or it is the run's last."""
    return step >= due_step or final


def initial_totals(batch_size: int, xp: Any = jnp) -> tuple:
    """`(returns, lengths, ended)` of a batch that has not stepped yet, for `tally`."""
    return xp.zeros(batch_size, xp.float32), xp.zeros(batch_size, xp.int32), xp.zeros(batch_size, bool)


def tally(totals: tuple, timestep: Any, xp: Any = jnp) -> tuple:
    """`(returns, lengths, ended)` `[B]` after one more step of a batch that plays one episode per environment.

    A step after an environment's episode ended (the batch moves in lockstep)
    counts for nothing; several agents count their mean reward (`episodes.team_reward`). `xp` is `jax.numpy` in a
    compiled loop, `numpy` on the host.
    """
    returns, lengths, ended = totals
    returns = returns + xp.where(ended, 0.0, episodes.team_reward(timestep))
    lengths = lengths + xp.where(ended, 0, 1)
    return returns, lengths, ended | (timestep.step_type == LAST)


@jax.jit
def step_keys(keys: jax.Array, t: int) -> jax.Array:
    """Each environment's key `[B]` for step `t` of an evaluation, from its acting key: the same at every evaluation."""
    return jax.vmap(jax.random.fold_in, (0, None))(keys, t)


def record_fields(
    returns: np.ndarray, lengths: np.ndarray, finished: np.ndarray, success_return: float = math.inf
) -> dict:
    """The fields an evaluation adds to its record, from each episode's return, length and whether it ended.

    The standard error is the sample standard deviation over the square root of
    the episodes (NaN below two episodes); the means are NaN when none ended.
    With a finite `success_return`, `eval_success_rate` is the share of ended
    episodes whose return exceeds it.
    """
    returns, lengths = np.asarray(returns, np.float64), np.asarray(lengths, np.float64)
    ended = np.asarray(finished, bool)
    count = int(ended.sum())
    mean = float(returns[ended].mean()) if count else math.nan
    stderr = float(returns[ended].std(ddof=1) / math.sqrt(count)) if count > 1 else math.nan
    fields = {
        "eval_mean_return": mean,
        "eval_return_stderr": stderr,
        "eval_mean_length": float(lengths[ended].mean()) if count else math.nan,
        "eval_episodes": count,
        "eval_unfinished": int(ended.size - count),
    }
    if math.isfinite(success_return):
        fields["eval_success_rate"] = float((returns[ended] > success_return).mean()) if count else math.nan
    return fields
