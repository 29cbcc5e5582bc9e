"""Saved voices' names compare one way everywhere (NFKC, case-folded; Cyrillic and Greek look-alikes of Latin
letters read as those letters): a taken name is refused naming the voice it collides with, a rename never
overwrites another voice, and a change of case alone renames the same voice.  Through the library, the HTTP
API (in process), the Clone tab's panel (local and shared mode) and the command line."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
import soundfile as sf
from fastapi import FastAPI
from fastapi.testclient import TestClient

from omnivoice_demo.api.routes import ApiContext, build_router
from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.studio import EngineService, ModelManager, Studio, VoiceLibrary
from omnivoice_demo.studio.sharing import BrowserVoices
from omnivoice_demo.text.voice_names import clean_name, name_key
from omnivoice_demo.ui.tabs import saved_voices
from tests.support.signals import speech_like
from tests.test_vocabulary import a_voice

CYRILLIC_A = "\u0410nna"          # 'Аnna': a Cyrillic capital A
FULL_WIDTH = "\uff21\uff4e\uff4e\uff41"  # 'Ａｎｎａ'


def test_names_are_compared_as_nfkc_case_folded():
    assert name_key("Anna") == name_key("ANNA") == name_key(FULL_WIDTH) == "anna"
    assert clean_name(FULL_WIDTH) == "Anna" and clean_name("Zoe\u0308") == "Zo\u00eb"  # folded and composed
    assert name_key("Stra\u00dfe") == name_key("STRASSE")
    assert name_key(CYRILLIC_A) != name_key("Anna")  # a look-alike is another name, refused by check_free


def both_cases(folder) -> VoiceLibrary:
    """A folder holding Anna.npz and anna.npz (as an older version could leave it), each its own voice."""
    a_voice(transcript="The first Anna.").save(folder / "Anna.npz")
    a_voice(transcript="The second anna.").save(folder / "anna.npz")
    return VoiceLibrary(folder)


def transcripts(folder) -> list[str]:
    library = VoiceLibrary(folder)
    return sorted(library.load(name).transcript for name in library.names())


@pytest.mark.parametrize("asked, taken", [("anna", "Anna"), ("ANNA", "Anna"), (FULL_WIDTH, "Anna"),
                                          (CYRILLIC_A, "Anna"), ("Zoe\u0308", "Zo\u00eb")])
def test_a_taken_or_look_alike_name_is_refused_naming_the_voice(tmp_path, asked, taken):
    library = VoiceLibrary(tmp_path)
    library.save(a_voice(transcript="Kept."), taken)
    with pytest.raises(InvalidInput, match=repr(taken)) as caught:
        library.save(a_voice(transcript="Other."), asked)
    assert caught.value.param == "name"
    library.save(a_voice(transcript="Other."), "Other")
    with pytest.raises(InvalidInput, match=repr(taken)):
        library.rename("Other", asked)  # renaming onto it: refused the same way
    assert library.names() == sorted([taken, "Other"], key=str.casefold)
    assert library.load(taken).transcript == "Kept." and library.load("Other").transcript == "Other."


def test_renaming_onto_a_name_that_differs_only_in_case_keeps_both_voices(tmp_path):
    library = both_cases(tmp_path)
    with pytest.raises(InvalidInput, match="'anna' exists already"):
        library.rename("Anna", "anna")
    assert transcripts(tmp_path) == ["The first Anna.", "The second anna."]


def test_a_change_of_case_alone_renames_the_same_voice(tmp_path):
    library = VoiceLibrary(tmp_path)
    library.save(a_voice(transcript="Bert speaking."), "Bert")
    assert library.rename("Bert", "bert") == "bert"
    assert library.names() == ["bert"] and library.load("BERT").transcript == "Bert speaking."
    assert library.load("bert").name == "bert"


def test_look_up_is_by_the_same_key(tmp_path):
    library = VoiceLibrary(tmp_path)
    library.save(a_voice(transcript="Hi."), "Zo\u00eb")
    assert library.load("ZOE\u0308").transcript == "Hi."  # decomposed and in capitals: the same voice
    library.delete("\uff3a\uff4f\u00eb")  # full-width Z and o
    assert library.names() == []


def test_the_browser_store_compares_names_the_same_way():
    store = BrowserVoices(max_frames=100)
    stored, name = store.save({}, a_voice(), "Anna")
    stored, second = store.save(stored, a_voice(), CYRILLIC_A)
    assert second == "\u0410nna 2"  # a look-alike of a taken name is numbered, like a taken one
    stored, _ = store.save(stored, a_voice(), "Bert")
    with pytest.raises(InvalidInput, match="'Anna'"):
        store.rename(stored, "Bert", "ANNA")
    renamed, new = store.rename(stored, "Anna", "anna")
    assert new == "anna" and sorted(renamed) == ["Bert", "anna", "\u0410nna 2"]
    assert store.load(renamed, "ANNA").name == "anna"


def test_the_panel_refuses_a_rename_onto_another_voice_and_keeps_both(tmp_path):
    local = Studio(models=ModelManager(), voices=both_cases(tmp_path / "voices"), out_dir=tmp_path / "out")
    result = saved_voices.kept_on_error(saved_voices.manage_voice, local, "rename", "Anna", "anna")
    assert result["message"].startswith("**Not done:**") and "exists already" in result["message"]
    assert transcripts(tmp_path / "voices") == ["The first Anna.", "The second anna."]
    done = saved_voices.manage_voice(local, "rename", "anna", "Zed")
    assert done["voices"] == ["Anna", "Zed"]
    case_only = saved_voices.manage_voice(local, "rename", "Zed", "zed")
    assert case_only["voices"] == ["Anna", "zed"]


def client_of(library: VoiceLibrary, models: ModelManager | None = None) -> TestClient:
    app = FastAPI()
    app.include_router(build_router(ApiContext(models=models or ModelManager(), voices=library,
                                               service=EngineService())))
    return TestClient(app)


def test_http_rename_onto_a_case_variant_is_refused_and_nothing_is_lost(tmp_path):
    client = client_of(both_cases(tmp_path))
    answer = client.patch("/v1/audio/voices/Anna", json={"name": "anna"})
    assert answer.status_code == 400 and "'anna' exists already" in answer.json()["error"]["message"]
    assert transcripts(tmp_path) == ["The first Anna.", "The second anna."]
    look_alike = client.patch("/v1/audio/voices/anna", json={"name": "\u0410NNA"})
    assert look_alike.status_code == 400 and "'Anna' looks the same" in look_alike.json()["error"]["message"]
    assert transcripts(tmp_path) == ["The first Anna.", "The second anna."]


def test_http_case_only_rename_and_look_up_by_key(tmp_path):
    library = VoiceLibrary(tmp_path)
    library.save(a_voice(), "Bert")
    client = client_of(library)
    answer = client.patch("/v1/audio/voices/BERT", json={"name": "bert"})
    assert answer.status_code == 200 and answer.json()["id"] == "bert" and library.names() == ["bert"]
    assert client.delete("/v1/audio/voices/B\uff25RT").status_code == 200 and library.names() == []


@pytest.fixture(scope="module")
def models(tiny_fp32_folder, tmp_path_factory):
    manager = ModelManager(cache_dir=tmp_path_factory.mktemp("cache"), offline=True)
    manager.load(str(tiny_fp32_folder), "fp32")
    return manager


def wav() -> bytes:
    buffer = io.BytesIO()
    sf.write(buffer, speech_like(3.0, 24000, seed=1).T, 24000, format="WAV")
    return buffer.getvalue()


@pytest.mark.parametrize("asked", ["anna", FULL_WIDTH, CYRILLIC_A])
def test_http_create_refuses_a_taken_or_look_alike_name(tmp_path, models, asked):
    library = VoiceLibrary(tmp_path)
    library.save(a_voice(transcript="Kept."), "Anna")
    client = client_of(library, models)
    answer = client.post("/v1/audio/voices", data={"name": asked, "transcript": "Hello there.", "consent": "true"},
                         files={"file": ("clip.wav", wav(), "audio/wav")})
    assert answer.status_code == 400, answer.text
    assert "'Anna'" in answer.json()["error"]["message"] and answer.json()["error"]["param"] == "name"
    assert library.names() == ["Anna"] and library.load("Anna").transcript == "Kept."


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "omnivoice_demo", *args], capture_output=True, text=True, timeout=300)


def test_cli_rename_onto_a_case_variant_is_refused_and_import_of_a_taken_name_too(tmp_path):
    folder = tmp_path / "voices"
    folder.mkdir()
    both_cases(folder)
    done = run_cli("voices", "--folder", str(folder), "rename", "Anna", "anna")
    assert done.returncode == 2 and "'anna' exists already" in done.stderr, done.stderr
    a_voice(transcript="A third.").save(tmp_path / "third.npz")
    imported = run_cli("voices", "--folder", str(folder), "import", str(tmp_path / "third.npz"), "--name", "ANNA")
    assert imported.returncode == 2 and "exists already" in imported.stderr, imported.stderr
    assert transcripts(folder) == ["The first Anna.", "The second anna."]
    renamed = run_cli("voices", "--folder", str(folder), "rename", "anna", "Hanna")
    case_only = run_cli("voices", "--folder", str(folder), "rename", "Hanna", "HANNA")
    assert renamed.returncode == 0 and case_only.returncode == 0, case_only.stderr
    assert sorted(p.name for p in folder.glob("*.npz")) == ["Anna.npz", "HANNA.npz"]
