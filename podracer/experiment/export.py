"""A trained policy as a `jax.export` artefact that acts with JAX alone, without podracer installed.

`export_policy(trained, out)` traces the agent's acting step with its acting
parameters closed over (so they are constants of the program), lowers it with
`jax.export` and writes the serialised `Exported`. The calling convention
(docs/evaluation.md, "Exporting a policy"):

    policy = jax.export.deserialize(open("policy.bin", "rb").read())
    actions = policy.call(observations)                  # greedy, feed-forward
    actions = policy.call(observations, keys)            # sampling
    actions, state = policy.call(observations, first, state[, keys])  # recurrent

- `observations` `[B, ...]` are as the environment gives them: an array, or a
  dict of them, each leaf in its observation spec's dtype;
- `actions` `[B, ...]` are as the environment receives them: int32 indices,
  or real vectors clipped to the action spec's bounds (`actions.clip_to_spec`,
  as Anakin and Sebulba clip them);
- `keys` (sampling only) is uint32 `[B, 2]`, one threefry key's data per
  environment: `jax.random.key_data(jax.random.split(jax.random.key(seed), B))`.
  A greedy export draws nothing from the caller; where its greedy action still
  draws (a MuZero search), it uses the keys `jax.random.split(jax.random.key(0), B)`;
- a recurrent agent's `state` is a tuple of arrays `[B, ...]`, passed back as
  returned, and `first` (bool `[B]`) marks the observations that start an
  episode, where the agent starts its state afresh. The state before the first
  step comes from a second artefact, `policy.state.bin`:
  `jax.export.deserialize(...).call(observations)` returns it for the batch
  those observations are.

The batch size `B` is symbolic, so one artefact serves every batch size,
unless `batch_size` fixes it. The program is lowered for the platform JAX runs
on here and for CPU. A JSON description (`policy.json` beside `policy.bin`)
gives the specs, the convention and where the policy came from. Every file is
written under a temporary name and renamed when all are written, so a failure
leaves no file half-written.
"""

import contextlib
import importlib.util
import json
import os
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

from podracer.config.errors import UsageError
from podracer.envs.actions import clip_to_spec
from podracer.envs.timestep import FIRST, MID, TimeStep
from podracer.experiment.trained import TrainedAgent
from podracer.run.whole_files import written_whole

FORMAT = "podracer-policy"
SEARCHED_STATES = {  # env.kwargs options that put a state in the observation for a search: (the state, who plays it).
    "self_play": ("Pgx's own game state", "podracer evaluate --opponent"),
    "observe_state": ("the environment's own state", "podracer evaluate"),
}
VERSION = 1


def export_policy(trained: TrainedAgent, out: str, greedy: bool = True, batch_size: int | None = None) -> dict:
    """Writes `trained`'s greedy (or sampling) policy to `out`, with its description beside it; returns that.

    Raises `UsageError` before anything is traced: naming `--out` for a path
    that cannot be written, `--sample` for a greedy export of an agent without
    `greedy_act`, `--batch-size` for a batch size that is not a positive
    integer, the `export` extra when FlatBuffers (which `jax.export`
    serialises with) is missing, or an agent that searches from the environment's
    own state (Pgx's game state with `self_play`, any environment's with `observe_state`), a type `jax.export`
    cannot take in. While tracing, `--batch-size` again for a
    network that cannot act on a symbolic batch.
    """
    paths = artefact_paths(out, trained.agent.recurrent)
    _check_request(trained, greedy, batch_size)
    observation_spec, action_spec = _specs(trained)
    batch = jax.export.symbolic_shape("B")[0] if batch_size is None else batch_size
    observations = jax.tree.map(lambda spec: jax.ShapeDtypeStruct((batch, *spec.shape), spec.dtype), observation_spec)
    keys = () if greedy else (jax.ShapeDtypeStruct((batch, *_key_data_shape()), jnp.uint32),)
    platforms = tuple(dict.fromkeys((jax.export.default_export_platform(), "cpu")))
    policy, blobs = _policy(trained, greedy, action_spec), {}
    if trained.agent.recurrent:
        initial_state = _initial_state(trained)
        blobs[paths["initial_state"]] = _export(initial_state, platforms, batch_size, observations).serialize()
        first = jax.ShapeDtypeStruct((batch,), jnp.bool_)
        state = jax.eval_shape(initial_state, observations)
        blobs[paths["policy"]] = _export(policy, platforms, batch_size, observations, first, state, *keys).serialize()
    else:
        blobs[paths["policy"]] = _export(policy, platforms, batch_size, observations, *keys).serialize()
    description = _description(trained, paths, greedy, batch_size, platforms, observation_spec, action_spec)
    blobs[paths["description"]] = json.dumps(description, indent=2).encode()
    _write_all(blobs)
    return description


