"""An experiment: every field of its config and `podracer.train`, which runs it on either architecture.

`schema` assembles and validates a whole config (the run's fields, the
architecture's, the network's, the optimiser's and the agent's); `train` is
the one entry point, which validates, starts the job and hands the run to
Anakin or Sebulba. Above both architectures; only plotting, benchmarks and
the command line sit higher.
"""
