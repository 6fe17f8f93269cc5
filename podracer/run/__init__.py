"""The run loop's parts that both architectures share: what a run reports, how it saves, and how it stops.

The run contract (`contract`: log records, callbacks, `TrainResult`), where
records go (`metrics_writer`), checkpoints (`checkpoints`), the lock that
gives a run its workdir (`workdir_lock`), a full disk said plainly
(`disk_full`), orbax's own reports of a failed save or restore held back
(`orbax_reports`), clean stops on signals (`stopping`), the non-finite guard
(`finite`), the progress bar (`progress`), Weights & Biases (`wandb_logger`),
periodic evaluation (`evaluation`) and files written whole (`whole_files`).
Imports `config`, `devices`, `envs` and `agents`, never an architecture.
"""
