"""Configuration: what a user asks a run for, before any device or agent is involved.

Loading config files and command-line overrides (`loading`), the checks of
single fields (`field_checks`), the errors a user can act on (`errors`),
populations of configs (`population`), and a group read into the typed
settings the code below a builder takes (`settings`). The bottom layer: imports nothing else
of podracer, so every other package may use it.
"""
