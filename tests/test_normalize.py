"""normalize_text: the reference's function on a table of strings, and the engine token-exact against
``omnivoice.generate(normalize_text=True)`` on the tiny checkpoint (English, Chinese, German by num2words)."""

from __future__ import annotations

import argparse
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from omnivoice.utils.text import normalize_text as reference_normalize

from omnivoice_demo.text import normalize
from omnivoice_demo.settings.generation import GenerationConfig, add_config_arguments, config_from_arguments
from omnivoice_demo.errors import InvalidInput
from tests.test_engine import GREEDY, assert_same_model_output, run_engine, run_reference
from tests.support.studios import folder_studio

#: (text, language) pairs: numbers, dates, currency, units, fractions; protected spans of every kind
TABLE = [
    ("It costs $4.99 on 2025-12-01 at 21 °C.", "en"),
    ("Dr. Ng ran 3/4 of 10 km in 42 minutes, 2nd of 300 runners.", "en"),
    ("Call 555-0199 at 7:30 pm; it's 15% off, £20.", "English"),
    ("the [B EY1 S] guitar costs 5 dollars [laughter] in 2024", "en"),
    ("  leading and trailing spaces 12  ", "en"),
    ("[laughter]", "en"),
    ("no numbers at all", "en"),
    ("今天是2025年12月1日，价格199元，温度21°C。", "zh"),
    ("我喜欢重NI3的音乐，[laughter] 有 3 个 [B EY1 S]。", "zh"),
    ("共有12个人", None),          # no language: Chinese by its characters
    ("There are 12 people", None),  # no language: English
    ("Ich habe 42 Äpfel und 1999 Birnen [laughter] gekauft.", "de"),
    ("Ich habe 42 Äpfel.", "German"),
    ("Tengo 21 años y 3 [B EY1 S] hermanos.", "es"),
    ("Il a 80 ans.", "fr"),
    ("有 5 个 in Cantonese", "yue"),   # num2words does not know the language: digits stay
    ("", "en"),
    ("   ", "en"),
]


@pytest.mark.parametrize("text, language", TABLE)
def test_normalize_equals_the_reference_function(text, language):
    assert normalize.normalize_text(text, language) == reference_normalize(text, language)


def test_protected_spans_survive_and_numbers_become_words():
    out = normalize.normalize_text("the [B EY1 S] guitar costs 5 dollars [laughter]", "en")
    assert "[B EY1 S]" in out and "[laughter]" in out and "five" in out and "5" not in out.replace("EY1", "")
    assert "NI3" in normalize.normalize_text("重NI3的歌有3首", "zh")


def test_missing_libraries_are_named_with_the_install_line(monkeypatch, engine):
    monkeypatch.setattr(normalize, "missing_modules", lambda: ["WeTextProcessing", "pynini"])
    normalize.read_as_words.cache_clear()
    normalize._normalizer.cache_clear()
    try:
        with pytest.raises(InvalidInput, match=r"WeTextProcessing, pynini.*\[normalize\].*turn normalize_text off"):
            normalize.normalize_text("It costs $5.", "en")
        with pytest.raises(InvalidInput) as caught:
            engine.prepare("It costs $5.", normalize_text=True)
        assert caught.value.param == "normalize_text"
        assert engine.prepare("It costs $5.").text == "It costs $5."   # off (the default) needs nothing
        assert "read as written" in normalize.unavailable_note() and "[normalize]" in normalize.unavailable_note()
    finally:
        monkeypatch.undo()
        normalize.read_as_words.cache_clear()
        normalize._normalizer.cache_clear()
    assert normalize.unavailable_note() is None


def test_switch_is_one_setting_off_by_default_with_a_cli_flag():
    assert GenerationConfig().normalize_text is False
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    assert config_from_arguments(parser.parse_args(["--normalize-text"])).normalize_text is True
    assert config_from_arguments(parser.parse_args(["--no-normalize-text"])).normalize_text is False
    assert GenerationConfig.from_mapping({"normalize_text": "true"}).normalize_text is True


def test_plan_reads_the_normalised_text(engine):
    raw = "It costs $4.99 on 2025-12-01."
    plan = engine.prepare(raw, normalize_text=True, seed=1)
    assert plan.text == reference_normalize(raw, None) and "$" not in plan.text
    assert plan.target_frames != engine.prepare(raw, seed=1).target_frames   # the length follows the spoken form


