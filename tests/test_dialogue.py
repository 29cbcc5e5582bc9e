"""Dialogue scripts: lines read as turns, names as voices, the turns joined as the reference joins chunks, and
every front end (the HTTP API, the command line, batch) inheriting it from the studio core."""

from __future__ import annotations

import io
import json
import subprocess

import numpy as np
import pytest
import soundfile

from omnivoice_demo.audio.processing import cross_fade_chunks
from omnivoice_demo.constants import SAMPLE_RATE
from omnivoice_demo.text.script import Turn
from omnivoice_demo.errors import InvalidInput, ResourceLimitExceeded
from omnivoice_demo.text.script import parse_script, read_script, script_names
from omnivoice_demo.studio.vocabulary import DESIGNS, resolve_voice

SCRIPT = "Anna: The bass is loud.\n[Ben] Turn it down,\n  please.\n\nanna: No."


def designs_only(value):
    """A front end's ``resolve`` with no saved voices: named designs and designs written out."""
    return resolve_voice(value, [], lambda name: None)


def test_lines_become_turns_and_the_models_brackets_stay_text():
    assert parse_script(SCRIPT) == [("Anna", "The bass is loud.", 1), ("Ben", "Turn it down, please.", 2),
                                    ("anna", "No.", 5)]
    said = parse_script("Anna: Hi.\n[laughter] That is funny.\n[B EY1 S] is a fish.")
    assert said == [("Anna", "Hi. [laughter] That is funny. [B EY1 S] is a fish.", 1)]
    assert script_names(SCRIPT) == ["Anna", "Ben"]   # names compare as voice names do: anna is Anna


@pytest.mark.parametrize("script, words", [
    ("Just a sentence.\nAnna: Hi.", "line 1 names no speaker"),
    ("Anna: Hi.\nBen:\n", "Ben' on line 2 says nothing"),
    ("\n\n", "no turns"),
])
def test_a_script_without_a_speaker_or_a_word_is_refused_naming_the_line(script, words):
    with pytest.raises(InvalidInput, match=words):
        parse_script(script)


def test_names_are_voices_or_given_one_and_an_unknown_name_is_refused_with_it():
    turns = read_script(SCRIPT, designs_only, {"anna": "alloy", "BEN": "male, low pitch"})
    assert [(t.speaker, t.instruct) for t in turns] == [("Anna", DESIGNS["alloy"]), ("Ben", "male, low pitch"),
                                                        ("Anna", DESIGNS["alloy"])]
    assert read_script("echo: Hello.", designs_only)[0].instruct == DESIGNS["echo"]   # a name that is a voice
    with pytest.raises(InvalidInput) as caught:
        read_script("Anna: Hi.\nZelda: Hello.", designs_only, {"Anna": "alloy"})
    assert "'Zelda'" in str(caught.value) and "line 2" in str(caught.value) and caught.value.param == "speakers"
    with pytest.raises(InvalidInput, match="more than 16 speakers"):
        read_script("\n".join(f"S{i}: Hi." for i in range(17)), lambda value: (None, "female"))
    with pytest.raises(InvalidInput, match="speakers must be an object"):
        read_script(SCRIPT, designs_only, {"Anna": 3})


def test_the_turns_are_joined_as_the_reference_joins_chunks(engine):
    turns = read_script("Anna: The bass is loud.\nBen: Turn it down.", designs_only,
                        {"Anna": "alloy", "Ben": "echo"})
    plan = engine.prepare_turns(turns, seed=5, num_step=4, pronunciations={"bass": "[B EY1 S]"})
    events = list(engine.run(plan))
    result = events[-1]
    alone = [engine.generate(text, instruct=DESIGNS[name], seed=5, num_step=4, pronunciations={"bass": "[B EY1 S]"})
             for name, text in (("alloy", "The bass is loud."), ("echo", "Turn it down."))]
    joined = cross_fade_chunks([a.audio[np.newaxis] for a in alone], SAMPLE_RATE)[0]
    np.testing.assert_array_equal(result.audio, joined)   # each turn as if alone, then the reference's join
    assert [t["speaker"] for t in result.turns] == ["Anna", "Ben"]
    assert result.turns[0]["text"] == "The [B EY1 S] is loud."
    assert result.turns[0]["start"] == 0 and result.turns[0]["end"] == len(alone[0].audio) / SAMPLE_RATE
    assert result.turns[1]["end"] == len(result.audio) / SAMPLE_RATE
    steps = [e for e in events if e.kind == "step"]
    assert {e.num_chunks for e in steps} == {2} and sorted({e.chunk for e in steps}) == [0, 1]   # one progress
    assert engine.estimate(plan) is None or engine.estimate(plan).total > engine.estimate(plan.plans[0]).total


def test_the_whole_script_is_held_to_one_requests_limits_before_work(limited):
    engine = limited(max_text_chars=30)
    turns = [Turn("Anna", "A short line here."), Turn("Ben", "Another short line.")]
    with pytest.raises(ResourceLimitExceeded, match="text of all turns"):
        engine.prepare_turns(turns)
    engine = limited(max_chunks=1)
    with pytest.raises(ResourceLimitExceeded, match="number of turns"):
        engine.prepare_turns(turns)


# --- the HTTP API (the real router over the tiny engine in process) --------------------------------------

@pytest.fixture
def api(engine, tmp_path):
    from omnivoice_demo.studio import VoiceLibrary
    from tests.support.api_client import router_client

    return router_client(engine, VoiceLibrary(tmp_path / "voices"))


