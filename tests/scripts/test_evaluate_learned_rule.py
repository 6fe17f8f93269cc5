"""`scripts.evaluate_learned_rule`: fresh learners set up as the meta-trained agents, on held-out layouts, and the
random policy's return. Training and its table are the script's business (docs/meta-learning.md)."""

import argparse

import numpy as np
import pytest

import podracer
from scripts import evaluate_learned_rule as evaluate


def test_both_learners_are_the_meta_trained_agents_on_held_out_layouts():
    meta = podracer.load_config(evaluate.META_CONFIG, {"agent.prediction_size": 8})
    for name in evaluate.LEARNERS:
        config = evaluate.learner_config(
            name, "lpg_tabular", {"variant": "dense"}, meta=meta, rule="runs/lpg/rule", steps=2048, layouts=8, seed=3
        )
        assert config.agent.name == name and (config.seed, config.total_steps) == (3, 2048)
        assert (config.env.name, dict(config.env.kwargs)) == (
            "lpg_tabular",
            {"variant": "dense", "held_out_layouts": 8},
        )
        assert (config.num_envs, config.unroll_length) == (meta.meta.envs_per_member, meta.unroll_length)
        assert config.network.to_dict() == meta.network.to_dict()
        assert config.optimizer.to_dict() == meta.optimizer.to_dict()
        assert config.num_devices == 1
        if name == "learned_rule":
            assert config.agent.rule_checkpoint == "runs/lpg/rule"
            assert config.agent.prediction_size == 8  # The rule's, as the meta-trained agents had it.


@pytest.mark.slow  # Compiles a rollout: about 5 s.
def test_a_random_policy_on_held_out_chains_wins_and_loses_alike():
    """A delayed chain without noise pays +1 or -1 once an episode: a random first action wins half the time."""
    args = argparse.Namespace(steps=4096, layouts=8)
    mean = evaluate.random_return("lpg_delayed_chain", {"variant": "short"}, args, seed=0, num_envs=4)
    assert np.isclose(mean * 50, round(mean * 50))  # (wins - losses) / 100 over the last 100 episodes.
    assert abs(mean) <= 0.3, mean
