"""The memory a dataset of 1M transitions of 64 x 64 uint8 frames takes on one device, and sampling's speed.

Builds the rows in memory (1,000 episodes of 1,000 steps, random frames: the
contents do not change the cost), places them on the first device
(`podracer.offline.sampling.place`) and times 1,000 batches of 256
transitions. Prints the process's resident and peak memory (Linux's
/proc/self/status) after each stage. Usage:

    python -m scripts.offline_memory [--channels 1]
"""

import argparse
import time

import jax
import numpy as np
from dm_env import specs

from podracer.devices.topology import device_mesh
from podracer.offline import sampling
from podracer.offline.dataset import Dataset

EPISODES, STEPS, SIDE = 1_000, 1_000, 64


def memory() -> str:
    """The process's resident and peak memory, in GiB."""
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    resident, peak = (int(fields[name].split()[0]) / 2**20 for name in ("VmRSS", "VmHWM"))
    return f"process {resident:.1f} GiB, peak {peak:.1f} GiB"


def frames_dataset(channels: int) -> Dataset:
    rows = EPISODES * (STEPS + 1)
    frames = np.empty((rows, SIDE, SIDE, channels), np.uint8)
    for start in range(0, rows, 100_000):
        chunk = frames[start : start + 100_000]
        chunk[:] = np.random.default_rng(start).integers(0, 256, chunk.shape, np.uint8)
    starts = np.arange(EPISODES) * (STEPS + 1)
    transition_rows = (starts[:, None] + np.arange(STEPS)).reshape(-1).astype(np.int32)
    flags = np.zeros(rows, bool)
    observation_spec = specs.Array((SIDE, SIDE, channels), np.uint8)
    return Dataset(
        frames,
        np.zeros(rows, np.int32),
        np.zeros(rows, np.float32),
        flags,
        flags,
        transition_rows,
        observation_spec,
        specs.DiscreteArray(4),
        {},
        EPISODES,
        0.0,
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--channels", type=int, default=1, help="1 for grayscale frames, 3 for RGB")
    args = parser.parse_args(argv)
    dataset = frames_dataset(args.channels)
    print(f"{dataset.transitions:,} transitions, rows of {dataset.observation.nbytes / 2**30:.1f} GiB; {memory()}")
    start = time.perf_counter()
    rows = jax.block_until_ready(sampling.place(dataset, device_mesh(jax.devices()[:1])))
    print(f"placed on {jax.devices()[0]} in {time.perf_counter() - start:.1f} s; {memory()}")
    sample = jax.jit(lambda rows, key: sampling.sample(rows, key, 256, None))
    jax.block_until_ready(sample(rows, jax.random.key(0)))
    start = time.perf_counter()
    for index in range(1_000):
        batch = sample(rows, jax.random.key(index))
    jax.block_until_ready(batch)
    milliseconds = (time.perf_counter() - start) / 1_000 * 1e3
    print(f"a batch of 256 transitions: {milliseconds:.2f} ms (the mean of 1,000)")


if __name__ == "__main__":
    main()
