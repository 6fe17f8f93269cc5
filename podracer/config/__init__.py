"""Configuration: what a user asks a run for, before any device or agent is involved.

Loading config files and command-line overrides (`loading`), the checks of
single fields (`field_checks`), the errors a user can act on (`errors`), and
populations of configs (`population`). The bottom layer: imports nothing else
of podracer, so every other package may use it.
"""
