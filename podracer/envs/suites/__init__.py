"""Adapters of existing environment suites, one module each, imported only when a config names `SUITE:TASK`.

Each adapter defines `is_task(task)`, `task_names()` and `make(task, **kwargs)`
(pure JAX, for Anakin) or `make(task, num_envs, seed, **kwargs)` (host, for
Sebulba); `podracer.envs.registry.SUITES` maps the prefixes to them. This
package's own import pulls in no suite.
"""
