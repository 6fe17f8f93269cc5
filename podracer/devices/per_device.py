"""Parts of a learner state that each device holds its own of, such as a replay buffer's shard.

Most of a learner state (parameters, optimiser state, counters) is
replicated: every device holds the same values. A replay buffer is not: in
Anakin each device stores the transitions of its own environments, in
Sebulba each learner device those of its own shard of every rollout, and
each samples only from what it holds (the paper's Anakin shards its data the
same way). An agent marks such a part by wrapping it, `PerDevice(buffer)`, in
the state `init` returns; it then reads `state.buffer.value` as usual.

The architectures keep a device axis in front of every leaf under a
`PerDevice` outside their programs (`with_device_axis`: leaves `[D, ...]`,
sharded over the mesh, `partition_specs`), and hand the agent its own slice
inside them (`local`, `global_`). Without a mesh (`jax.jit(agent.learn)` in a
notebook) an agent's state is used as `init` made it, with no device axis.
"""

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from podracer.devices.topology import REPLICATED, SHARDED


@struct.dataclass
class PerDevice:
    """A part of the learner state each device holds its own of (see the module docstring)."""

    value: Any


def _is_per_device(node: Any) -> bool:
    return isinstance(node, PerDevice)


def _map_per_device(fn, tree: Any) -> Any:
    """`tree` with `fn` applied to every leaf under a `PerDevice`, and the other leaves as they are."""
    return jax.tree.map(
        lambda node: jax.tree.map(fn, node) if _is_per_device(node) else node, tree, is_leaf=_is_per_device
    )


def with_device_axis(tree: Any, num_devices: int) -> Any:
    """Each leaf under a `PerDevice` repeated along a new leading device axis `[num_devices, ...]`."""
    return _map_per_device(lambda x: jnp.broadcast_to(x, (num_devices, *x.shape)), tree)


def local(tree: Any) -> Any:
    """Inside a per-device program: this device's slice (`[1, ...] -> [...]`) of every leaf under a `PerDevice`."""
    return _map_per_device(lambda x: x[0], tree)


def global_(tree: Any) -> Any:
    """The inverse of `local`: `[...] -> [1, ...]`, so that the mesh assembles `[D, ...]` from every device's slice."""
    return _map_per_device(lambda x: x[None], tree)


def first(tree: Any) -> Any:
    """The first device's part of a state with device axes, as one device holds it: each leaf read from this
    process's first shard, `[1, ...] -> [...]` under a `PerDevice`, whole elsewhere (it is replicated). What a
    state is changed from outside the architectures' programs (`podracer.offline.starting_state`)."""
    return _map_per_device(lambda x: x[0], jax.tree.map(lambda x: x.addressable_shards[0].data, tree))


def partition_specs(tree: Any) -> Any:
    """The `PartitionSpec` of every leaf of a state with device axes: split over devices under a `PerDevice`,
    replicated elsewhere."""
    return jax.tree.map(
        lambda node: jax.tree.map(lambda _: SHARDED, node) if _is_per_device(node) else REPLICATED,
        tree,
        is_leaf=_is_per_device,
    )


def replicated_part(tree: Any) -> Any:
    """`tree` without its `PerDevice` parts (replaced by None): what every device holds alike."""
    return jax.tree.map(lambda node: None if _is_per_device(node) else node, tree, is_leaf=_is_per_device)
