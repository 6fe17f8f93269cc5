"""Hand-made rows that several bench tests draw or write."""

from podracer.bench.records import Row


def population_row(members: int, median: float) -> Row:
    """A population figure's row of `members` Catch members, with a spread of -10% to +10% about `median`."""
    return Row(
        figure="population",
        sweep="members",
        benchmark="anakin_catch",
        env="catch",
        network="mlp(64,64)",
        platform="cpu",
        devices=2,
        members=members,
        num_envs=512,
        unroll_length=16,
        median=median,
        min=median * 0.9,
        max=median * 1.1,
        repeats=3,
        unit="steps/s",
    )


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
        "median": median,
        "min": median * 0.9,
        "max": median * 1.1,
        "repeats": 3,
        "unit": "frames/s",
    }
    return Row(**{**fields, **columns})
