"""Distributional value agents: C51, QR-DQN and IQN on DQN's replay, with Munchausen's bonus and dueling streams.

Their network heads (`distribution_heads`), their targets and losses
(`distribution_losses`) and the agents (`distributional_dqn`).
"""
