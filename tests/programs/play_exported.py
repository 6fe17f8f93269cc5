"""Plays exported policies with JAX alone, as a user without podracer would: `python -S play_exported.py FOLDER`.

Run as a script by its path, with `-S` (no site hooks, so the editable
install's import hook is not installed) from a scratch folder, so that
`podracer` cannot be imported at all; the script checks that first. For each
`NAME.json` description in FOLDER it loads `NAME.inputs.npz` (observations
`[T, B, ...]` under `observation` or `observation/KEY/...`, and `first`
`[T, B]`), follows the description's calling convention step by step (the
keys of step t are `jax.random.key_data(jax.random.split(jax.random.key(t), B))`)
and writes the actions `[T, B, ...]` to `NAME.actions.npy` (a recurrent policy's last state as well, its leaves in
`NAME.state.npz`). It prints the
modules it saw loaded, as proof: `podracer` must not be among them.
"""

import importlib.util
import json
import os
import sys

import numpy as np

assert importlib.util.find_spec("podracer") is None, "podracer is importable here"
import jax  # noqa: E402 -- after the check that podracer cannot be imported.


def observations_at(inputs: dict, t: int) -> object:
    """The observations of step t, rebuilt as the array or nested dict the names `observation/KEY/...` describe."""
    if "observation" in inputs:
        return inputs["observation"][t]
    tree: dict = {}
    for name, value in inputs.items():
        if name.startswith("observation/"):
            *folders, leaf = name.split("/")[1:]
            node = tree
            for folder in folders:
                node = node.setdefault(folder, {})
            node[leaf] = value[t]
    return tree


def play(folder: str, name: str) -> tuple[np.ndarray, tuple]:
    """The actions the artefact `name` (described by `name.json`) chooses for its inputs, step by step, and its last
    state (`()` for a feed-forward policy)."""
    with open(os.path.join(folder, name + ".json")) as f:
        description = json.load(f)
    files = description["files"]

    def load(file: str) -> jax.export.Exported:
        with open(os.path.join(folder, file), "rb") as f:
            return jax.export.deserialize(bytearray(f.read()))

    policy = load(files["policy"])
    inputs = dict(np.load(os.path.join(folder, name + ".inputs.npz")))
    first = inputs["first"]
    steps, batch = first.shape
    state = load(files["initial_state"]).call(observations_at(inputs, 0)) if description["recurrent"] else ()
    actions = []
    for t in range(steps):
        args = [observations_at(inputs, t)]
        if description["recurrent"]:
            args += [first[t], state]
        if not description["greedy"]:
            args.append(jax.random.key_data(jax.random.split(jax.random.key(t), batch)))
        result = policy.call(*args)
        action, state = result if description["recurrent"] else (result, ())
        actions.append(np.asarray(action))
    return np.stack(actions), state


def main(folder: str) -> None:
    for file in sorted(os.listdir(folder)):
        if file.endswith(".json"):
            name = file[: -len(".json")]
            actions, state = play(folder, name)
            np.save(os.path.join(folder, name + ".actions.npy"), actions)
            np.savez(os.path.join(folder, name + ".state.npz"), *state)
    print(json.dumps({"podracer_loaded": any(module.split(".")[0] == "podracer" for module in sys.modules)}))


if __name__ == "__main__":
    main(sys.argv[1])
