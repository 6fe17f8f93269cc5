"""Adapters of environments that step on the host, for Sebulba: envpool's C++ batches, Gymnasium, PettingZoo.

Each makes a `HostEnvironment` (`podracer.envs.host`): a batch stepped on the
host, whose observations the actor threads hand to an actor device.
`envpool_env` wraps an envpool batch (and `envpool_xla` its XLA step for
Anakin), `envpool_tasks` names envpool's tasks; `gymnasium_env` steps any
Gymnasium environment, and `pettingzoo_env` a PettingZoo parallel environment's
several agents, in worker processes: `worker_pool` starts, steps and ends them,
`worker_env` (and, for PettingZoo, `pettingzoo_worker`) is what runs inside;
`jax_on_host` steps a batch of a pure-JAX environment from Python (evaluation,
`podracer collect`).
The pure-JAX suites' adapters are in `podracer.envs.suites`;
`podracer.envs.env_registry.SUITES` names both.
"""
