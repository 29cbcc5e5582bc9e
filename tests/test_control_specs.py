"""The options dataclass is plain and the app describes its own controls (issue 60): ``GenerationConfig`` carries
no widget metadata, every field has the app's ``Control``, and no slider offers a value the setting refuses."""

from __future__ import annotations

import dataclasses

from omnivoice_demo.settings.generation import GenerationConfig, Setting
from omnivoice_demo.ui.control_specs import CONTROLS, slider_range


def test_the_settings_carry_no_widget_metadata():
    assert {field.name for field in dataclasses.fields(Setting)} == {"help", "low", "high", "reference_name", "flags"}


def test_every_setting_has_a_control_of_the_app():
    assert set(GenerationConfig.names()) - set(CONTROLS) == set(), "a setting without its label and place in the app"


def test_no_slider_offers_a_value_the_setting_refuses():
    for name in GenerationConfig.names():
        if GenerationConfig.kind(name) is bool:
            continue
        setting = GenerationConfig.setting(name)
        low, high, step = slider_range(name)
        assert setting.low <= low < high <= setting.high, name
        assert 0 < step <= high - low, name
        GenerationConfig().replace(**{name: GenerationConfig.kind(name)(low)}).validate()
        GenerationConfig().replace(**{name: GenerationConfig.kind(name)(high)}).validate()
