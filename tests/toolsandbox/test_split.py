"""The development / held-out split: base scenarios stay whole, the side is a fixed function of the base name."""

from __future__ import annotations

from typing import Any

import pytest

from dynsteer_hook.toolsandbox.quality.split import SPLITS, VARIANT_SUFFIXES, base_scenario_name, in_split, split_of


@pytest.mark.parametrize("suffix", ["", *VARIANT_SUFFIXES])
def test_every_variant_falls_with_its_base(suffix: str) -> None:
    for base in ("cellular_off", "send_message_with_contact_content_cellular_off", "add_reminder_content_and_week_delta_and_time"):
        assert base_scenario_name(base + suffix) == base
        assert split_of(base + suffix) == split_of(base)


def test_the_side_is_fixed_by_the_hash_of_the_base_name() -> None:
    """Pinned values: a change of salt or rule re-deals the scenarios and must show here."""
    assert split_of("cellular_off") == "held-out"
    assert split_of("send_message_with_contact_content_cellular_off") == "held-out"
    assert split_of("send_message_with_contact_content_cellular_off_insufficient_information") == "dev"
    assert [split_of("cellular_off") for _ in range(3)] == ["held-out"] * 3


def test_about_thirty_percent_of_the_bases_are_held_out(scenarios: dict[str, Any]) -> None:
    from dynsteer_hook.toolsandbox.live.runner import load_scenarios

    names = list(load_scenarios(None, "DEFAULT"))
    bases = {base_scenario_name(n) for n in names}
    held = [b for b in bases if split_of(b) == "held-out"]
    assert 0.25 <= len(held) / len(bases) <= 0.35
    # all augmentations of a base on one side
    assert all(split_of(n) == split_of(base_scenario_name(n)) for n in names)
    assert sum(in_split(n, "dev") for n in names) + sum(in_split(n, "held-out") for n in names) == len(names)
    assert all(in_split(n, "all") for n in names)


def test_an_unknown_split_is_refused() -> None:
    assert SPLITS == ("dev", "held-out", "all")
    with pytest.raises(ValueError, match="not one of dev, held-out, all"):
        in_split("cellular_off", "test")
