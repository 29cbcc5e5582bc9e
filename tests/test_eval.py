"""omnivoice eval: candidates against the exact model, on random weights (issue 20).

Random weights say nothing about quality, so these tests check that each measure
measures: a candidate identical to the exact configuration scores agreement 1,
mel distance 0 and the same error rates; a 1-step candidate scores lower
agreement; a planted wrong transcript raises the WER by the hand-counted edits;
speaker similarity runs on a random-weight ONNX embedding model built here (and
our Kaldi filterbank equals torchaudio's); an interrupted run, run again, redoes
nothing finished.  The recogniser is the project's own Whisper on ONNX Runtime
with random weights (it hears nonsense, the same nonsense for the same audio).
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
import soundfile

from omnivoice_demo.settings.generation import GenerationConfig
from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.eval import EvalItem, Scorers, exact_candidate, parse_candidate, read_eval_items, run_eval
from omnivoice_demo.eval.report import summary_row
from omnivoice_demo.eval.scores import codes_agreement, error_rates, normalise_text
from tests.support.signals import write_speech_like

#: a sentence of the built-in set and a planted transcript of it with hand-counted edits:
#: cold -> warm (substitution), the -> a (substitution), "a" before pot deleted, "today" inserted
SPOKEN = "The weather turned cold overnight, so we lit the stove and made a pot of tea."
PLANTED = "the weather turned warm overnight so we lit a stove and made pot of tea today"
PLANTED_EDITS, SPOKEN_WORDS = 4, 16


def items_of(count: int = 3) -> list[EvalItem]:
    return read_eval_items("builtin", limit=count)


@pytest.fixture(scope="module")
def whisper_folder(tmp_path_factory):
    """A tiny random-weight Whisper converted to the recogniser's folder (fp32 graphs)."""
    from convert.whisper import convert_whisper
    from convert.whisper_checkpoint import build_checkpoint

    root = tmp_path_factory.mktemp("eval-whisper")
    return convert_whisper(build_checkpoint("test", root / "ckpt", seed=0, max_length=24), root / "onnx")


@pytest.fixture(scope="module")
def recognizer(whisper_folder):
    """The project's Whisper recogniser on the tiny random-weight Whisper."""
    from omnivoice_demo.asr import SpeechRecognizer

    return SpeechRecognizer(whisper_folder, precision="fp32", threads=2)


@pytest.fixture(scope="module")
def engines(tiny_fp32_folder):
    from omnivoice_demo.eval import EngineCache

    return EngineCache(threads=2)


# --- the measures, without a model --------------------------------------------------------------


def test_planted_transcript_errors_are_the_hand_counted_edits():
    rates = error_rates(SPOKEN, PLANTED)
    assert (rates.word_errors, rates.words) == (PLANTED_EDITS, SPOKEN_WORDS)
    assert rates.wer == pytest.approx(PLANTED_EDITS / SPOKEN_WORDS)
    assert error_rates(SPOKEN, SPOKEN.upper().replace(",", " ;")).wer == 0.0  # case and punctuation do not count
    chinese = error_rates("今天天气很好，我们一起去公园散步吧。", "今天天气不好我们一起去公园散步")
    assert (chinese.char_errors, chinese.chars) == (2, 16)  # 很 -> 不, 吧 deleted
    assert error_rates("one two", "").word_errors == 2 and error_rates("", "one").word_errors == 1
    assert normalise_text("Don’t  STOP—now!") == "dont stop now"
    assert normalise_text("It costs 5 dollars") != normalise_text("It costs five dollars")  # numbers as written


def test_without_jiwer_the_error_rates_say_what_to_install(monkeypatch, tmp_path):
    from omnivoice_demo.errors import one_line
    from omnivoice_demo.eval.scores import MissingEvalDependency

    monkeypatch.setitem(__import__("sys").modules, "jiwer", None)
    with pytest.raises(MissingEvalDependency) as error:
        error_rates("a b", "a c")
    message = one_line(error.value)   # jiwer is a runtime requirement now: the hint installs it into the app's .venv
    assert "pip install jiwer" in message and "requirements-dev" not in message
    with pytest.raises(MissingEvalDependency):  # refused before any work when a recogniser is to be used
        run_eval(items_of(1), [parse_candidate("preset=fast")], tmp_path / "out",
                 engines=lambda candidate: pytest.fail("no engine may be opened"),
                 scorers=Scorers(recognizer=object()), progress=False)
    assert not (tmp_path / "out").exists()


