"""Soak test: run Sebulba for a set time and watch resident memory and throughput for growth and stalls.

Starts `podracer train` on a Sebulba config in a child process (a workdir in a
temporary folder unless `--workdir` is given), samples the child's resident
memory (/proc/PID/status) and the steps logged to its metrics.jsonl every
`--sample-seconds`, then stops it with SIGTERM, as a preemption would, and
checks that it exits 143 with a checkpoint. It reports one line per sample, the
memory growth after the first sample (warm-up: compilation, buffers) as MiB
per minute from a least-squares fit, and any stall: a sample interval with no
new steps, or one under half the median rate. Exits 1 if it saw a stall or the
stop went wrong. Linux only. Usage:

    python -m scripts.soak_sebulba                          # 30 minutes of sebulba_cartpole_impala
    python -m scripts.soak_sebulba --minutes 10 --config configs/sebulba_cartpole_ppo.py
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def resident_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def logged_step(metrics_path: str) -> int:
    if not os.path.exists(metrics_path):
        return 0
    with open(metrics_path) as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    return json.loads(lines[-1])["step"] if lines else 0


def soak(config: str, minutes: float, sample_seconds: float, workdir: str, overrides: list[str]) -> int:
    os.makedirs(workdir, exist_ok=True)
    command = [sys.executable, "-m", "podracer.cli", "train", "--config", config, "--workdir", workdir, "--noprogress"]
    command += ["--config.total_steps=1_000_000_000_000", "--config.log_every_updates=5", *overrides]
    log_path = os.path.join(workdir, "soak.log")
    with open(log_path, "w") as log:
        child = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    metrics_path = os.path.join(workdir, "metrics.jsonl")
    print(f"soaking {config} for {minutes:g} min (pid {child.pid}, workdir {workdir})", flush=True)
    print(f"{'minute':>7} {'rss MiB':>9} {'steps':>14} {'steps/s':>10}", flush=True)
    samples = []  # (minutes since start, rss MiB, step, steps/s over the interval)
    start = time.monotonic()
    last_step, last_time = 0, start
    while time.monotonic() - start < 60 * minutes:
        time.sleep(sample_seconds)
        if child.poll() is not None:
            print(f"the run ended early with exit status {child.returncode}; see {log_path}")
            return 1
        now, step = time.monotonic(), logged_step(metrics_path)
        rate = (step - last_step) / (now - last_time)
        samples.append(((now - start) / 60, resident_mib(child.pid), step, rate))
        last_step, last_time = step, now
        print(f"{samples[-1][0]:>7.1f} {samples[-1][1]:>9.0f} {step:>14,} {rate:>10,.0f}", flush=True)
    child.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    code = child.wait(timeout=120)
    stop_seconds = time.monotonic() - sent
    return report(samples, code, stop_seconds, os.path.isdir(os.path.join(workdir, "checkpoints")))


def report(samples: list, exit_code: int, stop_seconds: float, checkpointed: bool) -> int:
    steady = samples[1:] or samples
    rates = [rate for *_, rate in steady]
    median = statistics.median(rates)
    stalls = [f"{m:.1f}" for m, _, _, rate in steady if rate == 0 or rate < median / 2]
    rss = [mib for _, mib, _, _ in steady]
    growth = np.polyfit([m for m, *_ in steady], rss, 1)[0] if len(steady) > 1 else 0.0
    print(
        f"memory: {rss[0]:.0f} -> {rss[-1]:.0f} MiB after warm-up, {growth:+.1f} MiB/min (least squares); "
        f"throughput: median {median:,.0f} steps/s, min {min(rates):,.0f}, max {max(rates):,.0f}; "
        f"stalls: {', '.join(stalls) if stalls else 'none'}; "
        f"SIGTERM: exit {exit_code} after {stop_seconds:.1f} s, checkpoint {'written' if checkpointed else 'MISSING'}"
    )
    return 0 if not stalls and exit_code == 128 + signal.SIGTERM and checkpointed else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/sebulba_cartpole_impala.py")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--sample-seconds", type=float, default=60.0)
    parser.add_argument("--workdir", help="where the run writes (default: a temporary folder, removed afterwards)")
    args, overrides = parser.parse_known_args(argv)  # More --config.FIELD=VALUE arguments go to the run.
    if unknown := [arg for arg in overrides if not arg.startswith("--config.")]:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.minutes * 60 < 2 * args.sample_seconds:
        parser.error("--minutes must cover at least two samples")
    if args.workdir:
        return soak(args.config, args.minutes, args.sample_seconds, args.workdir, overrides)
    with tempfile.TemporaryDirectory(prefix="podracer-soak-") as workdir:
        return soak(args.config, args.minutes, args.sample_seconds, workdir, overrides)


if __name__ == "__main__":
    sys.exit(main())
