"""How many environments feed each learner device's `learn`: the batch a device-resident replay buffer is sized for.

An agent that keeps a replay buffer (`podracer.agents.replay`) gives it one
row per environment whose steps reach its device, a number its builder reads
here from the config: Anakin's environments per device, or the environments
of a Sebulba process's actor threads over its learner devices. Sebulba's
learner may split those environments over several sequential `learn` calls
per update (`learner_minibatches`), each seeing a slice of them.
"""

from ml_collections import ConfigDict


def environments_per_learner_device(config: ConfigDict) -> int:
    """The environments whose steps reach each device per update, for the architecture `config` names.

    Each `learn` call receives `1 / learn_calls_per_update(config)` of them.
    """
    if config.architecture == "anakin":
        from podracer.anakin import settings

        return config.num_envs // len(settings.devices(config))
    from podracer.sebulba import settings

    return settings.environments_per_learner(config, *settings.device_ids(config))


def learn_calls_per_update(config: ConfigDict) -> int:
    """How many sequential `learn` calls share each update's environments: Sebulba's `learner_minibatches`, or 1."""
    return config.learner_minibatches if config.architecture == "sebulba" else 1
