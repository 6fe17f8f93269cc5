"""The device topology: which devices a run uses, as one named mesh axis.

Every replicated program in podracer is written per device (pmap-style) with
`jax.shard_map` over a 1-D `Mesh` whose single axis is `DEVICE_AXIS`; the
programs hand that name to `agent.learn`, whose collectives average over it
(`podracer.devices.collectives`).
"""

from collections.abc import Callable, Sequence

import jax
import numpy as np
from jax.sharding import Mesh, PartitionSpec

DEVICE_AXIS = "devices"

REPLICATED = PartitionSpec()
SHARDED = PartitionSpec(DEVICE_AXIS)


def device_mesh(devices: Sequence[jax.Device]) -> Mesh:
    """A 1-D mesh over `devices`, the axis named `DEVICE_AXIS`."""
    return Mesh(np.asarray(devices), (DEVICE_AXIS,))


def per_device_program(fn: Callable, mesh: Mesh, in_specs, out_specs) -> Callable:
    """`jax.shard_map(fn, ...)` over `mesh`, the way every podracer program runs per device.

    Without JAX's checks of which values vary over the mesh (`check_vma`):
    flashbax's prioritised sampler vmaps a `lax.cond`, whose batching trips
    them ("Primitive add requires varying manual axes to match" on JAX 0.8,
    "pvary is a invariant->variant collective" on 0.10.2), and podracer's
    programs write every collective out, pmap-style, so they rely on no
    inferred one. Gradients are each device's own until averaged
    (`podracer.devices.collectives`), as the test of 8 devices against 1 checks.
    """
    return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)


def devices_by_id(ids: Sequence[int], every_process: bool = False) -> list[jax.Device]:
    """The devices at positions `ids` among this process's devices, or among each process's, process by process."""
    processes = range(jax.process_count()) if every_process else [jax.process_index()]
    per_process = [sorted((d for d in jax.devices() if d.process_index == p), key=lambda d: d.id) for p in processes]
    return [devices[i] for devices in per_process for i in ids]
