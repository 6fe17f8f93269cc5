"""Search over continuous actions (Hubert et al. 2021): Sampled MuZero and Sampled AlphaZero, which search over K
actions sampled at every node.

`sampled_model` is MuZero's learned model with a Gaussian policy head and a
real-valued action input, and Sampled AlphaZero's policy-value network;
`sampled_search` samples each node's actions, sets their priors and acts by
mctx's search over them; `sampled_muzero` is the agent that searches its
learned model, learning on MuZero's replay, targets and unrolled loss
(`podracer.agents.algorithms.muzero`) with the sample-based policy loss;
`sampled_alphazero` the agent that searches the environment's own rules,
learning on the same replay and targets without a model to unroll.
"""
