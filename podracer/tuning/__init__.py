"""Tuning: hyperparameter sweeps with Optuna, whose trials run as the members of Anakin programs.

`search_space` reads and checks what a sweep searches, `trial_runs` runs a
group of trials and follows their records, `sweep` is `podracer sweep`'s loop
over Optuna's ask and tell, and `sweep_results` writes its table, best config
and figure. Optuna is the `tune` extra, imported only here. Population-based
training, which changes hyperparameters inside one run, is Anakin's
(`podracer.anakin.exploit_explore`).
"""
