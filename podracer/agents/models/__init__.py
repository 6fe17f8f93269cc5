"""Networks and the distributions they output: torsos, recurrent cores, heads, and what they are assembled of.

`networks` builds the actor-critic and Q networks from `config.network`
(`torsos`, `cores` and their `fused_cells`, `network_parts`, `layers`), `continuous_networks` the actor
and twin critics of SAC and TD3, `muzero_model` MuZero's learned model (with
`support`, its categorical values); `policy` is the policy heads'
distributions and `normalization` the running statistics a network's inputs
and rewards are normalised with.
"""