def test_codes_agreement_counts_cells_and_codebooks():
    exact = np.arange(8 * 10).reshape(8, 10)
    other = exact.copy()
    other[0, :5] = -1
    other[7, :] = -1
    share, per_codebook = codes_agreement(exact, other)
    assert share == pytest.approx((80 - 5 - 10) / 80)
    assert per_codebook[0] == 0.5 and per_codebook[7] == 0.0 and per_codebook[3] == 1.0
    shorter, _ = codes_agreement(exact, exact[:, :8])  # the missing frames disagree
    assert shorter == pytest.approx(0.8)


def test_candidate_specs():
    fast = parse_candidate("preset=fast,backbone=int4")
    assert fast.name == "fast+int4" and fast.backbone == "int4"
    assert (fast.config.num_step, fast.config.guidance_every) == (8, 2)
    streaming = parse_candidate("name=stream,streaming=on,num_step=16")
    assert streaming.config.sentence_streaming and streaming.config.num_step == 16 and streaming.backbone is None
    exact = exact_candidate("some/folder")
    assert streaming.under(exact).backbone == "fp32" and streaming.under(exact).model == "some/folder"
    # a backbone is passed to the engine as it is written, so new engine choices need no change here
    assert parse_candidate("backbone=int8-dynamic").under(exact).backbone == "int8-dynamic"
    for bad in ("preset=quick", "steps=3", "num_step=0", "seed=3", "name=a/b", "fast"):
        with pytest.raises(InvalidInput):
            parse_candidate(bad)


def test_item_files_and_published_lists(tmp_path):
    clip = write_speech_like(tmp_path / "prompt.wav", 1.0, 16000)
    builtin = read_eval_items("builtin")
    assert len(builtin) == 20 and {"en", "zh", "de", "fr", "es", "ja", "ko"} == {i.language for i in builtin}
    cloned = read_eval_items("builtin", clone_clip=clip, clone_text="Hello there.")
    assert len(cloned) == 25 and all(i.ref_audio == clip for i in cloned[20:])
    seed_tts = tmp_path / "en" / "meta.lst"
    seed_tts.parent.mkdir()
    (seed_tts.parent / "prompt-wavs").mkdir()
    write_speech_like(seed_tts.parent / "prompt-wavs" / "p1.wav", 1.0, 16000)
    seed_tts.write_text("utt1|Prompt words.|prompt-wavs/p1.wav|Words to say.\n", encoding="utf-8")
    (item,) = read_eval_items(seed_tts)
    assert (item.id, item.text, item.ref_text, item.language) == ("utt1", "Words to say.", "Prompt words.", "en")
    libri = tmp_path / "librispeech_pc_test_clean_cross_sentence.lst"
    audio_root = tmp_path / "test-clean"
    (audio_root / "121" / "127").mkdir(parents=True)
    write_speech_like(audio_root / "121" / "127" / "121-127-0001.flac", 1.0, 16000)
    libri.write_text("121-127-0001\t1.5\tRef words.\t260-123-0002\t2.0\tGenerated words.\n", encoding="utf-8")
    (item,) = read_eval_items(libri, audio_root=str(audio_root))
    assert item.id == "260-123-0002" and item.ref_audio.endswith("121-127-0001.flac")
    rows = tmp_path / "items.jsonl"
    rows.write_text('{"text": "ok"}\n{"text": ""}\n{"text": "x", "ref_audio": "missing.wav"}\n{"txt": "y"}\n')
    with pytest.raises(InvalidInput) as error:
        read_eval_items(rows)
    assert "line 2" in str(error.value) and "line 3" in str(error.value) and "line 4" in str(error.value)