def artefact_paths(out: str, recurrent: bool) -> dict[str, str]:
    """The files an export to `out` writes: the policy, its description (`.json`) and a recurrent agent's initial
    state (`.state` before the extension); `UsageError` naming `--out` if they cannot be written."""
    root, extension = os.path.splitext(out)
    paths = {"policy": out, "description": root + ".json"}
    if recurrent:
        paths["initial_state"] = f"{root}.state{extension}"
    if extension == ".json":
        raise UsageError(f"--out {out}: the policy's description is written as {out}; name the policy policy.bin")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise UsageError(f"--out {out}: its folder {folder} does not exist; create it or choose another path")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"--out {out}: its folder {folder} is not writable; choose another path")
    for path in paths.values():
        if os.path.isdir(path):
            raise UsageError(f"--out {out}: {path} is a folder; give a file name such as {path}/policy.bin")
    return paths


def _check_request(trained: TrainedAgent, greedy: bool, batch_size: int | None) -> None:
    if greedy and trained.agent.greedy_act is None:
        raise UsageError("--sample: this agent has no greedy_act (its most likely action); export it with --sample")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise UsageError(f"--batch-size {batch_size!r}: must be a positive integer; or leave it out for any batch size")
    for option, (state, command) in SEARCHED_STATES.items():
        if trained.config.env.kwargs.get(option):
            raise UsageError(
                f"{trained.config.env.name} with {option}: the agent searches from {state}, which jax.export cannot "
                f"take as an input; play it with {command} instead"
            )
    if importlib.util.find_spec("flatbuffers") is None:
        raise UsageError("exporting a policy needs FlatBuffers, for jax.export: pip install 'podracer[export]'")


def _specs(trained: TrainedAgent) -> tuple[Any, Any]:
    """The run's environment's (unbatched) observation and action specs; a host environment is closed after."""
    env = trained.make_env()
    try:
        return env.observation_spec(), env.action_spec()
    finally:
        if trained.config.architecture != "anakin":
            env.close()


def _policy(trained: TrainedAgent, greedy: bool, action_spec: Any) -> Callable:
    """The acting step with the acting parameters closed over, in the calling convention's signature:
    `(observations[, first, state][, key_data]) -> actions` or `(actions, state)` for a recurrent agent."""
    agent, params = trained.agent, trained.acting_params
    state_tree = jax.tree.structure(jax.eval_shape(lambda: agent.state_for(1)))

    def policy(observations: Any, *rest: Any) -> Any:
        first, state = rest[:2] if agent.recurrent else (None, ())
        batch = jax.tree.leaves(observations)[0].shape[0]
        keys = jax.random.split(jax.random.key(0), batch) if greedy else jax.random.wrap_key_data(rest[-1])
        step_type = jnp.full((batch,), MID) if first is None else jnp.where(first, FIRST, MID)
        zeros = jnp.zeros((batch,), jnp.float32)
        timestep = TimeStep(step_type.astype(jnp.int32), zeros, zeros + 1.0, observations)
        state = jax.tree.unflatten(state_tree, state)
        action, _, state = agent.act_with_state(params, timestep, state, keys, greedy)
        action = clip_to_spec(action, action_spec)
        return (action, tuple(jax.tree.leaves(state))) if agent.recurrent else action

    return policy


