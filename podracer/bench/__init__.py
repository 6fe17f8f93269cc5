"""Throughput benchmarks: the Podracer paper's Figure 4 measured on this machine (`podracer bench`).

One module per figure, in `podracer.bench.figures`, plans its points:

- 4a (`anakin_scaling`): Anakin's steps/s against devices, batch per device fixed.
- 4b (`sebulba_scaling`): Sebulba's frames/s against the actor batch and unroll length.
- 4c (`sebulba_scaling`): Sebulba's frames/s against the actor / learner device split and replicas.
- `pipeline`: Sebulba with a small network over envpool alone (`envpool_raw`).
- `suite_rates` (on request): named rows, the environment suites and Pong's ResNet.
- `population_scaling`, `muzero_scaling`, `evaluation_cost`, `meta_training`
  (on request): populations, MuZero on Sebulba, periodic evaluation's cost
  and LPG meta-training.

Each point is measured in a fresh process with the devices it needs
(`launch`, `worker`), at steady state (`steady`), `--repeats` times; results
go to bench.csv and bench.md (`report`) and a PNG per figure (`charts`), each
row with the machine it ran on (`machine`). `command_line` holds the
command line's options and the list of figures, without JAX; `command` runs
what they ask for.
Imports every layer but the command line, which imports it.
"""
