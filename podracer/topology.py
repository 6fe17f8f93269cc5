"""The device topology: which devices a run uses, as one named mesh axis.

Every replicated program in podracer is written per device (pmap-style) with
`jax.shard_map` over a 1-D `Mesh` whose single axis is `DEVICE_AXIS`;
collectives such as `lax.pmean(grads, DEVICE_AXIS)` name it.
"""

from typing import Any

import jax
import numpy as np
from jax.flatten_util import ravel_pytree
from jax.sharding import Mesh, PartitionSpec

DEVICE_AXIS = "devices"

REPLICATED = PartitionSpec()
SHARDED = PartitionSpec(DEVICE_AXIS)


def device_mesh(devices: list[jax.Device]) -> Mesh:
    """A 1-D mesh over `devices`, the axis named `DEVICE_AXIS`."""
    return Mesh(np.asarray(devices), (DEVICE_AXIS,))


def anakin_devices(num_devices: int) -> list[jax.Device]:
    """The first `num_devices` devices of the job (every process's, process by process); 0 means all."""
    devices = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    return devices if num_devices == 0 else devices[:num_devices]


def devices_by_id(ids, every_process: bool = False) -> list[jax.Device]:
    """The devices at positions `ids` among this process's devices, or among each process's, process by process."""
    processes = range(jax.process_count()) if every_process else [jax.process_index()]
    per_process = [sorted((d for d in jax.devices() if d.process_index == p), key=lambda d: d.id) for p in processes]
    return [devices[i] for devices in per_process for i in ids]


def mean_over_devices(tree: Any) -> Any:
    """`lax.pmean` of a whole pytree over `DEVICE_AXIS` as one collective.

    XLA issues one all-reduce per leaf for a plain tree `pmean`; on CPU each costs
    tens of microseconds, so the leaves are flattened into one vector first. On a
    single device there is nothing to average, and the flattening is skipped too.
    """
    return _over_devices(jax.lax.pmean, tree)


def sum_over_devices(tree: Any) -> Any:
    """`lax.psum` of a whole pytree over `DEVICE_AXIS` as one collective (see `mean_over_devices`)."""
    return _over_devices(jax.lax.psum, tree)


def _over_devices(collective, tree: Any) -> Any:
    if jax.lax.axis_size(DEVICE_AXIS) == 1:
        return jax.tree.map(lambda x: collective(x, DEVICE_AXIS), tree)  # Per-leaf, and free on one device.
    flat, unravel = ravel_pytree(tree)
    return unravel(collective(flat, DEVICE_AXIS))
