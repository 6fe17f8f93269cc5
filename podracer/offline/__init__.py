"""Offline data: datasets of episodes, recorded from runs, stored with Minari, and sampled on the devices.

A dataset is a list of whole episodes, each its observations (one more than
its steps), actions, rewards, and termination and truncation kept apart
(`episode_data`). Datasets are stored as Minari datasets (`minari_files`), so
`minari.MinariDataset(PATH + "/data")` reads podracer's, and podracer reads any
Minari dataset from a local path. A run that trains from a dataset lays its
episodes back to back as rows (`dataset`) and loads them once onto its
devices, split over them, where the compiled program samples transitions
(`sampling`). `recorder` cuts a batch of environments' timesteps into
episodes, for `podracer collect`.

Imports `config`, `devices`, `envs` and `agents` (the `Trajectory` a sample
is), never the architectures that train from it. Minari is the `offline`
extra, imported only when a dataset is read or written.
"""