# --- runs on the tiny folder ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def scored_run(tiny_fp32_folder, recognizer, engines, tmp_path_factory):
    """Three items; an identical candidate and a 1-step one; the random Whisper transcribes every output."""
    output = tmp_path_factory.mktemp("eval") / "out"
    scorers = Scorers(recognizer=recognizer, recognizer_id="random-whisper")
    report = run_eval(items_of(3), [parse_candidate("name=same"), parse_candidate("name=one-step,num_step=1")],
                      output, exact=exact_candidate(str(tiny_fp32_folder)), engines=engines, scorers=scorers,
                      progress=False)
    return report, output


def test_identical_candidate_scores_exact_and_one_step_scores_lower(scored_run):
    report, output = scored_run
    exact, same, one = (summary_row(report, name) for name in ("exact", "same", "one-step"))
    assert same["agreement"] == {"mean": 1.0, "worst": 1.0}
    assert same["mel_distance"] == {"mean": 0.0, "worst": 0.0}
    assert same["duration_ratio"]["mean"] == 1.0
    assert same["wer"] == exact["wer"] and same["cer"] == exact["cer"]
    assert one["agreement"]["mean"] < 1.0 and one["agreement"]["worst"] < 1.0
    assert one["mel_distance"]["mean"] > 0.0
    assert len(one["per_codebook"]) == 8 and min(one["per_codebook"]) < 1.0
    # the WAVs side by side, the report in both forms
    folders = sorted(p for p in output.iterdir() if p.is_dir())
    assert len(folders) == 3 and all(sorted(f.name for f in d.glob("*.wav")) == ["exact.wav", "one-step.wav",
                                                                                   "same.wav"] for d in folders)
    saved = json.loads((output / "report.json").read_text())
    assert [row["configuration"] for row in saved["summary"]] == ["exact", "same", "one-step"]
    assert len(saved["items"]) == 9 and all("transcript" in row for row in saved["items"])
    markdown = (output / "report.md").read_text()
    assert "| one-step |" in markdown and "codes agreement" in markdown and "cb7" in markdown
    headers, rows = report.table()
    assert rows[0][headers.index("codes agreement ↑")] == "exact"
    # error rates: percentages where people read them, ratios in report.json, and the note says which is which
    wer = saved["summary"][2]["wer"]
    shown = f"{100 * wer['mean']:.1f}% ({100 * wer['worst']:.1f}%)"
    assert rows[2][headers.index("WER % ↓")] == shown and f"| {shown} |" in markdown
    assert 0 <= wer["mean"] <= wer["worst"] and "report.json keeps them as ratios" in markdown
    assert "1 step," in rows[2][headers.index("settings")] and "1 steps" not in markdown


def test_a_planted_wrong_transcript_raises_the_wer_by_its_edits(scored_run, engines, tiny_fp32_folder):
    """The same run, scored again by a recogniser that hears the spoken text exactly from the exact
    output and the planted transcript from the 1-step one: only the transcription is redone."""
    report, output = scored_run
    one_step = {p.parent.name: soundfile.read(p, dtype="float32")[0] for p in output.glob("*/one-step.wav")}

    class Planted:
        def transcribe(self, audio, rate, language=None):
            from omnivoice_demo.asr import Transcript

            heard_planted = any(len(a) == len(audio) and np.array_equal(a, audio) for a in one_step.values())
            spoken = next(i.text for i in items_of(3) if i.id == "en-weather")
            return Transcript(text=PLANTED if heard_planted else spoken, language="en", seconds=0.0)

    items = [i for i in items_of(3) if i.id == "en-weather"]
    assert items[0].text == SPOKEN
    replanted = run_eval(items, [parse_candidate("name=same"), parse_candidate("name=one-step,num_step=1")], output,
                         exact=exact_candidate(str(tiny_fp32_folder)), engines=engines,
                         scorers=Scorers(recognizer=Planted(), recognizer_id="planted"), progress=False)
    assert replanted.counts["generated"] == 0 and replanted.counts["transcribed"] == 3
    exact, one = summary_row(replanted, "exact"), summary_row(replanted, "one-step")
    assert exact["wer"]["mean"] == 0.0
    assert one["wer"]["mean"] - exact["wer"]["mean"] == pytest.approx(PLANTED_EDITS / SPOKEN_WORDS)


