"""How many environments feed each learner device's `learn`: the batch a device-resident replay buffer is sized for.

An agent that keeps a replay buffer (`podracer.agents.replay`) gives it one
row per environment whose steps reach its device, a number its builder reads
here from the config: Anakin's environments per device, or the environments
of a Sebulba process's actor threads over its learner devices.
"""

from ml_collections import ConfigDict


def environments_per_learner_device(config: ConfigDict) -> int:
    """The batch axis of the trajectories each device's `learn` receives, for the architecture `config` names."""
    if config.architecture == "anakin":
        from podracer.anakin import settings

        return config.num_envs // len(settings.devices(config))
    from podracer.sebulba import settings

    return settings.environments_per_learner(config, *settings.device_ids(config)) // config.learner_minibatches
