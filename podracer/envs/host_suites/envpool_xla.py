"""An envpool pool's step as a JAX function: its send and receive as XLA custom calls into the C++ pool.

`EnvpoolEnvironment.compiled_step` (`podracer.envs.host_suites.envpool_env`) gives its
step this way, so that a Sebulba actor can run a whole rollout, acting and
stepping, as one compiled program (`podracer.sebulba.unroll`). Both steps
turn envpool's outputs into timesteps with the one rule of
`EnvpoolEnvironment._timestep`, and give the same stream for the same seeds
and actions. Tasks with 64-bit arrays (MuJoCo) cannot be stepped that way:
JAX, without x64, would declare their buffers 32-bit.

The custom calls are envpool's own (`xla_step`), registered without the
side-effect flag that envpool's public `pool.xla()` sets, which would send
every program holding them through JAX's slow Python dispatch.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from podracer.envs.host import CompiledStep
from podracer.envs.timestep import TimeStep

# `(observation, reward, terminated, truncated, info, pool_done, xp) -> (timestep, pool_done)`.
TimestepRule = Callable[..., tuple[TimeStep, Any]]

_REGISTERED_TARGETS: set[str] = set()  # XLA custom-call targets registered in this process, by name.


def check_32_bit(pool: Any, name: str) -> None:
    """`NotImplementedError` where the pool has 64-bit arrays (MuJoCo's), which JAX would declare 32-bit."""
    arrays = {**pool.spec.state_array_spec, **pool.spec.action_array_spec}
    wide = [f"{key} ({spec.dtype})" for key, spec in arrays.items() if np.dtype(spec.dtype).itemsize > 4]
    if wide:
        raise NotImplementedError(
            f"{name}'s arrays {', '.join(wide)} are 64-bit, which JAX would declare 32-bit to envpool's XLA "
            "interface: it steps from Python only"
        )


def compiled_step(
    xla: tuple[np.ndarray, Callable], action_dtype: np.dtype, num_envs: int, rule: TimestepRule
) -> CompiledStep:
    """The pool's step as a `CompiledStep`, from its `xla_step` pair and the rule that makes its timesteps.

    Inside a program the actions are not checked: they come from the
    agent's own `act`, whose shapes the program's tracing fixes. The outputs
    are put in environment order unconditionally (a gather over the batch),
    since a compiled step cannot branch on envpool's order cheaply. The state
    is envpool's handle and which environments envpool resets next.
    """
    handle, pool_step = xla

    def step(state, action):
        handle, pool_done = state
        handle, outputs = pool_step(handle, jnp.asarray(action).astype(action_dtype))
        observation, reward, terminated, truncated, info = outputs
        order = jnp.argsort(info["env_id"])
        info = {key: info[key] for key in ("elapsed_step", "terminated") if key in info}  # What the rule reads.
        outputs = jax.tree.map(lambda x: jnp.take(x, order, axis=0), (observation, reward, terminated, truncated, info))
        timestep, pool_done = rule(*outputs, pool_done, jnp)
        return (handle, pool_done), timestep

    return CompiledStep(initial_state=(handle, np.zeros(num_envs, bool)), step=step)


def xla_step(pool: Any) -> tuple[np.ndarray, Callable]:
    """`(handle, step)`: a pool's first handle, and `step(handle, action) -> (handle, envpool's outputs)` in JAX.

    The same custom calls as envpool's public `pool.xla()`, built from the
    same pieces (its `_xla()` targets and handle, its `_from` and `_to`
    conversions), but not flagged as side effects. With the flag, JAX runs
    every program that holds them through its Python dispatch with runtime
    tokens: about 300 us a call on the 2-core CI machine, against about 50,
    and it holds the GIL meanwhile, so actor threads queue behind each other
    for it. Nothing needs the flag: every send takes the handle the previous
    receive returned, every receive the handle its send returned (envpool
    aliases it), and their outputs are used, so XLA can neither drop nor
    reorder them. The targets take the pool as an attribute (`handle`), so one
    registration per envpool class serves every pool of it.
    """
    native = dict(pool._xla())  # {"send" | "recv": (handle bytes, (input specs, output specs), (cpu, gpu) capsules)}
    calls = {}
    for name, (handle, (_, output_specs), capsules) in native.items():
        target = f"podracer_{type(pool).__name__}_{name}"
        if target not in _REGISTERED_TARGETS:
            for platform, capsule in zip(("cpu", "gpu"), capsules, strict=True):
                if capsule is not None:
                    jax.ffi.register_ffi_target(target, capsule, platform=platform, api_version=1)
            _REGISTERED_TARGETS.add(target)
        outputs = [
            jax.ShapeDtypeStruct(tuple(shape), jax.dtypes.canonicalize_dtype(dtype)) for dtype, shape in output_specs
        ]
        call = jax.ffi.ffi_call(target, outputs, has_side_effect=False, input_output_aliases={0: 0})
        calls[name] = functools.partial(call, handle=int.from_bytes(handle, byteorder=sys.byteorder, signed=False))

    def step(handle: Any, action: Any) -> tuple[Any, Any]:
        (handle,) = calls["send"](handle, *pool._from(action))
        handle, *state = calls["recv"](handle)
        return handle, pool._to(state, reset=False, return_info=True)

    return np.frombuffer(native["recv"][0], dtype=np.uint8), step
