"""What LPG meta-training's program costs to build, against the population's members and K: lowering (JAX traces
the dispatch to StableHLO) and XLA's compilation timed apart, the program's size, its memory, and its first
dispatches.

Each point builds the dispatch of `configs/anakin_lpg_gridworlds.py` as `podracer meta-train` does
(`meta_run.uncompiled`, after the same process set-up, `distributed.start`), with every entry of
`meta.environments` given the same multiple of its members (as `podracer bench --figures meta` scales them)
and `meta.inner_updates` = K, one meta-update per dispatch. It prints, per point:

- `lower_s`, `compile_s`: wall seconds of `.lower(...)` and of `.compile()` (with the process's CPU seconds);
- `stablehlo_ops`, `hlo_ops`: the operations of the lowered StableHLO and of XLA's optimised HLO (every
  instruction, fused computations' included), the program's size before and after XLA's passes;
- `temp_gib`: the device memory XLA's buffer assignment gives the program's temporaries (what the backward pass
  through the K inner updates keeps lives there), beside its arguments (the state);
- `dispatch_s`: the seconds of each of the first `--dispatches` dispatches (the first starts every member's
  lifetime), and `steps/s`, the inner environment steps over every member per second of the last.

The points run in one process, `--repeats` rounds of all of them (interleaved, so a ratio of two compares the
same machine load); nothing is cached across points (each builds its own program). On a machine without an
accelerator it uses the config's XLA:CPU devices (two on the 2-core CI machine); on a GPU, the GPU. Usage:

    python -m scripts.meta_compile_cost [--members 16 1024] [--inner-updates 5] [--dispatches 2] [--repeats 1]
        [--hlo-dir DIR] [FIELD=VALUE ...]

FIELD=VALUE pairs override the config (`meta.hidden_size=256`). `--hlo-dir` writes each point's optimised HLO
there, to diff two points' programs.
"""

import argparse
import os
import sys
import time

import jax
import numpy as np

from podracer.bench import figure_configs
from podracer.bench.figures.meta_training import scaled
from podracer.devices import distributed
from podracer.experiment import meta_run
from podracer.experiment import meta_train as meta_config

BENCHMARK = "anakin_lpg_gridworlds"


def operations(text: str) -> int:
    """The instructions of an HLO or StableHLO module's text: its lines that assign a value."""
    return sum(1 for line in text.splitlines() if " = " in line)


def point_config(members: int, inner_updates: int, overrides: dict):
    """The config with `members` members in all (each entry scaled alike), K = `inner_updates`, one meta-update a
    dispatch; `SystemExit` for a count the config's members do not divide, `ConfigError` for any other bad value."""
    environments = figure_configs.load_named(BENCHMARK, overrides).meta.environments
    base = sum(count for _, _, count in environments)
    if members % base:
        raise SystemExit(f"--members {members}: use a multiple of the config's {base}")
    config = figure_configs.load_named(
        BENCHMARK,
        {
            **overrides,
            "meta.environments": scaled(environments, members // base),
            "meta.inner_updates": inner_updates,
            "meta.updates_per_dispatch": 1,
        },
    )
    meta_config.validate(config)
    return config


def measure(config, dispatches: int, hlo_path: str | None) -> dict:
    """One point: lowering and compiling timed apart, the program's size and memory, its first dispatches."""
    program = meta_run.uncompiled(config)
    wall, cpu = time.perf_counter(), time.process_time()
    lowered = program.lower()
    lower_s, lower_cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"  lowered in {lower_s:.1f} s, compiling", flush=True)  # A run cut short still says where it was.
    wall, cpu = time.perf_counter(), time.process_time()
    compiled = lowered.compile()
    compile_s, compile_cpu = time.perf_counter() - wall, time.process_time() - cpu
    hlo = compiled.as_text()
    if hlo_path:
        with open(hlo_path, "w") as file:
            file.write(hlo)
    memory = compiled.memory_analysis()
    result = {
        "lower_s": round(lower_s, 1),
        "lower_cpu_s": round(lower_cpu, 1),
        "compile_s": round(compile_s, 1),
        "compile_cpu_s": round(compile_cpu, 1),
        "stablehlo_ops": operations(lowered.as_text()),
        "hlo_ops": operations(hlo),
        "temp_gib": round(memory.temp_size_in_bytes / 2**30, 3) if memory else None,
        "state_gib": round(memory.argument_size_in_bytes / 2**30, 3) if memory else None,
    }
    run = program.run(compiled)
    seconds = []
    print(f"  compiled in {compile_s:.1f} s", flush=True)
    for index in range(dispatches):
        print(f"  dispatch {index + 1}", flush=True)
        start = time.perf_counter()
        run.state, outputs = run.dispatch(run.state, np.int32(1))
        jax.block_until_ready(outputs)
        seconds.append(round(time.perf_counter() - start, 2))
    result["dispatch_s"] = seconds
    if seconds:
        result["steps/s"] = round(run.steps_per_update / seconds[-1])
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, nargs="+", default=[16, 64, 256, 1024])
    parser.add_argument("--inner-updates", type=int, nargs="+", default=[5], help="K, meta.inner_updates")
    parser.add_argument("--dispatches", type=int, default=2, help="dispatches timed per point (0: none)")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of every point, interleaved")
    parser.add_argument("--hlo-dir", help="write each point's optimised HLO into this folder")
    parser.add_argument("overrides", nargs="*", help="FIELD=VALUE config overrides, e.g. meta.hidden_size=256")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.overrides)
    points = [(members, k) for members in args.members for k in args.inner_updates]
    configs = {point: point_config(*point, overrides) for point in points}  # Every point checked before compiling.
    first = configs[points[0]]
    distributed.start(first, meta_config.device_shares(first))  # As meta-train: XLA:CPU devices, threefry.
    print(f"jax {jax.__version__}, devices {jax.devices()}, XLA_FLAGS={os.environ.get('XLA_FLAGS', '')}", flush=True)
    for repeat in range(args.repeats):
        for members, k in points:
            hlo_path = args.hlo_dir and os.path.join(args.hlo_dir, f"meta_{members}_members_k{k}_{repeat}.hlo.txt")
            result = measure(configs[members, k], args.dispatches, hlo_path)
            print(f"members={members} K={k} repeat={repeat} " + " ".join(f"{n}={v}" for n, v in result.items()))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
