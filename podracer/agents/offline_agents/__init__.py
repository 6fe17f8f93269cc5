"""Agents that learn from a dataset (`config.offline.dataset`, `podracer.offline`), each registered with `offline=True`.

Behaviour cloning (`bc`, discrete and continuous actions), TD3+BC (`td3_bc`),
IQL (`iql`) and discrete CQL (`cql`). Their `learn` takes a batch of
transitions the program sampled from the dataset, as two-timestep
trajectories (`podracer.offline.sampling`), and takes one gradient step on
it, gradients averaged over the devices. Built of the online agents' pieces:
TD3+BC is TD3's critics and targets (`podracer.agents.algorithms.off_policy`)
with another actor loss.
"""
