"""Sebulba: host environments on actor threads, trajectories device-to-device, a replicated learner.

`podracer.train` runs it for a config whose `architecture` is `"sebulba"`;
`train` builds, runs and shuts down a run, `actor` and `learner` are its
threads, `settings` its config fields. Imports the layers below it (`config`,
`devices`, `envs`, `agents`, `run`), never Anakin.
"""
