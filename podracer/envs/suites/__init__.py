"""Adapters of the pure-JAX environment suites, one module each, imported only when a config names `SUITE:TASK`.

Each adapter defines `is_task(task)`, `task_names()` and `make(task, **kwargs)`
(pure JAX, for Anakin); `podracer.envs.env_registry.SUITES` maps the prefixes to
them and to the host suites' adapters (`podracer.envs.host_suites`, whose
`make(task, num_envs, seed, **kwargs)` makes a batch for Sebulba). This
package's own import pulls in no suite.
"""
