"""The run loop's parts that both architectures share: what a run reports, how it saves, and how it stops.

The run contract (`contract`: log records, callbacks, `TrainResult`), where
records go (`metrics_writer`), checkpoints (`checkpoints`), clean stops on
signals (`stopping`), the non-finite guard (`finite`), the progress bar
(`progress`) and Weights & Biases (`wandb_logger`). Imports `config`, `runtime`, `envs` and `agents`, never an
architecture.
"""
