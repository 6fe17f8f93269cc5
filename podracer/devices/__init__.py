"""Devices: which devices a run uses, and how programs and processes span them.

The one named mesh axis and per-device programs (`topology`), collectives
over it (`collectives`), per-device parts of a state (`per_device`), how a
config splits the devices (`device_split`), and the process set-up: JAX's
multi-controller start (`distributed`), local pods (`local_pod`), XLA:CPU
threads and devices (`xla_cpu`), huge pages (`host_memory`). Imports only
`podracer.config`.
"""
