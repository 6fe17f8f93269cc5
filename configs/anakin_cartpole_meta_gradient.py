"""Anakin actor-critic on CartPole-v1 learning its discount and its lambda online by meta-gradients (Xu et al. 2018).

64 environments x 32 steps per update, rewards scaled (their running
statistics use the configured gamma, 0.99); gamma and lambda start at 0.99 and
0.9 and follow the meta-gradient of the validation objective (gamma' =
0.99, lambda' = 1) on each next trajectory (`podracer.agents.meta.meta_gradient_rl`).
The run records them as `gamma` and `td_lambda`. With
`--config.agent.meta_gradient.learning_rate=0` it is the plain agent, bitwise.
"""

from podracer import defaults


def get_config():
    config = defaults("actor_critic")
    config.env.name = "cartpole"
    config.num_envs = 64
    config.unroll_length = 32
    config.total_steps = 1_000_000
    config.optimizer.learning_rate = 3e-3
    config.agent.scale_rewards = True  # Rewards over the running std of the return (with the configured gamma).
    config.agent.meta_gradient.learn = ("gamma", "td_lambda")
    config.agent.meta_gradient.learning_rate = 1e-3
    return config