def test_an_interrupted_eval_redoes_nothing_finished(tiny_fp32_folder, engines, tmp_path):
    """Stopped (Ctrl-C) after four generations, then the same command: those four are reused as they were."""
    from omnivoice_demo.cli.main import main

    output = tmp_path / "out"
    items = tmp_path / "items.txt"
    items.write_text("One short line.\nA second short line.\nThe third line.\n")
    candidates = ["name=same", "preset=fast", "name=streamed,preset=balanced,streaming=on"]
    seen = []

    def stop_after_four(done, total, what):
        seen.append(what)
        if done == 4:
            raise KeyboardInterrupt

    exact = exact_candidate(str(tiny_fp32_folder), config=GenerationConfig(num_step=8))  # as --num-step 8 below
    with pytest.raises(KeyboardInterrupt):
        run_eval(read_eval_items(items), [parse_candidate(c) for c in candidates], output,
                 exact=exact, engines=engines, progress=False,
                 on_progress=stop_after_four)
    finished = {p: p.read_bytes() for p in output.glob("*/*.json")}
    assert len(finished) == 4 and not (output / "report.md").exists()
    argv = ["eval", "--model", str(tiny_fp32_folder), "--output", str(output), "--items", str(items),
            "--asr-model", "none", "--no-progress", "--threads", "2", "--num-step", "8"]
    for spec in candidates:
        argv += ["--candidate", spec]
    assert main(argv) == 0
    report = json.loads((output / "report.json").read_text())
    assert report["counts"]["reused"] == 4 and report["counts"]["generated"] == 3 * 4 - 4
    assert all(path.read_bytes() == data for path, data in finished.items())  # not redone, not rewritten
    assert main(argv) == 0  # and once more: nothing at all
    assert json.loads((output / "report.json").read_text())["counts"]["generated"] == 0


@pytest.mark.slow  # 80 generations (2 steps each) and 80 transcriptions
def test_the_cli_loads_each_model_once_over_the_builtin_set(tiny_fp32_folder, whisper_folder, tmp_path, monkeypatch):
    """``omnivoice eval`` with three candidates over the built-in set: each engine (fp32 for the exact
    configuration and two candidates, int8-row for the one named between them) and the recogniser are
    loaded once, no session is opened per item, every configuration speaks each item once and each
    output is transcribed once; run again, each engine is loaded once more to key the items (the render key is
    what the engine would run) and the recogniser (to fail fast), and nothing is redone.  Counts, not seconds: the measured minute is in the README (Quality against the exact model)."""
    import collections

    import onnxruntime

    from omnivoice_demo.cli.main import main
    from omnivoice_demo.asr import SpeechRecognizer
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    counts, loading = collections.Counter(), []

    def count(cls, name, key, loader=False):
        original = getattr(cls, name)

        def counted(*args, **kwargs):
            counts[key] += 1
            if loader:
                loading.append(key)
            try:
                return original(*args, **kwargs)
            finally:
                if loader:
                    loading.pop()
        monkeypatch.setattr(cls, name, counted)

    count(OmniVoiceEngine, "__init__", "engines", loader=True)
    count(SpeechRecognizer, "__init__", "recognizers", loader=True)
    count(OmniVoiceEngine, "run", "generations")
    count(SpeechRecognizer, "decode_window", "transcribed windows")
    original_session = onnxruntime.InferenceSession.__init__

    def session(self, *args, **kwargs):
        counts["sessions" if loading else "sessions opened outside a load"] += 1
        return original_session(self, *args, **kwargs)
    monkeypatch.setattr(onnxruntime.InferenceSession, "__init__", session)

    argv = ["eval", "--model", str(tiny_fp32_folder), "--output", str(tmp_path / "out"), "--items", "builtin",
            "--asr-model", str(whisper_folder), "--asr-precision", "fp32", "--no-progress", "--threads", "2",
            "--num-step", "2", "--candidate", "name=int8,backbone=int8-row,num_step=2",
            "--candidate", "name=fast,preset=fast,num_step=2", "--candidate", "name=streaming,streaming=on,num_step=2"]
    assert main(argv) == 0
    items = len(read_eval_items("builtin"))
    assert counts["engines"] == 2 and counts["recognizers"] == 1, counts
    assert counts["generations"] == 4 * items and counts["transcribed windows"] == 4 * items, counts
    assert counts["sessions"] > 0 and counts["sessions opened outside a load"] == 0, counts
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [row["configuration"] for row in report["summary"]] == ["exact", "int8", "fast", "streaming"]
    assert report["counts"] == {"generated": 4 * items, "reused": 0, "transcribed": 4 * items, "embedded": 0}

    counts.clear()
    assert main(argv) == 0
    assert counts["engines"] == 2 and counts["recognizers"] == 1, counts
    assert counts["generations"] == 0 and counts["transcribed windows"] == 0, counts
    assert json.loads((tmp_path / "out" / "report.json").read_text())["counts"]["reused"] == 4 * items


