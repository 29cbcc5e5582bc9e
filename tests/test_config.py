"""GenerationConfig: the reference's defaults, ranges that name the setting at fault, the CLI made from it."""

from __future__ import annotations

import argparse
import dataclasses
import inspect

import pytest

from omnivoice_demo.settings.generation import GenerationConfig, add_config_arguments, config_from_arguments
from omnivoice_demo.settings.limits import Limits
from omnivoice_demo.errors import InvalidInput, ResourceLimitExceeded


def test_defaults_are_the_reference_generation_config():
    """Every field the reference's OmniVoiceGenerationConfig has, with its default (by the reference's name)."""
    from omnivoice.models.omnivoice import OmniVoiceGenerationConfig

    reference = OmniVoiceGenerationConfig()
    ours = GenerationConfig()
    for field in dataclasses.fields(reference):
        name = next((n for n in GenerationConfig.names()
                     if n == field.name or GenerationConfig.setting(n).reference_name == field.name), None)
        assert name is not None, f"the reference's setting {field.name} is missing"
        assert getattr(ours, name) == getattr(reference, field.name), name


def test_generate_keyword_settings_are_covered():
    from omnivoice.models.omnivoice import OmniVoice

    generate = OmniVoice.generate
    for name in ("duration", "speed"):
        assert name in inspect.signature(generate).parameters and name in GenerationConfig.names()


@pytest.mark.parametrize("name,value,message", [
    ("num_step", 0, "num_step must be between 1 and 256"),
    ("num_step", 2.5, "num_step must be a whole number"),
    ("speed", 10, "speed must be between 0.5 and 2"),
    ("guidance_scale", "high", "guidance_scale must be a number"),
    ("t_shift", float("nan"), "t_shift must be a number, got NaN"),
    ("denoise", 1, "denoise must be true or false"),
    ("seed", 2**63, "seed must be between 0 and 9223372036854775807"),
    ("seed", -1, "seed must be between"),
    ("duration", 0, "duration must be between 0.1 and 600"),
    ("chunk_duration", -1, "chunk_duration must be between"),
])
def test_validate_names_the_setting(name, value, message):
    with pytest.raises(InvalidInput, match=message) as info:
        GenerationConfig(**{name: value}).validate()
    assert info.value.param == name


def test_seeds_are_kept_exactly():
    assert GenerationConfig(seed=2**63 - 1).validate().seed == 2**63 - 1
    assert GenerationConfig(seed=2**53 + 1).validate().seed == 2**53 + 1


def test_replace_and_from_mapping():
    config = GenerationConfig().replace(num_step=16)
    assert config.num_step == 16 and GenerationConfig().num_step == 32
    with pytest.raises(InvalidInput, match="Unknown generation setting 'num_steps'.*num_step"):
        GenerationConfig().replace(num_steps=16)
    mapped = GenerationConfig.from_mapping({"num_step": "8", "denoise": "false", "seed": "", "speed": None})
    assert (mapped.num_step, mapped.denoise, mapped.seed, mapped.speed) == (8, False, None, 1.0)
    with pytest.raises(InvalidInput, match="guidance_scale must be a number"):
        GenerationConfig.from_mapping({"guidance_scale": "lots"})


def test_every_setting_has_its_range_and_help():
    for name in GenerationConfig.names():
        setting = GenerationConfig.setting(name)
        assert setting.help, name   # its label is the app's (ui/control_specs.py, tests/test_control_specs.py)
        if GenerationConfig.kind(name) is not bool:
            assert setting.low is not None and setting.low <= setting.high, name
            default = GenerationConfig.default(name)
            assert default is None or setting.low <= default <= setting.high, name


def test_cli_has_a_flag_for_every_setting():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    assert config_from_arguments(parser.parse_args([])) == GenerationConfig()
    args = parser.parse_args(["--num-step", "8", "--no-denoise", "--t-shift", "0.2", "--seed", "5",
                              "--no-postprocess", "--chunk-duration", "10", "--duration", "3"])
    config = config_from_arguments(args)
    assert (config.num_step, config.denoise, config.t_shift, config.seed, config.postprocess,
            config.chunk_duration, config.duration) == (8, False, 0.2, 5, False, 10.0, 3.0)
    assert config_from_arguments(parser.parse_args(["--steps", "4"])).num_step == 4  # the old spelling
    flags = {a.dest for a in parser._actions}
    assert set(GenerationConfig.names()) <= flags


def test_limits_name_the_limit():
    limits = Limits(max_text_chars=10)
    limits.check("The text", 10, "max_text_chars")
    with pytest.raises(ResourceLimitExceeded, match="11 characters.*limit is 10 characters \\(max_text_chars\\)"):
        limits.check("The text", 11, "max_text_chars", " characters")
    local = Limits.local()
    assert all(getattr(local, f.name) >= getattr(Limits(), f.name) for f in dataclasses.fields(Limits))


def test_engine_takes_a_config_with_overrides(tiny_fp32_folder):
    from omnivoice_demo import OmniVoiceEngine

    engine = OmniVoiceEngine(tiny_fp32_folder, verify="size", limits=Limits(max_text_chars=40, max_steps=32))
    plan = engine.prepare("Hello there.", config=GenerationConfig(num_step=8, denoise=False), seed=3)
    assert (plan.config.num_step, plan.config.denoise, plan.config.seed) == (8, False, 3)
    assert plan.settings["num_step"] == 8 and plan.settings["language"] is None
    assert engine.prepare("Hello there.").config.seed is not None  # a seed is drawn and reported
    with pytest.raises(InvalidInput, match="Unknown generation setting 'steps'"):
        engine.prepare("Hello there.", steps=8)
    with pytest.raises(ResourceLimitExceeded, match="max_text_chars"):
        engine.prepare("a" * 41)
    with pytest.raises(ResourceLimitExceeded, match="max_steps"):
        engine.prepare("Hello there.", num_step=33)
    result = engine.generate("Hello there.", config=GenerationConfig(num_step=2, seed=4))
    assert result.config.seed == 4 and result.config.num_step == 2 and result.seed == 4
