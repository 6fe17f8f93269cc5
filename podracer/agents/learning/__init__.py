"""The pieces agents learn and explore with: returns, losses, the optimiser step, minibatches, exploration, replay.

`returns` (λ-returns, n-step returns, GAE and V-trace), `losses` (the
actor-critic objective), `optimizer` (optax chains and the learner state),
`minibatches` (epochs of shuffled minibatches, PPO's and PQN's),
`exploration` (epsilon-greedy acting, DQN's and PQN's), `replay`
(flashbax buffers on the device, filled from and sampled as trajectories) and
`recurrent_replay` (R2D2's stored state and burn-in).
"""
