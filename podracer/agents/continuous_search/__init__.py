"""Search over continuous actions: Sampled MuZero (Hubert et al. 2021), which searches over K actions sampled at
every node.

`sampled_model` is MuZero's learned model with a Gaussian policy head and a
real-valued action input; `sampled_search` samples each node's actions, sets
their priors and acts by mctx's search over them; `sampled_muzero` is the agent,
which learns on MuZero's replay, targets and unrolled loss
(`podracer.agents.algorithms.muzero`) with the sample-based policy loss.
"""
