"""Issue 58's smaller items (point 6): each behaviour tested, each doc held to the code it describes.

* ``omnivoice eval`` offline names ``--asr-model none`` and says a missing recogniser in eval's words (no reference
  to type the transcript of); the recogniser's error can be worded for any use (the Book tab's, ...);
* docs/http-api.md says what ``--api-key`` alone does as the code does (it guards the page too);
* the store extra's install hint works where the program runs (a checkout: ``pip install -e '.[store]'``);
  docs/deploy.md's lines that create the database and its user work on a real PostgreSQL;
* the README says what numbers read as words need where it offers them;
* a download's name is the text's first words (at most 40 characters), not 80 characters of stamps;
  a name taken is said once.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def flat(text: str) -> str:
    return " ".join(text.split())


# --- the recogniser's message, by where it is used ---------------------------------------------------------------

def test_eval_offline_names_asr_model_none_first_in_its_own_words(tmp_path, monkeypatch, capsys):
    from omnivoice_demo.cli.main import main

    for name, value in {"OMNIVOICE_DATA": tmp_path / "data", "OMNIVOICE_CACHE": tmp_path / "cache",
                        "HF_HOME": tmp_path / "hf", "HF_HUB_OFFLINE": "1", "OMNIVOICE_ASR_MODEL": ""}.items():
        monkeypatch.setenv(name, str(value))
    assert main(["eval", "--model", str(tmp_path / "no-model"), "--output", str(tmp_path / "out"), "--offline",
                 "--candidate", "preset=fast"]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("error: WER/CER") and "this program is offline" in line
    assert line.index("--asr-model none") < line.index("download"), line   # the quick way first
    assert "reference" not in line and "--asr-model DIR" in line and "for the app and serve" not in line


def test_the_recognisers_error_is_worded_per_use_and_keeps_its_default():
    from omnivoice_demo.asr.source import RecognizerMissing, resolve_recognizer
    from omnivoice_demo.errors import ModelNotAvailable, one_line

    with pytest.raises(RecognizerMissing) as caught:
        resolve_recognizer("nobody/no-recogniser", "int8", offline=True, cache=ROOT / "no-such-cache")
    default = one_line(caught.value)
    assert isinstance(caught.value, ModelNotAvailable)
    assert "type the transcript of the reference" in default and "--asr-model DIR for synth and eval" in default
    book = one_line(caught.value.worded(needs="The sentence check (on for books) needs a speech recogniser",
                                        instead="untick 'Check each sentence'", folder="$OMNIVOICE_ASR_MODEL=DIR"))
    assert book.startswith("The sentence check (on for books) needs a speech recogniser. No speech recogniser is "
                           "cached and this program is offline: untick 'Check each sentence', or run once online")
    assert "reference" not in book and book.endswith("built with 'python -m convert.whisper' ($OMNIVOICE_ASR_MODEL=DIR).")


# --- docs/http-api.md: what --api-key alone does --------------------------------------------------------------

def test_the_http_api_doc_says_a_key_alone_guards_the_page_as_the_code_does():
    from omnivoice_demo.api.server import gradio_auth

    assert gradio_auth(argparse.Namespace(api_key="k", api_key_scope=None)) is not None   # the page: guarded
    assert gradio_auth(argparse.Namespace(api_key="k", api_key_scope="v1")) is None
    doc = flat((ROOT / "docs" / "http-api.md").read_text(encoding="utf-8"))
    assert "That alone leaves the page" not in doc
    assert "by default (`--api-key-scope all`), guards the page and the Gradio API too" in doc
    assert "`--api-key-scope v1` is the opt-in that guards `/v1` alone" in doc


# --- the store extra and the database ---------------------------------------------------------------------------

def test_the_store_extras_hint_works_in_a_checkout_and_names_the_package_elsewhere(tmp_path):
    from omnivoice_demo import extras

    assert extras.running_from_checkout()   # the tests run in the checkout
    hint = extras.extra_install_hint("store")
    assert "install -e '.[store]'" in hint and "omnivoice-onnx-studio" not in hint
    assert extras.extra_install_hint("store", root=ROOT, prefix=str(ROOT / ".venv")).startswith(
        ".venv/bin/pip install -e '.[store]'")
    installed = tmp_path / "site-packages"   # an installed package: no checkout above it
    installed.mkdir()
    assert extras.extra_install_hint("store", root=installed) == "pip install 'omnivoice-onnx-studio[store]'"


def test_a_database_store_without_psycopg_says_the_hint_that_works_here(monkeypatch, tmp_path):
    from omnivoice_demo.errors import StoreUnavailable
    from omnivoice_demo.extras import extra_install_hint
    from omnivoice_demo.studio.voice_db import PostgresVoiceStore

    monkeypatch.setitem(sys.modules, "psycopg", None)   # as on an install without the store extra
    with pytest.raises(StoreUnavailable) as caught:
        PostgresVoiceStore("postgresql://tts@127.0.0.1:1/voices", root=tmp_path)
    assert extra_install_hint("store") in str(caught.value) and "-e '.[store]'" in str(caught.value)


def test_the_deploy_docs_lines_create_a_database_the_store_can_use(pg_server, tmp_path):
    """The SQL of docs/deploy.md, run as the administrator, then the store on the new user's address."""
    import psycopg

    from omnivoice_demo.studio.voice_db import PostgresVoiceStore
    from tests.test_vocabulary import a_voice

    doc = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    statements = re.findall(r"`(CREATE (?:ROLE|DATABASE) [^`]+;)`", doc)
    assert [s.split()[1] for s in statements] == ["ROLE", "DATABASE"], statements
    assert "createuser --pwprompt tts" in doc and "createdb --owner tts voices" in doc
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        for statement in statements:
            admin.execute(statement.replace("voices", "deploy_doc_voices").replace("tts", "deploy_doc_tts"))
    url = f"postgresql://deploy_doc_tts:secret@127.0.0.1:{pg_server.port}/deploy_doc_voices"
    store = PostgresVoiceStore(url, root=tmp_path)
    try:
        store.save(a_voice(), "Anna")   # the program makes its tables as the new user, who owns the database
        assert store.names() == ["Anna"]
    finally:
        store.close()


