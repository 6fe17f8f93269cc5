"""The `podracer` package's public names, which it imports only when first used."""

import podracer


def test_every_public_name_resolves():
    for name in podracer.__all__:
        assert getattr(podracer, name) is not None, name
    assert (
        podracer.load_config is podracer.experiment.schema.load_config
        and podracer.train is podracer.experiment.train.train
    )
    assert sorted(set(podracer.__all__) - {"__version__"}) == sorted(podracer._EXPORTS)
