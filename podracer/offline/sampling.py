"""A dataset on the devices, split over them, and the batches of transitions a compiled program samples from it.

`place` puts the dataset's rows (`podracer.offline.dataset`) onto the mesh
once, in contiguous blocks of m rows per device, each block (on several) with the first
row of the next one, so that a transition starting at a device's last row
finds its next observation on the same device. Only a block of the rows is
ever copied at a time. The list of transition rows is replicated.

`sample` draws one batch of `batch_size` transitions, uniformly from the
whole dataset, from a key every device shares. Each device gathers the drawn
rows it holds, zeros for the others, and one reduce-scatter (`lax.psum_scatter`,
adding zeros only, so exact) hands each device its own slice of the batch,
`batch_size / devices` transitions. The batch is therefore the same however
many devices hold the dataset, and gradients averaged over the devices equal
one device's on the whole batch, as for online runs. A transition comes as a
`Trajectory` of two timesteps, the one an action was taken at and the one it
led to, which the agents' `transitions` reads as it reads any trajectory:
reward and discount (0 where the episode terminated) on the second, which is
LAST where the episode ended, by termination or truncation. The extras hold
the dataset's action at the next observation (`next_action`, ReBRAC's critic
penalty reads it).
"""

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.sharding import Mesh, NamedSharding

from podracer.agents.trajectory import Trajectory
from podracer.devices import collectives
from podracer.devices.topology import REPLICATED, SHARDED
from podracer.envs.timestep import LAST, MID, TimeStep
from podracer.offline.dataset import Dataset


@struct.dataclass
class DeviceRows:
    """A dataset on the mesh: `rows` leaves `[D, m + 1, ...]` (`[1, m, ...]` on one device) split over the devices,
    `transition_rows` `[N]`."""

    rows: dict  # observation, action, reward, terminated and truncated (the two flags as float32).
    transition_rows: jax.Array  # int32 [N], replicated: the global rows that start a transition.
    rows_per_device: int = struct.field(pytree_node=False)  # m


def partition_specs(device_rows: DeviceRows) -> DeviceRows:
    """How a program's `in_specs` lay `DeviceRows` out: blocks split over the devices, the list on every one."""
    return DeviceRows(jax.tree.map(lambda _: SHARDED, device_rows.rows), REPLICATED, device_rows.rows_per_device)


def place(dataset: Dataset, mesh: Mesh) -> DeviceRows:
    """The dataset's rows on `mesh`'s devices, m = ceil(rows / devices) to a device, each block copied alone (on
    one device, the rows as they are: an episode's last row starts no transition, so none needs a row after it)."""
    devices = mesh.size
    per_device = -(-dataset.rows // devices)
    halo = 1 if devices > 1 else 0  # One device holds every next row already: its rows go on as they are.
    arrays = dataset.arrays()
    arrays["terminated"], arrays["truncated"] = (
        arrays[flag].astype(np.float32) for flag in ("terminated", "truncated")
    )

    def blocks(x: np.ndarray) -> jax.Array:
        def block(index: tuple) -> np.ndarray:
            device = index[0].start or 0
            part = x[device * per_device : (device + 1) * per_device + halo]
            missing = per_device + halo - len(part)
            if missing:
                part = np.concatenate([part, np.zeros((missing, *x.shape[1:]), x.dtype)])
            return part[None]

        shape = (devices, per_device + halo, *x.shape[1:])
        return jax.make_array_from_callback(shape, NamedSharding(mesh, SHARDED), block)

    transition_rows = jax.device_put(dataset.transition_rows, NamedSharding(mesh, REPLICATED))
    return DeviceRows(jax.tree.map(blocks, arrays), transition_rows, per_device)


def sample(device_rows: DeviceRows, key: chex.PRNGKey, batch_size: int, axis_name: str | None) -> Trajectory:
    """This device's slice of a batch of `batch_size` transitions drawn by `key` (the same key on every device).

    `device_rows` is as a per-device program sees it: its own block, `[1, m + 1, ...]` (`[1, m, ...]` on one device).
    """
    rows = jax.tree.map(lambda x: x[0], device_rows.rows)
    drawn = jax.random.randint(key, (batch_size,), 0, device_rows.transition_rows.shape[0])
    start = device_rows.transition_rows[drawn] - collectives.axis_index(axis_name) * device_rows.rows_per_device
    held = (start >= 0) & (start < device_rows.rows_per_device)
    local = jnp.where(held, start, 0)

    def gather(x: jax.Array, offset: int) -> jax.Array:
        taken = x[local + offset]
        return jnp.where(held.reshape((-1,) + (1,) * (taken.ndim - 1)), taken, jnp.zeros_like(taken))

    now = jax.tree.map(lambda x: gather(x, 0), rows)
    after = {
        "observation": jax.tree.map(lambda x: gather(x, 1), rows["observation"]),
        "action": gather(rows["action"], 1),
    }
    if axis_name is not None:
        now, after = jax.tree.map(
            lambda x: jax.lax.psum_scatter(x, axis_name, scatter_dimension=0, tiled=True), (now, after)
        )
    return _as_trajectory(now, after)


def _as_trajectory(now: dict, after: dict) -> Trajectory:
    """Transitions `[S]` as two-timestep trajectories `[2, S]` (`[1, S]` actions), the dataset's next actions in
    the extras (zeros after an episode's last step, where no action was taken)."""
    ended = (now["terminated"] + now["truncated"]) > 0
    mid = jnp.full(ended.shape, MID, jnp.int32)
    timestep = TimeStep(
        step_type=jnp.stack([mid, jnp.where(ended, LAST, MID)]),
        reward=jnp.stack([jnp.zeros_like(now["reward"]), now["reward"]]),
        discount=jnp.stack([jnp.ones_like(now["reward"]), 1.0 - now["terminated"]]),
        observation=jax.tree.map(lambda x, y: jnp.stack([x, y]), now["observation"], after["observation"]),
    )
    return Trajectory(timestep=timestep, action=now["action"][None], extras={"next_action": after["action"][None]})
