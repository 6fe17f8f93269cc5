"""Training the agents of a multi-agent environment: one agent lifted to several, teams, IPPO and MAPPO.

`per_agent` lifts any single-agent `Agent` to the several agents of an
environment (shared or separate parameters), `teams` trains two teams of a
game, each its own agent, and `ippo` registers IPPO and MAPPO on top of PPO.
"""
