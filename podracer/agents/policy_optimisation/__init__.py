"""Policy optimisation by expectation-maximisation: MPO (off-policy, from replay) and V-MPO (on-policy).

Both agents improve the policy in two steps: an E-step that reweights
actions by exp(value / eta), the temperature eta learned by minimising its
dual so that the reweighted policy stays within epsilon (KL) of the old one,
and an M-step that fits the policy to those weights by weighted maximum
likelihood under a KL trust region whose Lagrange multipliers alpha are
learned too. `em_losses` holds the losses both share, `mpo` and `vmpo` the
agents.
"""
