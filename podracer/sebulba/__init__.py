"""Sebulba: envpool actors on actor devices, trajectories device-to-device, a replicated learner."""

from podracer.sebulba.train import StoppedBySignal, ThreadFailed, train

__all__ = ["StoppedBySignal", "ThreadFailed", "train"]