def _initial_state(trained: TrainedAgent) -> Callable:
    """`observations -> state`: the recurrent state (a tuple of its leaves) before the first step of that batch."""

    def initial_state(observations: Any) -> tuple:
        return tuple(jax.tree.leaves(trained.agent.initial_state(jax.tree.leaves(observations)[0].shape[0])))

    return initial_state


def _export(function: Callable, platforms: tuple, batch_size: int | None, *args: Any) -> jax.export.Exported:
    """`function` exported for `args` (pytrees of `ShapeDtypeStruct`s), lowered for `platforms`."""
    try:
        return jax.export.export(jax.jit(function), platforms=platforms)(*args)
    except jax.errors.InconclusiveDimensionOperation as error:
        if batch_size is not None:
            raise
        reason = str(error).splitlines()[0]
        raise UsageError(
            f"--batch-size: this agent's network cannot act on a batch of any size ({reason}); "
            "export it for one batch size with --batch-size B"
        ) from error


def _key_data_shape() -> tuple[int, ...]:
    """The shape of one random key's data under JAX's default implementation (threefry: `(2,)`)."""
    return jax.random.key_data(jax.random.key(0)).shape


def _description(
    trained: TrainedAgent,
    paths: dict,
    greedy: bool,
    batch_size: int | None,
    platforms: tuple,
    observation_spec: Any,
    action_spec: Any,
) -> dict:
    """What a user of the artefact needs, as JSON: the convention, the specs, and the run it came from."""
    recurrent = trained.agent.recurrent
    keys = None if greedy else {"shape": ["B", *_key_data_shape()], "dtype": "uint32", "impl": _key_impl()}
    arguments = ["observations", *(["first", "state"] if recurrent else []), *([] if greedy else ["keys"])]
    results = "(actions, state)" if recurrent else "actions"
    return {
        "format": FORMAT,
        "version": VERSION,
        "files": {name: os.path.basename(path) for name, path in paths.items() if name != "description"},
        "call": f"{results} = policy.call({', '.join(arguments)})",
        "call_initial_state": "state = initial_state.call(observations)" if recurrent else None,
        "greedy": greedy,
        "recurrent": recurrent,
        "batch_size": batch_size,
        "keys": keys,
        "observation_spec": _spec_json(observation_spec),
        "action_spec": _spec_json(action_spec, bounds=True),
        "platforms": list(platforms),
        "env": {"name": trained.config.env.name, "kwargs": trained.config.env.kwargs.to_dict()},  # What it plays.
        "agent": trained.config.agent.name,
        "architecture": trained.config.architecture,
        "checkpoint_step": trained.step,
        "checkpoint": os.path.abspath(trained.checkpoint),
        "jax_version": jax.__version__,
    }


def _key_impl() -> str:
    return str(jax.random.key_impl(jax.random.key(0)))


def _spec_json(spec: Any, bounds: bool = False) -> dict:
    """A dm_env spec (or a dict of them) as JSON: shape and dtype, a discrete spec's number of values, and with
    `bounds` a bounded spec's minimum and maximum."""
    if isinstance(spec, dict):
        return {key: _spec_json(sub, bounds) for key, sub in spec.items()}
    entry = {"shape": list(spec.shape), "dtype": np.dtype(spec.dtype).name}
    if isinstance(spec, specs.DiscreteArray):
        entry["num_values"] = int(spec.num_values)
    elif bounds and isinstance(spec, specs.BoundedArray):
        entry["minimum"], entry["maximum"] = np.asarray(spec.minimum).tolist(), np.asarray(spec.maximum).tolist()
    return entry


def _write_all(blobs: dict[str, bytes]) -> None:
    """Writes every file whole, and renames none over its path before all are written."""
    with contextlib.ExitStack() as stack:
        for path, blob in blobs.items():
            with open(stack.enter_context(written_whole(path)), "wb") as f:
                f.write(blob)