PARITY = {
    "English": dict(text="It costs $4.99 on 2025-12-01 at 21 °C, 3/4 of 10 km.", language="en"),
    "Chinese": dict(text="今天是2025年12月1日，价格199元，温度21°C。", language="zh"),
    "German (num2words)": dict(text="Ich habe 42 Äpfel und 1999 Birnen gekauft.", language="German"),
}


@pytest.mark.parametrize("case", [case if case == "English" else pytest.param(case, marks=pytest.mark.slow)
                                  for case in PARITY])
def test_token_exact_with_normalize_text(engine, reference_model, monkeypatch, case):
    kwargs = dict(PARITY[case])
    text = kwargs.pop("text")
    ref = run_reference(reference_model, text=text, normalize_text=True, **kwargs, **GREEDY)
    ours = run_engine(engine, monkeypatch, text, normalize_text=True, **kwargs, **GREEDY)
    assert_same_model_output(ours, ref)


# --- the front ends where people type: "auto", by the text's language ---------------------------------

def test_openai_route_defaults_to_auto_and_takes_an_explicit_off(monkeypatch, engine):
    from omnivoice_demo.api import speech

    assert speech.parse({"input": "It costs $5."}).settings["normalize_text"] == "auto"
    assert speech.parse({"input": "x", "normalize_text": False}).settings["normalize_text"] is False
    monkeypatch.setattr(normalize, "missing_modules", lambda: ["WeTextProcessing"])
    plan = speech.plan_for(engine, speech.parse({"input": "It costs $5 every single day."}), None, None)
    # not failed, not silent: read as written, and the plan says why (with the install line)
    assert plan.text == "It costs $5 every single day." and plan.normalization.notice
    assert "read as written" in plan.normalization.reason and "[normalize]" in plan.normalization.reason


def test_app_shows_what_will_be_read(studio):
    from omnivoice_demo.ui import generation
    from omnivoice_demo.ui.speed_controls import APP_DEFAULTS

    assert APP_DEFAULTS["normalize_text"] == "auto"
    info = generation.text_info(studio, "It costs $5 [laughter] every day.", {"normalize_text": "auto"})
    assert "What will be read: It costs five dollars \\[laughter\\]" in info
    assert "Numbers: numbers, dates, money and units read as words in English (detected)" in info
    off = generation.text_info(studio, "It costs $5.", {"normalize_text": "off"})
    assert "What will be read" not in off and "Numbers: normalize_text is off" in off


@pytest.fixture(scope="module")
def studio(tiny_fp32_folder, tmp_path_factory):
    return folder_studio(tiny_fp32_folder, tmp_path_factory.mktemp("studio"))


def test_normalisation_is_bounded_by_the_servers_limit(engine, monkeypatch):
    """The normaliser's time grows with the text: asked for by name over ``max_normalize_chars`` it is refused
    naming the limit before any normalising; where it is only the front end's default ("auto") it is left off
    with a notice the front ends show (not a silent switch)."""
    import dataclasses

    from omnivoice_demo.text import normalize
    from omnivoice_demo.errors import ResourceLimitExceeded

    calls = []
    monkeypatch.setattr(normalize, "_apply", lambda text, fn, pinyin, failed: calls.append(text) or text)
    limits = dataclasses.replace(engine.limits, max_normalize_chars=20)
    monkeypatch.setattr(engine, "limits", limits)
    text = "It costs 4 dollars and more, every single day."
    with pytest.raises(ResourceLimitExceeded, match="max_normalize_chars") as caught:
        engine.prepare(text, language="en", config=GenerationConfig(normalize_text=True))
    assert caught.value.param == "max_normalize_chars" and calls == []
    over = engine.prepare(text, language="en", normalize_text="auto").normalization
    assert over.language is None and over.notice and "max_normalize_chars" in over.reason and calls == []
    within = engine.prepare("It costs 4 dollars.", language="en", normalize_text="auto").normalization
    assert within.language == "en" and not within.notice and calls == ["It costs 4 dollars."]
    from omnivoice_demo.api import speech

    plan = speech.plan_for(engine, speech.parse({"input": text, "language": "en"}), None, None)
    assert plan.normalization.notice and speech.description_headers(plan, _no_description())[
        "X-OmniVoice-Normalized"] == "off"
    with pytest.raises(ResourceLimitExceeded, match="max_normalize_chars"):
        speech.plan_for(engine, speech.parse({"input": text, "normalize_text": True}), None, None)


def _no_description():
    from omnivoice_demo.text.descriptions import read_description

    return read_description(None)