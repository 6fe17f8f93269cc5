"""Agents that learn from a dataset (`config.offline.dataset`, `podracer.offline`), each registered with `offline=True`.

Behaviour cloning (`bc`, discrete and continuous actions), TD3+BC (`td3_bc`),
ReBRAC (`rebrac`), IQL (`iql`) and CQL (`cql`, discrete and continuous). Their `learn` takes a batch of
transitions the program sampled from the dataset, as two-timestep
trajectories (`podracer.offline.sampling`), and takes one gradient step on
it, gradients averaged over the devices. Built of the online agents' pieces:
TD3+BC and ReBRAC are TD3's critics and targets (`podracer.agents.algorithms.off_policy`)
with other losses, continuous CQL is SAC's with a penalty on the critics.
"""