# --- the README: what numbers read as words need ---------------------------------------------------------------

def test_the_readme_says_what_numbers_read_as_words_need_where_it_offers_them():
    from omnivoice_demo.text import normalize

    readme = flat((ROOT / "README.md").read_text(encoding="utf-8"))
    row = next(line for line in readme.split("| [docs/") if "read as words" in line)
    checkout_command = re.search(r"\.venv/bin/pip install [^)]+", normalize.INSTALL_HINT).group()
    assert "num2words" in row and "WeTextProcessing" in row and "740 MB" in row
    assert checkout_command in row, (checkout_command, row)
    pinned = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").lower()
              .splitlines()]
    assert any(line.startswith("num2words==") for line in pinned)   # what the set-up installs
    assert not any(line.startswith("wetextprocessing") for line in pinned)   # and what it does not


# --- download names, a name taken -----------------------------------------------------------------------------

def test_a_downloads_name_is_the_texts_first_words(tmp_path):
    from omnivoice_demo.storage.outputs import OutputFolder, text_stem

    long = "Numbers like 1,234 and dates such as 2026-12-06 are read as words by the normaliser."
    assert text_stem("Hello there!", "omnivoice-speak") == "hello-there"
    assert text_stem(long, "x") == "numbers-like-1-234-and-dates-such-as"   # cut at a word's end
    assert text_stem("!!!", "omnivoice-speak") == "omnivoice-speak"
    assert text_stem("a" * 100, "x") == "a" * 40
    path = OutputFolder(tmp_path).path(text_stem(long, "x"), ".wav")
    assert len(path.name) <= 40 + len("-") + 24 + len(".wav") and path.name.startswith("numbers-like")


def test_the_speak_tabs_files_are_named_by_the_text(tiny_fp32_folder, tmp_path):
    """The Speak tab's handler, run on the tiny model: the audio and every download are named by the text's first
    words (then the output folder's token), not by a date, a tab, a seed and a random part."""
    from omnivoice_demo.ui import generation
    from tests.support.studios import folder_studio

    studio = folder_studio(tiny_fp32_folder, tmp_path / "studio")
    values = {"num_step": 2, "seed": 1, "randomize": False}
    *_, last = generation.run_generation(studio, "Hello there, friend!", values, None, [], "speak")
    named = [pathlib.Path(last["audio"])] + [pathlib.Path(str(path)) for path in last["files"]]
    assert named and all(re.fullmatch(r"hello-there-friend-[0-9a-f]{24}(\.\w+)+", path.name) for path in named), named


def test_a_name_taken_is_said_once():
    from omnivoice_demo.errors import InvalidInput
    from omnivoice_demo.text.voice_names import check_free

    with pytest.raises(InvalidInput) as caught:
        check_free("Anna", ["Anna", "Ben"])
    assert str(caught.value) == "A voice named 'Anna' exists already; choose another name."
    with pytest.raises(InvalidInput) as caught:
        check_free("ANNA", ["Anna"])
    assert str(caught.value) == "A voice named 'Anna' exists already; choose another name."
