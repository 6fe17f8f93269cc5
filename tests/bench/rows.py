"""Hand-made rows that several bench tests draw or write."""

from podracer.bench.records import Row


def spread(median: float) -> dict:
    """A row's rate columns: 3 repeats spread -10% to +10% about `median`."""
    return {"median": median, "min": median * 0.9, "max": median * 1.1, "repeats": 3}


def catch_row(figure: str, sweep: str, devices: int, median: float, **columns) -> Row:
    """A row of Anakin on Catch (an MLP, unroll 16) in `figure`'s `sweep` on `devices` CPU devices."""
    fields = {"benchmark": "anakin_catch", "env": "catch", "network": "mlp(64,64)", "platform": "cpu"}
    fields.update(unroll_length=16, unit="steps/s", **spread(median))
    return Row(figure=figure, sweep=sweep, devices=devices, **{**fields, **columns})


def scaling_row(devices: int, median: float, benchmark: str = "anakin_catch") -> Row:
    """A row of figure 4a: `benchmark` on `devices` devices of 64 environments each."""
    return catch_row("4a", "devices", devices, median, benchmark=benchmark, num_envs=64 * devices)


def population_row(members: int, median: float) -> Row:
    """A population figure's row of `members` Catch members on 2 devices, 512 environments each."""
    return catch_row("population", "members", 2, median, members=members, num_envs=512)


def meta_row(members: int, median: float) -> Row:
    """A meta-training figure's row of `members` LPG agents on 2 devices, 4 environments each."""
    fields = {"benchmark": "anakin_lpg_gridworlds", "env": "lpg_tabular+lpg_delayed_chain", "network": "mlp(32)"}
    return catch_row("meta", "members", 2, median, members=members, num_envs=4, **fields)


def muzero_row(sweep: str, median: float, **columns) -> Row:
    """A MuZero figure's row of Sebulba CartPole, 1 actor + 1 learner device unless `columns` say otherwise."""
    fields = {
        "figure": "muzero",
        "sweep": sweep,
        "benchmark": "sebulba_cartpole_muzero",
        "env": "CartPole-v1",
        "network": "mlp(64)",
        "platform": "cpu",
        "devices": 2,
        "actor_devices": 1,
        "learner_devices": 1,
        "actor_threads": 2,
        "envs_per_thread": 16,
        "unroll_length": 16,
        "simulations": 16,
        "unit": "frames/s",
        **spread(median),
    }
    return Row(**{**fields, **columns})


def evaluation_row(every_records: int, median: float) -> Row:
    """An evaluation figure's row of Catch on 2 devices, evaluating every `every_records` log records (0: never)."""
    return catch_row("evaluation", "evaluation", 2, median, num_envs=512, eval_every_records=every_records)
