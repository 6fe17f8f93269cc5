"""The device topology: which devices a run uses, as one named mesh axis.

Every replicated program in podracer is written per device (pmap-style) with
`jax.shard_map` over a 1-D `Mesh` whose single axis is `DEVICE_AXIS`;
collectives such as `lax.pmean(grads, DEVICE_AXIS)` name it.
"""

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

DEVICE_AXIS = "devices"

REPLICATED = PartitionSpec()
SHARDED = PartitionSpec(DEVICE_AXIS)


def device_mesh(devices: list[jax.Device]) -> Mesh:
    """A 1-D mesh over `devices`, the axis named `DEVICE_AXIS`."""
    return Mesh(np.asarray(devices), (DEVICE_AXIS,))


def local_devices(num_devices: int) -> list[jax.Device]:
    """The first `num_devices` local devices; 0 means all of them."""
    devices = jax.local_devices()
    return devices if num_devices == 0 else devices[:num_devices]


def sharding(mesh: Mesh, spec: PartitionSpec) -> NamedSharding:
    return NamedSharding(mesh, spec)
