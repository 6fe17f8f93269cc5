#!/usr/bin/env bash
# The GPU rows of docs/benchmarks.md, taken in one go on a one-GPU machine: Anakin Catch and CartPole PPO at
# growing batches, Craftax-Classic PPO-RNN at its paper's batch, and Sebulba Pong IMPALA with the machine's cores
# stepping envpool. Each line printed is a run's own summary ("done: N steps ... S steps/s"), after its settings.
#
#   scripts/gpu_rows.sh [python]     # run from the repository root, with podracer importable by that python
#
# Needs podracer's dependencies and the craftax extra; the Pong row needs envpool with its asset packages
# (envpool 1.2.5 reads MyoSuite metadata from envpool-assets-mujoco-large when it builds any task).
# Every run is short (a few seconds to a minute of training after its compilation) and bounded by `timeout`, so
# one failing row does not take the others with it.
set -u
PYTHON=${1:-python3}
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=3

train() {  # train LABEL SECONDS ARGS...: one run, its summary line or its last error line.
    local label=$1 seconds=$2
    shift 2
    echo "== $label"
    timeout "$seconds" "$PYTHON" -c 'import sys; from podracer.cli import main; sys.exit(main())' train \
        --workdir "/tmp/gpu_rows/$label" "$@" 2>&1 | tr '\r' '\n' | grep -E "^done:|Error|error:" | tail -2
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
nproc
"$PYTHON" -c 'import jax; print("jax", jax.__version__, jax.devices())'

# Anakin Catch (a 16-step unroll per update), one GPU: steps/s against the batch.
for envs in 4096 32768 131072; do
    train "catch_${envs}" 120 --config configs/anakin_catch.py --config.num_envs=$envs \
        --config.total_steps=$((envs * 16 * 60)) --config.updates_per_dispatch=20
done
# Anakin CartPole PPO (CleanRL's update: 128 steps, 4 epochs of 4 minibatches), one GPU.
for envs in 2048 16384; do
    train "cartpole_ppo_${envs}" 150 --config configs/anakin_cartpole_ppo.py --config.num_envs=$envs \
        --config.total_steps=$((envs * 128 * 30)) --config.updates_per_dispatch=10
done
# Craftax-Classic-Symbolic PPO-RNN at the Craftax paper's batch (1,024 environments x 64 steps).
train craftax_classic_1024 200 --config configs/anakin_craftax_classic_ppo_rnn.py \
    --config.total_steps=$((1024 * 64 * 100)) --config.updates_per_dispatch=25
# Sebulba Pong IMPALA with the ResNet: the GPU acts and learns, the CPU cores step envpool's Atari.
train pong_impala_4x64 150 --config configs/sebulba_pong_impala.py \
    --config.actor_threads_per_device=4 --config.envs_per_thread=64 --config.total_steps=600000
