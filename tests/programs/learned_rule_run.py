"""Trains a few updates under each architecture with the rule saved at argv[1] (prediction size argv[2]): Anakin on
Catch and Sebulba on envpool's CartPole-v1, and prints each run's update count and last learner metrics as JSON.

python -m tests.programs.learned_rule_run RULE_FOLDER 4
"""

import json
import sys

if __name__ == "__main__":
    import podracer
    from tests.helpers import load_config

    rule = {
        "agent.rule_checkpoint": sys.argv[1],
        "agent.prediction_size": int(sys.argv[2]),
        "network.hidden_sizes": (16,),
    }
    runs = {
        "anakin": load_config("anakin_catch_learned_rule", rule, num_envs=32, total_steps=32 * 16 * 4),
        "sebulba": load_config("sebulba_cartpole_learned_rule", rule, envs_per_thread=4, total_steps=2 * 4 * 20 * 3),
    }
    summary = {}
    for name, config in runs.items():
        history = podracer.train(config).history
        last = history[-1]
        summary[name] = {"step": last["step"], **{k: last[k] for k in ("loss", "policy_loss", "prediction_loss")}}
    print(json.dumps(summary))
