"""omnivoice batch: checked input, atomic resumable outputs that survive SIGKILL, subtitles, Ray.

The resume test runs the batch command in a subprocess with two worker
processes, kills it with SIGKILL once some items are done, and runs the same
command again; the outputs are then checked against single ``generate``
calls with the same settings and seeds.  That 30-item run (about a minute on
2 cores) and what uses it are in the slow tier; the input checks, the chunk
times and subtitles stay fast.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import soundfile

from omnivoice_demo.batch.items import BatchInputError, read_batch, read_items
from omnivoice_demo.batch.store import TEMP_MARK
from omnivoice_demo.batch.subtitles import parse_timestamps
from omnivoice_demo.storage.digests import codes_sha256, file_sha256
from omnivoice_demo.settings.generation import GenerationConfig
from omnivoice_demo.constants import SAMPLE_RATE

WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split()
FRAME_SECONDS = 0.04


def batch_command(folder, items, output, *extra):
    return [sys.executable, "-m", "omnivoice_demo", "batch", "--model", str(folder), "--input", str(items),
            "--output", str(output), "--num-step", "2", "--no-progress", *extra]


def write_items(path, count=30):
    """``count`` rows: most with their own seed, some without (one derived from the id and text)."""
    rows = []
    for i in range(count):
        row = {"id": f"item-{i:02d}", "text": f"Line {i}, {WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]}."}
        if i % 5:
            row["seed"] = 1000 + i
        if i % 6 == 0:
            row["language"] = "en"
        if i % 7 == 3:
            row["voice"] = "narrator"  # narrator.npz next to the input
        rows.append(json.dumps(row))
    path.write_text("\n".join(rows) + "\n")
    return path


def sidecars(output):
    found = {}
    for path in output.glob("*.json"):
        if path.name.startswith(TEMP_MARK):
            continue
        data = json.loads(path.read_text())
        found[data["id"]] = data
    return found


# --- input checking (no model needed) ----------------------------------------------------------

def test_every_bad_row_is_listed_with_its_line(tmp_path):
    source = tmp_path / "items.jsonl"
    source.write_text("\n".join([
        '{"id": "ok", "text": "Fine."}',
        '{"id": "x", "text": ""}',
        'not json',
        '{"id": "y", "text": "Hi.", "num_step": 1000}',
        '{"id": "ok", "text": "Duplicate id."}',
        '{"id": "../escape", "text": "Bad id."}',
        '',
        '{"id": "z", "text": "Hi.", "colour": "red"}',
        '{"id": "v", "text": "Hi.", "voice": "nobody"}',
        '{"id": "w", "text": "Fine too.", "speed": "1.5", "seed": 3}',
    ]) + "\n")
    with pytest.raises(BatchInputError) as caught:
        read_items(source)
    lines = [line for line, _ in caught.value.problems]
    assert lines == [2, 3, 4, 5, 6, 8, 9]
    messages = dict(caught.value.problems)
    assert "text" in messages[2] and "JSON" in messages[3] and "num_step" in messages[4]
    assert "line 1" in messages[5] and "colour" in messages[8] and "nobody" in messages[9]
    source.write_text('{"id": "w", "text": "Fine too.", "speed": "1.5", "seed": 3}\nsecond line\n')
    source = source.rename(tmp_path / "items.txt")
    items = read_items(source, base=GenerationConfig(num_step=8))
    assert [i.id for i in items] == ["000001", "000002"]  # a .txt line is all text
    assert items[1].text == "second line" and items[1].config.num_step == 8


def test_jsonl_settings_override_the_batch_defaults(tmp_path):
    source = tmp_path / "items.jsonl"
    source.write_text('{"id": "a", "text": "One.", "speed": "1.5", "seed": 3}\n{"id": "b", "text": "Two."}\n')
    a, b = read_items(source, base=GenerationConfig(num_step=8, speed=0.8))
    assert (a.config.speed, a.config.seed, a.config.num_step) == (1.5, 3, 8)
    assert b.config.speed == 0.8 and b.config.seed not in (None, 3)
    assert read_items(source)[1].config.seed == b.config.seed  # the same every time: id and text decide it
    again = read_items(source, base=GenerationConfig(num_step=8, speed=0.8))[1]
    assert a.request_digest() != b.request_digest() == again.request_digest()


def test_an_item_the_engine_checks_refuse_fails_alone(tiny_fp32_folder, tmp_path):
    """Issue 21 item 7: a bad row fails alone (it used to refuse the whole batch before any work)."""
    source = tmp_path / "items.jsonl"
    source.write_text('{"id": "a", "text": "Fine."}\n{"id": "b", "text": "Bad language.", "language": "Klingonish"}\n')
    done = subprocess.run(batch_command(tiny_fp32_folder, source, tmp_path / "out"), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 3, done.stderr  # some items failed
    failed = [line for line in done.stdout.splitlines() if line.startswith("failed b:")]
    assert failed and "line 2" in failed[0] and "Klingonish" in failed[0], done.stdout
    assert "Traceback" not in done.stderr
    assert [p.name for p in (tmp_path / "out").glob("*.wav")] == ["a.wav"]


def test_a_rows_description_is_read_leniently_and_its_sidecar_lists_what_was_ignored(tiny_fp32_folder, tmp_path):
    source = tmp_path / "items.jsonl"
    source.write_text("\n".join(json.dumps(row) for row in [
        {"id": "a", "text": "One.", "instruct": "a deep, cheerful British man", "num_step": 1},
        {"id": "b", "text": "Two.", "instruct": "female, low pitch", "num_step": 1},
        {"id": "c", "text": "Three.", "instruct": "<b>male</b>", "num_step": 1},
    ]) + "\n")
    items, problems = read_batch(source)
    assert [i.instruct for i in items] == ["low pitch, british accent, male", "female, low pitch"]
    assert [i.ignored for i in items] == [("cheerful",), ()]
    assert problems[0][0] == 3 and "markup" in problems[0][1]
    done = subprocess.run(batch_command(tiny_fp32_folder, source, tmp_path / "out"), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 3, done.stderr   # row c failed alone
    found = sidecars(tmp_path / "out")
    assert found["a"]["status"] == "done" and found["a"]["instruct_ignored"] == ["cheerful"]
    assert found["a"]["instruct"] == "low pitch, british accent, male" and found["b"]["instruct_ignored"] == []


# --- resume after SIGKILL -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def killed_and_resumed(tiny_fp32_folder, tmp_path_factory):
    """30 items: a run with two workers SIGKILLed midway, then the same command again."""
    import psutil

    from omnivoice_demo.engine.loop import OmniVoiceEngine
    from tests.support.signals import speech_like

    root = tmp_path_factory.mktemp("batch")
    engine = OmniVoiceEngine(tiny_fp32_folder, verify="size")
    engine.clone_voice(speech_like(2.0, SAMPLE_RATE, seed=5), SAMPLE_RATE, transcript="The narrator's words.",
                       name="narrator").save(root / "narrator.npz")
    items, output = write_items(root / "items.jsonl"), root / "out"
    command = batch_command(tiny_fp32_folder, items, output, "--workers", "2", "--subtitles", "srt")
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and first.poll() is None:
        if sum(s.get("status") == "done" for s in sidecars(output).values()) >= 6:
            break
        time.sleep(0.05)
    assert first.poll() is None, "the batch ended before it could be killed: " + first.communicate()[1][-2000:]
    children = psutil.Process(first.pid).children(recursive=True)
    first.send_signal(signal.SIGKILL)
    first.wait()
    _, orphans_alive = psutil.wait_procs(children, timeout=30)  # the workers notice and exit
    before = sidecars(output)
    second = subprocess.run(command, capture_output=True, text=True, timeout=600)
    return dict(output=output, items=items, before=before, children=children, orphans_alive=orphans_alive,
                second=second)


@pytest.mark.slow  # with the 30-item run behind it, over 20 s
def test_a_killed_batch_resumes_without_redoing_work(killed_and_resumed):
    run = killed_and_resumed
    output, before, second = run["output"], run["before"], run["second"]
    assert len(run["children"]) >= 2 and not run["orphans_alive"]
    assert second.returncode == 0, second.stderr[-3000:]
    done_before = {i for i, s in before.items() if s["status"] == "done"}
    assert 6 <= len(done_before) < 30
    assert f"{len(done_before)} skipped" in second.stdout
    after = sidecars(output)
    assert sorted(after) == [f"item-{i:02d}" for i in range(30)]
    assert not list(output.glob(f"{TEMP_MARK}*"))
    assert sorted(p.name for p in output.glob("*.wav")) == [f"item-{i:02d}.wav" for i in range(30)]
    for item_id, sidecar in after.items():
        assert sidecar["status"] == "done"
        assert file_sha256(output / sidecar["audio"]) == sidecar["sha256"]
        if item_id in done_before:  # not redone: the same record, written by the killed run's worker
            assert sidecar == before[item_id]


@pytest.mark.slow  # with the 30-item run behind it, over 20 s
def test_each_item_is_what_a_single_generate_makes(killed_and_resumed, tiny_fp32_folder):
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    engine = OmniVoiceEngine(tiny_fp32_folder, verify="size")
    after = sidecars(killed_and_resumed["output"])
    for item in read_items(killed_and_resumed["items"], base=GenerationConfig(num_step=2)):
        sidecar = after[item.id]
        assert sidecar["seed"] == item.config.seed
        assert sidecar["settings"]["voice"] == ("narrator" if item.voice else None)
        result = engine.generate(item.text, **item.generate_kwargs())
        assert codes_sha256(result.codes) == sidecar["codes_sha256"], item.id
        audio, rate = soundfile.read(killed_and_resumed["output"] / sidecar["audio"], dtype="float32")
        assert rate == SAMPLE_RATE and len(audio) == len(result.audio) == sidecar["samples"]
        assert np.abs(audio - result.audio).max() <= 1.5 / 32768  # 16-bit PCM of the same samples


@pytest.mark.slow  # with the 30-item run behind it, over 20 s
def test_a_rerun_skips_everything_and_failed_items_wait_for_retry(killed_and_resumed, tiny_fp32_folder):
    output, items = killed_and_resumed["output"], killed_and_resumed["items"]
    command = batch_command(tiny_fp32_folder, items, output, "--subtitles", "srt,vtt")
    third = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0 and "0 done, 30 skipped" in third.stdout and "0 failed" in third.stdout
    assert len(list(output.glob("*.vtt"))) == 30  # subtitles asked for later come from the sidecars
    # an item whose audio no longer checks is made again; a recorded failure waits for --retry-failed
    (output / "item-03.wav").write_bytes(b"corrupt")
    failed = dict(sidecars(output)["item-04"], status="failed", error="disk full")
    (output / "item-04.json").write_text(json.dumps(failed))
    fourth = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert fourth.returncode == 3 and "1 done, 28 skipped" in fourth.stdout and "1 failed" in fourth.stdout
    assert "item-04: disk full" in fourth.stdout
    fifth = subprocess.run(command + ["--retry-failed"], capture_output=True, text=True, timeout=300)
    assert fifth.returncode == 0 and "1 done, 29 skipped" in fifth.stdout and "0 failed" in fifth.stdout
    assert sidecars(output)["item-04"]["status"] == "done"


def test_ray_without_ray_installed_is_one_line(tiny_fp32_folder, tmp_path):
    source = write_items(tmp_path / "items.jsonl", count=2)
    prelude = "import sys, runpy\nsys.modules['ray'] = None\nsys.argv[0] = 'omnivoice'\n"
    code = prelude + "runpy.run_module('omnivoice_demo', run_name='__main__', alter_sys=True)\n"
    done = subprocess.run([sys.executable, "-c", code, *batch_command(tiny_fp32_folder, source, tmp_path / "out",
                                                                       "--ray", "auto")[3:]],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "pip install" in line and "[batch]" in line


# --- subtitles ------------------------------------------------------------------------------------

def test_subtitles_follow_the_chunks_in_the_final_audio(tiny_fp32_folder, tmp_path):
    """Chunks are joined with 0.1 s of silence: those silences, found in the written audio, are where the
    chunk times in the sidecar and the cues in the SRT/VTT must be (within one frame, 40 ms)."""
    from omnivoice_demo.batch.local import InlineBackend
    from omnivoice_demo.batch.plan import BatchPlan
    from omnivoice_demo.batch.runner import run_batch
    from omnivoice_demo.batch.worker import Job, ModelSpec

    source = tmp_path / "book.jsonl"
    texts = ["The first part has a sentence. Then it has another one, and a third follows it.",
             "Short second part.",
             "The third part is longer again. It speaks of many things, one after the other, slowly."]
    source.write_text("".join(json.dumps({"id": f"part{i}", "text": text, "seed": i, "postprocess": i != 2}) + "\n"
                              for i, text in enumerate(texts)))
    items = read_items(source, base=GenerationConfig(num_step=4, chunk_threshold=1.0, chunk_duration=1.5))
    job = Job(output=str(tmp_path / "out"), subtitles=("srt", "vtt"))
    summary = run_batch(BatchPlan(items=tuple(items), job=job, book=True),
                        backend=lambda: InlineBackend(ModelSpec(model=str(tiny_fp32_folder))), progress=False).summary
    assert summary.done == 3 and summary.book == "book.wav"

    out = tmp_path / "out"
    boundaries = 0
    for item in items:
        sidecar = json.loads((out / f"{item.id}.json").read_text())
        audio, _ = soundfile.read(out / sidecar["audio"], dtype="int16")
        silences = _silent_runs(audio, min_seconds=0.05)
        # the padding at both ends, and one joining silence between each two chunks
        assert len(silences) == len(sidecar["chunks"]) + 1, (item.id, silences, sidecar["chunks"])
        for chunk, before, after in zip(sidecar["chunks"], silences, silences[1:]):
            assert abs(chunk["start"] - before[1]) <= FRAME_SECONDS and abs(chunk["end"] - after[0]) <= FRAME_SECONDS
            boundaries += 1
        srt = parse_timestamps((out / f"{item.id}.srt").read_text())
        assert srt == parse_timestamps((out / f"{item.id}.vtt").read_text())
        for chunk in sidecar["chunks"]:  # each chunk's first cue starts, and its last ends, at the chunk's times
            assert any(abs(start - chunk["start"]) <= 0.001 for start, _ in srt)
            assert any(abs(end - chunk["end"]) <= 0.001 for _, end in srt)
    assert boundaries >= 5
    book = parse_timestamps((out / "book.srt").read_text())
    lengths = [json.loads((out / f"{i.id}.json").read_text())["seconds"] for i in items]
    assert len(book) == sum(len(parse_timestamps((out / f"{i.id}.srt").read_text())) for i in items)
    first_of_part3 = parse_timestamps((out / "part2.srt").read_text())[0][0] + lengths[0] + lengths[1]
    assert any(abs(start - first_of_part3) <= 0.001 for start, _ in book)
    assert abs(soundfile.info(str(out / "book.wav")).duration - sum(lengths)) < 1e-3


def _silent_runs(audio: np.ndarray, min_seconds: float) -> list[tuple[float, float]]:
    """(start, end) in seconds of every run of digital silence at least ``min_seconds`` long."""
    edges = np.diff(np.concatenate([[0], (audio == 0).astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [(s / SAMPLE_RATE, e / SAMPLE_RATE) for s, e in zip(starts, ends) if e - s >= min_seconds * SAMPLE_RATE]


def test_chunk_positions_replay_the_engines_silence_removal():
    from omnivoice_demo.audio import processing as audio_ops
    from omnivoice_demo.batch.timeline import chunk_spans, remove_silence_positions

    rng = np.random.default_rng(0)

    def noise(seconds):
        return (rng.standard_normal(int(seconds * SAMPLE_RATE)) * 0.2).astype(np.float32)

    def silence(seconds):
        return np.zeros(int(seconds * SAMPLE_RATE), np.float32)

    chunks = [np.concatenate([silence(0.8), noise(1.0), silence(1.2), noise(0.6)]), noise(0.7),
              np.concatenate([noise(0.4), silence(1.0)])]
    joined = audio_ops.cross_fade_chunks([c[np.newaxis] for c in chunks], SAMPLE_RATE)
    positions, replayed = remove_silence_positions(joined, SAMPLE_RATE, mid_sil=500, lead_sil=100, trail_sil=100)
    assert np.array_equal(replayed, audio_ops.remove_silence(joined, SAMPLE_RATE, 500, 100, 100))
    quantised = audio_ops.audiosegment_to_numpy(audio_ops.numpy_to_audiosegment(joined, SAMPLE_RATE))[0]
    assert np.array_equal(quantised[positions], replayed[0])  # each output sample is the input sample named
    final = audio_ops.postprocess_audio(joined, None, True, 0.1, 0.1, SAMPLE_RATE)
    spans = chunk_spans(chunks, final.shape[-1], postprocess=True, pad_duration=0.1)
    # chunk 0 keeps 0.1 s of its leading silence and 2 x 0.5 s of its inner 1.2 s; the gap of 0.1 s stays
    pad, rate = 2400, SAMPLE_RATE
    expected_0 = (0.1 + 1.0 + 1.0 + 0.6) * rate
    assert spans[0][0] == pad and abs(spans[0][1] - pad - expected_0) <= 0.02 * rate
    assert abs(spans[1][0] - spans[0][1] - 0.1 * rate) <= 0.02 * rate
    assert abs(spans[2][1] - (final.shape[-1] - pad)) <= 1 and spans[2][0] - spans[1][1] == int(0.1 * rate)
    plain = chunk_spans(chunks, joined.shape[-1] + 2 * pad, postprocess=False, pad_duration=0.1)
    assert plain[1][0] == pad + len(chunks[0]) + int(0.1 * rate)



def test_chunk_positions_hold_where_pydub_pads_a_cut_past_the_last_sample(caplog):
    """pydub's length in ms is rounded: a cut that ends at the audio's end can ask for up to half a ms past its
    last sample, which pydub fills with silence.  The replay names those filler samples (-1) and the spans stay
    exact; a replay from ranges of input samples alone indexed past the end (IndexError) or lost them."""
    from omnivoice_demo.audio import processing as audio_ops
    from omnivoice_demo.batch.timeline import chunk_spans, remove_silence_positions

    rng = np.random.default_rng(3)
    sound = (rng.standard_normal(int(1.5 * SAMPLE_RATE) + 13) * 0.3).astype(np.float32)   # 1500.54 ms: rounds up
    chunks = [np.concatenate([np.zeros(int(0.8 * SAMPLE_RATE), np.float32), sound]), sound[:SAMPLE_RATE + 7]]
    joined = audio_ops.cross_fade_chunks([c[np.newaxis] for c in chunks], SAMPLE_RATE)
    positions, replayed = remove_silence_positions(joined, SAMPLE_RATE, mid_sil=500, lead_sil=100, trail_sil=100)
    assert np.array_equal(replayed, audio_ops.remove_silence(joined, SAMPLE_RATE, 500, 100, 100))
    assert (positions < 0).any() and positions.max() < joined.shape[-1]   # filler named, nothing past the end
    final = audio_ops.postprocess_audio(joined, None, True, 0.1, 0.1, SAMPLE_RATE)
    with caplog.at_level("WARNING", logger="omnivoice.batch"):
        spans = chunk_spans(chunks, final.shape[-1], postprocess=True, pad_duration=0.1)
    assert "approximate" not in caplog.text
    assert spans[-1][1] == final.shape[-1] - 2400 and spans[0][1] <= spans[1][0]

# --- Ray ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_ray_gives_the_same_outputs_as_the_local_run(killed_and_resumed, tiny_fp32_folder, tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    from omnivoice_demo.cli.main import main

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    monkeypatch.setenv("PYTHONPATH", repo + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ray.init(num_cpus=2, _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False)
    try:
        assert ray.cluster_resources()["CPU"] == 2
        output = tmp_path / "ray-out"
        code = main(batch_command(tiny_fp32_folder, killed_and_resumed["items"], output, "--ray", "auto",
                                  "--subtitles", "srt")[3:])
    finally:
        ray.shutdown()
    assert code == 0
    local, remote = sidecars(killed_and_resumed["output"]), sidecars(output)
    assert sorted(remote) == sorted(local)
    assert len({s["pid"] for s in remote.values()}) == 2  # two actors shared the work
    for item_id, sidecar in remote.items():
        assert sidecar["key"] == local[item_id]["key"]
        assert sidecar["codes_sha256"] == local[item_id]["codes_sha256"]
        assert sidecar["sha256"] == local[item_id]["sha256"] == file_sha256(output / sidecar["audio"])
        assert (output / f"{item_id}.srt").read_text() == (killed_and_resumed["output"] / f"{item_id}.srt").read_text()


def test_batch_preset_flag_sets_every_items_defaults(tmp_path):
    """``omnivoice batch --preset fast`` applies the preset under the flags and the rows that set a value."""
    import argparse

    from omnivoice_demo.batch.cli import add_batch_command
    from omnivoice_demo.settings.generation import config_from_arguments

    parser = argparse.ArgumentParser()
    add_batch_command(parser.add_subparsers(dest="command"), lambda p: None)
    source = tmp_path / "items.jsonl"
    source.write_text('{"id": "a", "text": "One.", "num_step": 12}\n{"id": "b", "text": "Two."}\n')
    args = parser.parse_args(["batch", "--input", str(source), "--output", str(tmp_path / "out"),
                              "--preset", "fast", "--t-shift", "0.2"])
    a, b = read_items(source, base=config_from_arguments(args))
    fast = GenerationConfig.preset("fast")
    assert (b.config.num_step, b.config.guidance_every, b.config.t_shift) == (fast.num_step, fast.guidance_every, 0.2)
    assert a.config.num_step == 12 and a.config.guidance_every == fast.guidance_every
