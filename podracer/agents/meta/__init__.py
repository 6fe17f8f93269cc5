"""Meta-learning inside the agents: meta-gradients through the update, and the learned update rule (LPG).

`meta_gradient` differentiates an outer loss through inner updates and
`meta_gradient_rl` adapts an agent's own meta-parameters online with it (Xu et
al. 2018); `lpg_rule` is the Learned Policy Gradient rule (Oh et al. 2020) and
`rule_checkpoint` saves and loads a meta-trained rule (the agent that learns by
it is `podracer.agents.algorithms.learned_rule`). Meta-training the rule runs in
`podracer.anakin.meta_program`.
"""