def test_bad_requests_are_refused_before_any_work(tiny_fp32_folder, tmp_path, capsys):
    from omnivoice_demo.cli.main import main

    base = ["eval", "--model", str(tiny_fp32_folder), "--output", str(tmp_path / "out"), "--asr-model", "none"]
    assert main(base) == 2
    assert "--candidate" in capsys.readouterr().err
    assert main(base + ["--candidate", "name=exact"]) == 2
    assert "named 'exact'" in capsys.readouterr().err
    assert main(base + ["--candidate", "preset=fast", "--seeds", "0"]) == 2
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("*/*.wav"))


# --- speaker similarity ------------------------------------------------------------------------------

EMBED_BINS, EMBED_DIM = 80, 16


def random_embedding_model(path: pathlib.Path, seed: int = 0) -> np.ndarray:
    """A random-weight speaker model of WeSpeaker's interface: feats [B, T, 80] -> embs [B, 16]
    (per-frame projection, ReLU, mean over time).  Returns its weight."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(seed).standard_normal((EMBED_BINS, EMBED_DIM)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["feats", "w"], ["projected"]), helper.make_node("Relu", ["projected"], ["on"]),
         helper.make_node("ReduceMean", ["on", "axes"], ["embs"], keepdims=0)],
        "speaker", [helper.make_tensor_value_info("feats", TensorProto.FLOAT, ["B", "T", EMBED_BINS])],
        [helper.make_tensor_value_info("embs", TensorProto.FLOAT, ["B", EMBED_DIM])],
        initializer=[numpy_helper.from_array(weight, "w"), numpy_helper.from_array(np.array([1], np.int64), "axes")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    return weight


def test_kaldi_fbank_equals_torchaudio():
    kaldi = pytest.importorskip("torchaudio.compliance.kaldi", reason="torchaudio (the convert extra) is not installed")
    import torch

    from omnivoice_demo.eval.speaker import kaldi_fbank
    from tests.support.signals import speech_like

    wav = speech_like(2.3, 16000, seed=3)[0].astype(np.float64) * 32768.0
    # in float64: torchaudio's float32 loses bins some 30 dB below a frame's peak (log of a rounded small number)
    expected = kaldi.fbank(torch.from_numpy(wav)[None], num_mel_bins=80, frame_length=25, frame_shift=10,
                           dither=0.0, sample_frequency=16000, energy_floor=0.0).numpy()
    ours = kaldi_fbank(wav)
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, atol=1e-3)


def test_speaker_similarity_on_a_random_embedding_model(tiny_fp32_folder, engines, tmp_path):
    from omnivoice_demo.eval.speaker import SpeakerEmbedder, kaldi_fbank, resolve_speaker_model

    models = tmp_path / "speaker"
    models.mkdir()
    weight = random_embedding_model(models / "speaker.onnx")
    path, identity = resolve_speaker_model(models)
    speaker = SpeakerEmbedder(path, threads=1, identity=identity)
    clip = write_speech_like(tmp_path / "ref.wav", 1.5, 16000, seed=4)
    audio = soundfile.read(clip, dtype="float32")[0]
    features = kaldi_fbank(audio * 32768.0)
    features -= features.mean(axis=0)
    np.testing.assert_allclose(speaker.embed(audio, 16000), np.maximum(features @ weight, 0).mean(axis=0),
                               rtol=1e-4, atol=1e-4)

    items = read_eval_items("builtin", clone_clip=clip, clone_text="The narrator's words.")
    cloned = [i for i in items if i.cloned][:1] + items[:1]
    report = run_eval(cloned, [parse_candidate("name=same,num_step=4"), parse_candidate("name=two-step,num_step=2")],
                      tmp_path / "out", exact=exact_candidate(str(tiny_fp32_folder), config=GenerationConfig(num_step=4)),
                      engines=engines,
                      scorers=Scorers(speaker=speaker), progress=False)
    rows = [r for r in report.items if r["item"] == cloned[0].id]
    assert {r["configuration"] for r in rows if "similarity" in r} == {"exact", "same", "two-step"}
    by_name = {r["configuration"]: r["similarity"] for r in rows}
    assert -1.0 <= by_name["two-step"] <= 1.0 and by_name["same"] == by_name["exact"]
    assert not any("similarity" in r for r in report.items if r["item"] == cloned[1].id)  # not cloned
    assert summary_row(report, "same")["similarity"]["mean"] == pytest.approx(by_name["exact"])

    (models / "other.onnx").write_bytes((models / "speaker.onnx").read_bytes())
    with pytest.raises(Exception, match="several"):
        resolve_speaker_model(models)


def test_speaker_model_from_the_hub_stand_in_then_offline(tmp_path, monkeypatch):
    """A repo with two graphs: the one named is downloaded (checked against the Hub's sha256), alone;
    offline, the cached copy is used without asking the Hub."""
    import huggingface_hub.constants

    from omnivoice_demo.errors import ModelNotAvailable
    from omnivoice_demo.eval.speaker import SpeakerEmbedder, resolve_speaker_model
    from tests.support.hub_server import HubServer

    repo = tmp_path / "repo"
    (repo / "onnx").mkdir(parents=True)
    random_embedding_model(repo / "onnx" / "speaker.onnx", seed=1)
    random_embedding_model(repo / "other.onnx", seed=2)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    for name, value in (("HF_HOME", tmp_path / "hf"), ("HF_HUB_OFFLINE", "0"), ("OMNIVOICE_CACHE", tmp_path / "ours"),
                        ("HF_HUB_DISABLE_TELEMETRY", "1")):
        monkeypatch.setenv(name, str(value))
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with HubServer() as hub:
        hub.add_repo("someone/speaker-onnx", repo)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with pytest.raises(ModelNotAvailable, match="several"):
            resolve_speaker_model("someone/speaker-onnx")
        path, identity = resolve_speaker_model("someone/speaker-onnx:onnx/speaker.onnx")
        fetched = {r.path.rsplit("/", 1)[-1] for r in hub.downloads("someone/speaker-onnx") if r.status in (200, 206)}
        assert fetched == {"speaker.onnx"} and identity.startswith("someone/speaker-onnx@")
        assert SpeakerEmbedder(path, threads=1).embed(np.ones(16000, np.float32) * 0.1, 16000).shape == (EMBED_DIM,)
        hub.reset_log()
        again, _ = resolve_speaker_model("someone/speaker-onnx:onnx/speaker.onnx", offline=True)
        assert again == path and not hub.requests


def test_speaker_similarity_is_skipped_with_a_reason_without_a_model(tmp_path):
    from omnivoice_demo.eval.cli import open_speaker_model

    clip = write_speech_like(tmp_path / "ref.wav", 1.0, 16000)
    speaker, note = open_speaker_model(None, read_eval_items("builtin", clone_clip=clip), "cpu", 1, True, None)
    assert speaker is None and "--speaker-model" in note and "\n" not in note
    speaker, note = open_speaker_model(str(tmp_path), read_eval_items("builtin"), "cpu", 1, True, None)
    assert speaker is None and "--ref-audio" in note


def test_exact_default_is_fp32_reference_without_streaming():
    exact = exact_candidate("folder")
    assert exact.backbone == "fp32" and exact.config == GenerationConfig.preset("reference")
    assert not exact.config.sentence_streaming
