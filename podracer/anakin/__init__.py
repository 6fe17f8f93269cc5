"""Anakin: pure-JAX environments and the agent update compiled into one replicated program."""

from podracer.anakin.train import train

__all__ = ["train"]