def test_a_two_speaker_script_through_the_http_api(api):
    body = {"input": "Anna: The bass is loud.\nBen: Turn it down.", "script": True,
            "speakers": {"Anna": "alloy", "Ben": "echo"}, "seed": 3, "steps": 4, "stream": False,
            "response_format": "wav", "pronunciations": {"bass": "[B EY1 S]"}, "normalize_text": False}
    response = api.post("/v1/audio/speech", json=body)
    assert response.status_code == 200, response.text
    audio, rate = soundfile.read(io.BytesIO(response.content), dtype="float32")
    turns = json.loads(response.headers["X-OmniVoice-Turns"])
    assert [t["speaker"] for t in turns] == ["Anna", "Ben"] and turns[0]["start"] == 0
    assert turns[0]["end"] < turns[1]["start"] and abs(turns[1]["end"] - len(audio) / rate) < 1e-3
    assert response.headers["X-OmniVoice-Chunks"] == "2"
    streamed = api.post("/v1/audio/speech", json=dict(body, stream=True, stream_format="audio"))
    assert streamed.status_code == 200 and len(streamed.content) > 44


@pytest.mark.parametrize("change, status, words", [
    ({"speakers": {"Anna": "alloy"}}, 400, "'Ben'"),
    ({"instructions": "a deep voice"}, 400, "instructions do not apply to a script"),
    ({"script": "yes"}, 400, "script must be true or false"),
    ({"script": False}, 400, "send \"script\": true"),
    ({"input": "No speaker here."}, 400, "line 1 names no speaker"),
])
def test_a_bad_script_request_is_a_4xx_naming_the_problem(api, change, status, words):
    body = dict({"input": "Anna: Hi.\nBen: Hello.", "script": True, "speakers": {"Anna": "alloy", "Ben": "echo"},
                 "stream": False, "steps": 2}, **change)
    response = api.post("/v1/audio/speech", json=body)
    assert response.status_code == status, response.text
    assert words in response.json()["error"]["message"]


# --- the command line: --script, --speaker and --lexicon -----------------------------------------------------

def test_cli_script_and_lexicon(tiny_fp32_folder, tmp_path):
    from tests.test_cli import run_cli

    script, words = tmp_path / "talk.txt", tmp_path / "words.tsv"
    script.write_text("Anna: The bass is loud.\n[Ben] Turn it down!\n", encoding="utf-8")
    words.write_text("bass\t[B EY1 S]\n")
    out = tmp_path / "talk.wav"
    done = run_cli("synth", "--model", str(tiny_fp32_folder), "--script", str(script), "--speaker", "Anna=alloy",
                   "--speaker", "Ben=male, low pitch", "--lexicon", str(words), "--steps", "2", "--seed", "4",
                   "--output", str(out))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if " s - " in line]
    assert len(lines) == 2 and "Anna: The [B EY1 S] is loud." in lines[0] and "Ben: Turn it down!" in lines[1]
    audio, rate = soundfile.read(out)
    assert rate == SAMPLE_RATE and len(audio) > 0.3 * rate   # two turns and the join's silence
    refused = tmp_path / "refused.wav"
    done = run_cli("synth", "--model", str(tiny_fp32_folder), "--script", str(script), "--speaker", "Anna=alloy",
                   "--output", str(refused))
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and last.startswith("error: --script: ") and "'Ben'" in last, done.stderr
    assert "Traceback" not in done.stderr and not refused.exists()
    done = run_cli("synth", "--model", str(tiny_fp32_folder), "--text", "Hi.", "--speaker", "Anna=alloy",
                   "--output", str(refused))
    assert done.returncode == 2 and "give --script too" in done.stderr and not refused.exists()


# --- batch: script rows with subtitles naming the speakers, and --lexicon ---------------------------------------

def test_batch_script_rows_and_lexicon(tiny_fp32_folder, tmp_path):
    from tests.test_batch import batch_command

    source, words = tmp_path / "items.jsonl", tmp_path / "words.json"
    words.write_text(json.dumps({"bass": "[B EY1 S]"}))
    source.write_text("\n".join(json.dumps(row) for row in [
        {"id": "talk", "text": "Anna: The bass is loud.\nBen: Turn it down.", "script": True,
         "speakers": {"Anna": "alloy", "Ben": "echo"}, "seed": 2},
        {"id": "plain", "text": "The bass is loud.", "seed": 2},
        {"id": "own", "text": "The bass is loud.", "seed": 2, "pronunciations": {"bass": "[B AE1 S]"}},
        {"id": "unknown", "text": "Anna: Hi.\nZelda: Hello.", "script": True, "speakers": {"Anna": "alloy"}},
    ]) + "\n")
    out = tmp_path / "out"
    done = subprocess.run(batch_command(tiny_fp32_folder, source, out, "--subtitles", "srt,vtt", "--lexicon",
                                        str(words)), capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr   # the unknown speaker's row fails alone
    assert "'Zelda'" in done.stdout and "Traceback" not in done.stdout + done.stderr
    srt, vtt = (out / "talk.srt").read_text(), (out / "talk.vtt").read_text()
    assert "Anna: The [B EY1 S] is loud." in srt and "Ben: Turn it down." in srt
    assert "<v Anna>The [B EY1 S] is loud." in vtt and "<v Ben>Turn it down." in vtt
    sidecar = json.loads((out / "talk.json").read_text())
    assert [c["speaker"] for c in sidecar["chunks"]] == ["Anna", "Ben"]
    plain, own = (json.loads((out / f"{name}.json").read_text()) for name in ("plain", "own"))
    assert plain["chunks"][0]["text"] == "The [B EY1 S] is loud."     # the batch's --lexicon
    assert own["chunks"][0]["text"] == "The [B AE1 S] is loud."       # the row's own entry over it
