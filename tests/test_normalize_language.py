"""Numbers read in the text's own language: German, French, Spanish and Russian texts with no language given,
and a text mixing English and German, through the engine, the app's handler, the OpenAI route, batch and the
CLI (Wyoming's: tests/test_wyoming.py).  No front end reads such a text with English number words; each says
what it did; the model's input (its language and text) is the one the reference gets."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from omnivoice_demo.text import normalize
from omnivoice_demo.settings.generation import GenerationConfig
from omnivoice_demo.text.normalize_choice import choose_normalization
from omnivoice_demo.text.text_language import detect_language
from tests.support.studios import folder_studio

#: language -> a text with numbers in it, no language given anywhere
FOREIGN = {
    "de": "Ich habe 21 Äpfel und 1.000 Euro am 3.10.2024 bezahlt.",
    "fr": "Il est 10h30, il fait 21 °C dans la cuisine.",
    "es": "Tengo 21 manzanas y pagué 1.000 euros el 3 de mayo.",
    "ru": "У меня 21 яблоко, и я заплатил 1000 рублей.",
}
MIXED = "The meeting is at 3 pm today. Das Treffen ist heute um 15 Uhr im großen Saal."
ENGLISH = "It costs $4.99 today, and 21 people came."
#: English number words that must never appear in those texts
ENGLISH_WORDS = ("one", "two", "three", "ten", "twenty", "thousand", "fifteen", "dollars", "degrees")


def english_words_in(text: str) -> list[str]:
    words = text.lower().replace(",", " ").replace(".", " ").split()
    return [w for w in words if w in ENGLISH_WORDS]


@pytest.mark.parametrize("code", FOREIGN)
def test_the_language_of_a_text_is_detected(code):
    assert detect_language(FOREIGN[code]).language == code
    assert detect_language(ENGLISH).language == "en"
    assert detect_language("今天是2025年12月1日").language == "zh"
    mixed = detect_language(MIXED)
    assert mixed.mixed and set(mixed.languages) == {"en", "de"}


@pytest.mark.parametrize("code", FOREIGN)
def test_by_default_other_languages_are_read_as_written_and_the_model_input_is_unchanged(engine, code):
    text = FOREIGN[code]
    plan = engine.prepare(text, normalize_text="auto", seed=1)
    assert plan.text == text and plan.normalization.language is None and plan.normalization.detected == code
    assert "read as written" in plan.normalization.reason and plan.settings["normalized"] == "off"
    # the model gets no language (none was given) and the same text as with normalisation off, as the reference
    exact = engine.prepare(text, normalize_text=False, seed=1)
    assert plan.language is None and (plan.text, plan.target_frames) == (exact.text, exact.target_frames)


@pytest.mark.parametrize("code", FOREIGN)
def test_asked_for_by_name_other_languages_read_bare_integers_in_their_own_language(engine, code):
    text = FOREIGN[code]
    plan = engine.prepare(text, normalize_text=True, seed=1)
    assert plan.normalization.language == code and plan.settings["normalized"] == code
    assert plan.language is None   # detected for the numbers only; the model is given no language
    assert plan.text == normalize.normalize_text(text, code) and not english_words_in(plan.text)
    assert "bare integers" in plan.normalization.reason


def test_english_and_chinese_are_read_as_words_by_default(engine):
    plan = engine.prepare(ENGLISH, normalize_text="auto", seed=1)
    assert plan.normalization.language == "en" and "four" in plan.text and "$" not in plan.text
    assert plan.language is None and plan.text == normalize.normalize_text(ENGLISH, "en")
    chosen = engine.prepare("共有12个人", language="zh", normalize_text="auto", seed=1)
    assert chosen.normalization.language == "zh" and "12" not in chosen.text and chosen.language == "zh"


def test_a_chosen_language_decides_over_the_detected_one(engine):
    plan = engine.prepare(FOREIGN["de"], language="German", normalize_text="auto", seed=1)
    assert plan.normalization.language is None and plan.language == "de"
    assert "German (chosen)" in plan.normalization.reason and plan.normalization.detected is None


def test_a_mixed_english_german_text_is_never_read_with_english_words_by_default(engine):
    plan = engine.prepare(MIXED, normalize_text="auto", seed=1)
    assert plan.text == MIXED and plan.normalization.language is None and "mixes" in plan.normalization.reason
    assert plan.language is None


def test_the_decision_names_the_limit_and_the_missing_library():
    from omnivoice_demo.settings.limits import Limits

    limits = Limits(max_normalize_chars=10)
    over = choose_normalization(ENGLISH, None, "auto", limits)
    assert over.language is None and over.notice and "max_normalize_chars" in over.reason
    missing = choose_normalization(ENGLISH, None, "auto", missing=lambda code: ["WeTextProcessing"])
    assert missing.language is None and missing.notice and "WeTextProcessing" in missing.reason
    # other languages need only num2words: WeTextProcessing missing does not stop them
    assert normalize.missing_for("de") == [] or normalize.missing_for("de") == ["num2words"]
    assert choose_normalization("x", None, False).header == "off"


def test_the_setting_takes_auto_and_names_its_values():
    assert GenerationConfig.from_mapping({"normalize_text": "auto"}).validate().normalize_text == "auto"
    assert GenerationConfig.from_mapping({"normalize_text": "on"}).normalize_text is True
    with pytest.raises(Exception, match="true, false or 'auto'"):
        GenerationConfig(normalize_text="sometimes").validate()


# --- the front ends --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def studio(tiny_fp32_folder, tmp_path_factory):
    return folder_studio(tiny_fp32_folder, tmp_path_factory.mktemp("studio"))


@pytest.mark.parametrize("code", FOREIGN)
def test_app_preview_says_what_it_does_per_language(studio, code):
    from omnivoice_demo.ui import generation
    from omnivoice_demo.ui.speed_controls import APP_DEFAULTS

    values = {"normalize_text": APP_DEFAULTS["normalize_text"], "language": "Auto"}
    info = generation.text_info(studio, FOREIGN[code], values)
    assert "What will be read" not in info and "Numbers: numbers are read as written in" in info
    on = generation.text_info(studio, FOREIGN[code], dict(values, normalize_text="on"))
    assert "bare integers" in on and not english_words_in(on.split("What will be read:")[-1].split("Numbers:")[0])


def test_app_speak_handler_reads_german_numbers_as_written(studio, monkeypatch):
    from omnivoice_demo.ui import generation

    plans = []
    engine = studio.models.get().engine
    original = engine.run
    monkeypatch.setattr(engine, "run", lambda plan: plans.append(plan) or original(plan))
    values = {"normalize_text": "auto", "num_step": 2, "seed": 1, "randomize": False}
    for _update in generation.run_generation(studio, MIXED + " " + FOREIGN["de"], values, None, [], "speak"):
        pass
    (plan,) = plans
    assert plan.normalization.language is None and not english_words_in(plan.text)


@pytest.fixture(scope="module")
def api(engine, tmp_path_factory):
    from omnivoice_demo.studio import VoiceLibrary
    from tests.support.api_client import router_client

    return router_client(engine, VoiceLibrary(tmp_path_factory.mktemp("voices")))


def _speech(api, **body):
    response = api.post("/v1/audio/speech", json={"voice": "alloy", "stream": False, "response_format": "wav",
                                                  "steps": 2, "seed": 1, **body})
    assert response.status_code == 200, response.text
    return response.headers["X-OmniVoice-Normalized"]


@pytest.mark.parametrize("code", FOREIGN)
def test_openai_route_header_says_what_was_done(api, code):
    assert _speech(api, input=FOREIGN[code]) == "off"
    assert _speech(api, input=FOREIGN[code], normalize_text=True) == code


def test_openai_route_english_on_mixed_off(api):
    assert _speech(api, input=ENGLISH) == "en"
    assert _speech(api, input=MIXED) == "off"
    assert _speech(api, input=ENGLISH, normalize_text=False) == "off"


def test_batch_sidecar_says_what_was_done(tiny_fp32_folder, tmp_path):
    from omnivoice_demo.batch.items import read_items
    from omnivoice_demo.batch.local import InlineBackend
    from omnivoice_demo.batch.plan import BatchPlan
    from omnivoice_demo.batch.runner import run_batch
    from omnivoice_demo.batch.worker import Job, ModelSpec

    source = tmp_path / "items.jsonl"
    rows = [{"id": "de", "text": FOREIGN["de"], "normalize_text": True},
            {"id": "mixed", "text": MIXED, "normalize_text": "auto"},
            {"id": "en", "text": ENGLISH, "normalize_text": "auto"}]
    source.write_text("".join(json.dumps(dict(row, seed=1)) + "\n" for row in rows))
    items = read_items(source, base=GenerationConfig(num_step=2))
    summary = run_batch(BatchPlan(items=tuple(items), job=Job(output=str(tmp_path / "out"))),
                        backend=lambda: InlineBackend(ModelSpec(model=str(tiny_fp32_folder))), progress=False).summary
    assert summary.done == 3
    sidecars = {row["id"]: json.loads((tmp_path / "out" / f"{row['id']}.json").read_text()) for row in rows}
    assert [sidecars[i]["settings"]["normalized"] for i in ("de", "mixed", "en")] == ["de", "off", "en"]
    assert "bare integers read as words in German (detected)" in sidecars["de"]["settings"]["normalized_note"]


def test_cli_summary_says_what_was_done(tiny_fp32_folder, tmp_path):
    def synth(*flags):
        done = subprocess.run([sys.executable, "-m", "omnivoice_demo", "synth", "--model", str(tiny_fp32_folder),
                               "--text", FOREIGN["de"], "--steps", "2", "--seed", "1", "--output",
                               str(tmp_path / "out.wav"), *flags], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "numbers: de (bare integers read as words in German (detected)" in synth("--normalize-text")
    assert "numbers: off (normalize_text is off" in synth()
