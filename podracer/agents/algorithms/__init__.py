"""The agents, one module per algorithm, each registering itself by name (`podracer.agents.registry`).

Actor-critic, PPO, IMPALA, DQN (with R2D2's recurrent replay), PQN, MuZero and
AlphaZero (with their tree `search`), SAC and TD3 (what they share in
`off_policy`), and `learned_rule`, which learns by a meta-learned LPG rule; `network_agent` completes an `Agent` around the built-in
actor-critic agents' own `learn`, and `shared_fields` reads the replay and
search fields several of them share. They are built of the networks in
`podracer.agents.models` and the learning pieces in `podracer.agents.learning`.
"""
