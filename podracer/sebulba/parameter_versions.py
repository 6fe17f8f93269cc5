"""Numbered versions of the acting parameters, copied to every actor device.

The learner publishes version `v` after its `v`-th update (version 0 is the
initialisation), copying `agent.acting_params` device-to-device to each actor
device. An actor asks for the exact version its policy lag prescribes and
waits until it exists, so what it acts with never depends on thread timing.
"""

import threading
from typing import Any

import jax

# Versions kept per device. An actor never needs one older than the newest minus the policy lag (<= 1).
VERSIONS_KEPT = 2


class ParameterVersions:
    def __init__(self, actor_devices: list[jax.Device]):
        self._devices = list(actor_devices)
        self._versions: dict[int, dict[jax.Device, Any]] = {}
        self._changed = threading.Condition()

    def publish(self, version: int, params: Any) -> None:
        """Copies `params` to every actor device as `version`.

        The copies never alias the learner's buffers (`may_alias=False`), so the
        learner may donate its state to the next update even where an actor
        shares its device.
        """
        local = jax.tree.map(lambda x: x.addressable_data(0), params)  # This process's copy of replicated params.
        placed = {device: jax.device_put(local, device, may_alias=False) for device in self._devices}
        with self._changed:
            self._versions[version] = placed
            for old in [v for v in self._versions if v <= version - VERSIONS_KEPT]:
                del self._versions[old]
            self._changed.notify_all()

    def get(self, version: int, device: jax.Device, timeout: float) -> Any:
        """The parameters of `version` on `device`; raises `TimeoutError` if not published within `timeout`."""
        with self._changed:
            if not self._changed.wait_for(lambda: version in self._versions, timeout):
                raise TimeoutError
            return self._versions[version][device]
