"""The benchmark's figures, one module each: the points a figure measures (`plan`) and what its rows add up to.

Each `plan` returns the `Point`s (`podracer.bench.records`) that
`podracer.bench.command` measures in fresh processes; the figures themselves
are drawn by `podracer.bench.charts` and written by `podracer.bench.report`.
"""
