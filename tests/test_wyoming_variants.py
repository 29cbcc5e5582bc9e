"""Style variants over the Wyoming server (the ``wyoming`` library's own client, the tiny model): a voice with a
variant, exported and imported into the served folder, is listed with its variant as a voice of its own
(``Test Voice (cheerful)``); synthesizing with that name, or with the voice and ``instructions`` naming the
tag, is the variant's audio, not the main clip's; an unknown style is an ``error`` event."""

from __future__ import annotations

import pytest
from wyoming.error import Error
from wyoming.info import Describe, Info

from omnivoice_demo.studio import EngineService, ModelManager, VoiceLibrary
from omnivoice_demo.studio.variants import add_variant
from omnivoice_demo.wyoming.server import WyomingServer, make_context
from tests.support.app_server import free_port
from tests.support.signals import speech_like
from tests.test_wyoming import audio_of, synthesize, talk

SAVED, SEED, TEXT = "Test Voice", 99, "Hello from a style."


@pytest.fixture(scope="module")
def server(tiny_fp32_folder, tmp_path_factory):
    root = tmp_path_factory.mktemp("wyoming-variants")
    models = ModelManager(cache_dir=root / "cache", offline=True)
    loaded = models.load(str(tiny_fp32_folder), "fp32")
    with loaded.lock:
        voice = loaded.engine.clone_voice(speech_like(3.0, 24000, seed=5), 24000, "This is the reference clip.")
        happy = loaded.engine.clone_voice(speech_like(2.0, 24000, seed=11), 24000, "Such a happy day.")
    made = VoiceLibrary(root / "made")
    made.save(add_variant(voice, "cheerful", happy, 8), SAVED)
    served = VoiceLibrary(root / "served")
    served.import_file(made.export(SAVED, root / "exported")[0])   # what is served came through export and import
    port = free_port()
    running = WyomingServer(f"tcp://127.0.0.1:{port}",
                            make_context(models, served, EngineService(max_running=1, max_waiting=4))).start_in_thread()
    running.port = port
    yield running
    running.stop_thread()


def test_each_variant_is_listed_as_a_voice_of_its_own(server):
    (program,) = Info.from_event(talk(server.port, [Describe()], until=("info",))[-1][1]).tts
    names = [voice.name for voice in program.voices]
    assert names[:2] == [SAVED, f"{SAVED} (cheerful)"]
    assert "cheerful" in program.voices[1].description


def test_the_variant_speaks_by_its_name_and_by_an_instructions_word(server):
    main = audio_of(talk(server.port, [synthesize(TEXT, SAVED, seed=SEED)]))
    by_name = audio_of(talk(server.port, [synthesize(TEXT, f"{SAVED} (cheerful)", seed=SEED)]))
    by_word = audio_of(talk(server.port, [synthesize(TEXT, SAVED, seed=SEED, instructions="cheerful")]))
    assert by_name and by_word == by_name != main
    unmatched = audio_of(talk(server.port, [synthesize(TEXT, SAVED, seed=SEED, instructions="angry")]))
    assert unmatched == main


def test_an_unknown_style_is_an_error_event(server):
    error = Error.from_event(talk(server.port, [synthesize(TEXT, f"{SAVED} (sad)")])[-1][1])
    assert error.code == "invalid_value" and "has no style 'sad'" in error.text and "cheerful" in error.text


def test_a_saved_voice_named_like_a_built_in_one_is_not_offered_and_the_design_is():
    """A database row another client wrote may carry a design's name (``alloy``) or ``auto``: that name speaks the
    built-in voice (built-in names resolve first), so describe offers the design under it, never the row."""
    from omnivoice_demo.studio.vocabulary import DESIGNS
    from omnivoice_demo.wyoming.info import voice_descriptions

    described = dict(voice_descriptions(["Anna", "Alloy", "auto", "warm, low pitch"], {"Anna": ["cheerful"],
                                                                                        "Alloy": ["calm"]}))
    assert described["Anna"] == "saved voice (cloned)" and "Anna (cheerful)" in described
    assert described["alloy"] == f"voice design: {DESIGNS['alloy']}"
    assert not {"Alloy", "Alloy (calm)", "auto", "warm, low pitch"} & set(described), described
