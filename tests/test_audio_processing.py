"""Audio processing against the reference: reference-clip preparation, post-processing, chunk joining.

The reference's ``create_voice_clone_prompt`` runs on a stand-in model whose
codec records the waveform it is asked to encode; ``_post_process_audio``
runs on a stand-in with only ``sampling_rate``.
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
import soundfile as sf

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import torch
    from omnivoice.models import omnivoice as ref
    from omnivoice.utils import audio as ref_audio

from omnivoice_demo.audio import processing as audio

SR = 24000


def speechlike(seed: int, sr: int, pattern, channels: int = 1, level: float = 0.3) -> np.ndarray:
    """float32 [channels, N]: voiced bursts (durations > 0) and near-silent gaps (durations < 0), in seconds."""
    rng = np.random.default_rng(seed)
    out = []
    for dur in pattern:
        n = int(abs(dur) * sr)
        t = np.arange(n) / sr
        if dur > 0:
            f0 = rng.uniform(100, 250)
            env = 0.6 + 0.4 * np.sin(2 * np.pi * rng.uniform(2, 6) * t)
            x = level * env * (np.sin(2 * np.pi * f0 * t) + 0.4 * np.sin(2 * np.pi * 2.7 * f0 * t))
            x = x + 0.02 * level * rng.standard_normal(n)
        else:
            x = 1e-4 * rng.standard_normal(n)
        out.append(x)
    mono = np.concatenate(out)
    chans = [mono * (1.0 - 0.3 * c) + 1e-3 * rng.standard_normal(mono.size) for c in range(channels)]
    return np.stack(chans).astype(np.float32)


class FakeCodec:
    device = torch.device("cpu")
    config = types.SimpleNamespace(hop_length=960)

    def __init__(self):
        self.seen = None

    def encode(self, wav):
        self.seen = wav[0].numpy().copy()
        return types.SimpleNamespace(audio_codes=torch.zeros(1, 8, wav.shape[-1] // 960, dtype=torch.long))


class RefModel:
    create_voice_clone_prompt = ref.OmniVoice.create_voice_clone_prompt
    _post_process_audio = ref.OmniVoice._post_process_audio

    def __init__(self):
        self.sampling_rate = SR
        self.audio_tokenizer = FakeCodec()
        self._asr_pipe = object()  # never used: transcribe is replaced

    def transcribe(self, audio_):
        return "automatic transcript"


def _reference_prepare(wav, sr, transcript, preprocess=True):
    model = RefModel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prompt = model.create_voice_clone_prompt((torch.from_numpy(wav), sr), transcript, preprocess)
    return model.audio_tokenizer.seen, prompt.ref_rms


GAPPY = [0.8, -0.35, 1.2, -0.9, 0.5, -0.25, 1.0, -0.6]


@pytest.mark.parametrize("case", [
    dict(sr=24000, channels=1, transcript="Hello there.", pattern=GAPPY),
    dict(sr=24000, channels=2, transcript=None, pattern=GAPPY),
    dict(sr=24000, channels=1, transcript=None, pattern=[-0.5] + GAPPY + [-1.0], level=0.02),  # quiet: scaled up
    dict(sr=24000, channels=1, transcript=None, pattern=GAPPY * 4),  # > 20 s without transcript: cut near 15 s
    dict(sr=24000, channels=1, transcript="Long but transcribed.", pattern=GAPPY * 4),  # > 20 s, not cut
    dict(sr=24000, channels=1, transcript="x", pattern=GAPPY, preprocess=False),
    dict(sr=44100, channels=2, transcript="Stereo at 44.1 kHz.", pattern=GAPPY),
    dict(sr=44100, channels=2, transcript=None, pattern=GAPPY, level=0.03),
    dict(sr=16000, channels=1, transcript=None, pattern=GAPPY),
])
def test_prepare_reference_matches_create_voice_clone_prompt(case):
    wav = speechlike(7, case["sr"], case["pattern"], case["channels"], case.get("level", 0.3))
    preprocess = case.get("preprocess", True)
    expected, expected_rms = _reference_prepare(wav, case["sr"], case["transcript"], preprocess)
    got, rms = audio.prepare_reference(wav, case["sr"], case["transcript"] is not None, preprocess=preprocess)
    assert got.dtype == np.float32 and got.shape[0] == 1 and got.shape[1] % 960 == 0
    assert got.shape == expected.shape
    if case["sr"] == SR:
        assert rms == expected_rms
        np.testing.assert_array_equal(got, expected)
    else:
        # The NumPy resampler agrees with torchaudio to float32 rounding; silence removal
        # then quantises to 16 bits (pydub), where such a difference can flip a rare
        # sample by one 16-bit step.
        assert rms == pytest.approx(expected_rms, rel=1e-5)
        step = 1.0 / 32768
        np.testing.assert_allclose(got, expected, rtol=0, atol=step * 1.001 if preprocess else 1e-5)
        assert np.mean(got != expected) < 1e-3
    if case["transcript"] is None and len(case["pattern"]) > 8:
        assert got.shape[1] <= 15 * SR  # the long clip was cut


def test_prepare_reference_from_file_matches_reference(tmp_path):
    wav = speechlike(3, 24000, GAPPY, channels=2)
    path = tmp_path / "ref.wav"
    sf.write(path, wav.T, 24000, subtype="FLOAT")
    model = RefModel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prompt = model.create_voice_clone_prompt(str(path), "Some words.")
    data, sr = audio.load_audio_file(path)
    got, rms = audio.prepare_reference(data, sr, transcript_given=True)
    np.testing.assert_array_equal(got, model.audio_tokenizer.seen)
    assert rms == prompt.ref_rms


@pytest.mark.parametrize("make, message", [
    (lambda: np.full((1, SR * 2), np.nan, dtype=np.float32), "NaN or infinite"),
    (lambda: np.concatenate([speechlike(1, SR, [1.0]), np.full((1, 10), np.inf, np.float32)], 1), "NaN or infinite"),
    (lambda: np.zeros((1, SR * 3), dtype=np.float32), "silent"),
    (lambda: np.zeros((1, 0), dtype=np.float32), "no samples"),
    (lambda: speechlike(2, SR, [0.3]), "at least 0.5 s"),
    (lambda: speechlike(2, SR, [-1.0, 0.1, -1.0]), "after silence removal"),
    (lambda: speechlike(2, SR, [61.0]), "Trim it"),
    (lambda: speechlike(2, SR, [1.0], channels=2).T.copy(), "channels first"),
    (lambda: (speechlike(2, SR, [1.0]) * 1000).astype(np.int16), "floating point"),
])
def test_prepare_reference_rejects_bad_input(make, message):
    with pytest.raises(ValueError, match=message):
        audio.prepare_reference(make(), SR, transcript_given=True)


# ---------------------------------------------------------------------------
# Output side
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("ref_rms", [None, 0.03, 0.1, 0.4])
@pytest.mark.parametrize("postprocess", [True, False])
@pytest.mark.parametrize("pad, fade", [(0.1, 0.1), (0.0, 0.0), (0.25, 0.05)])
def test_postprocess_matches_reference(ref_rms, postprocess, pad, fade):
    generated = speechlike(11, SR, [-0.3, 1.1, -0.8, 0.6, -1.2, 0.9, -0.2], level=0.7)
    cfg = ref.OmniVoiceGenerationConfig(postprocess_output=postprocess, pad_duration=pad, fade_duration=fade)
    expected = RefModel()._post_process_audio(generated.copy(), ref_rms=ref_rms, gen_config=cfg)
    got = audio.postprocess_audio(generated.copy(), ref_rms, postprocess, pad, fade, SR)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)


def test_postprocess_of_silence_returns_empty():
    silent = np.zeros((1, SR), dtype=np.float32)
    assert audio.postprocess_audio(silent, None).shape == (1, 0)
    tiny = np.zeros((1, 3), dtype=np.float32)
    assert audio.postprocess_audio(tiny, 0.05, postprocess=False).shape == (1, 3 + 2 * 2400)


def test_silence_helpers_match_reference():
    for seed, pattern in [(1, GAPPY), (2, [-2.0, 0.4, -0.05, 0.4, -3.0]), (3, [0.2]), (4, GAPPY * 4)]:
        wav = speechlike(seed, SR, pattern)
        for mid, lead, trail in [(200, 100, 200), (500, 100, 100), (0, 50, 50)]:
            np.testing.assert_array_equal(audio.remove_silence(wav, SR, mid, lead, trail),
                                          ref_audio.remove_silence(wav, SR, mid, lead, trail))
        np.testing.assert_array_equal(audio.trim_long_audio(wav, SR), ref_audio.trim_long_audio(wav, SR))


def test_cross_fade_chunks_matches_reference():
    rng = np.random.default_rng(0)
    for lens in [[24000], [24000, 30000], [5000, 1000, 30000, 100], [3000, 2400, 2399]]:
        chunks = [rng.standard_normal((1, n)).astype(np.float32) * 0.3 for n in lens]
        expected = ref_audio.cross_fade_chunks([c.copy() for c in chunks], SR)
        got = audio.cross_fade_chunks([c.copy() for c in chunks], SR)
        np.testing.assert_array_equal(got, expected)
        if len(lens) > 1:
            assert got.shape[1] == sum(lens) + 2400 * (len(lens) - 1)


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt, subtype", [("WAV", "PCM_16"), ("WAV", "FLOAT"), ("FLAC", "PCM_24"),
                                          ("OGG", "VORBIS"), ("MP3", "MPEG_LAYER_III")])
def test_load_audio_file_formats(tmp_path, fmt, subtype):
    wav = speechlike(5, 44100, [0.5, -0.2, 0.5], channels=2)
    path = tmp_path / f"clip.{fmt.lower()}"
    try:
        sf.write(path, wav.T, 44100, format=fmt, subtype=subtype)
    except Exception as err:  # pragma: no cover - depends on the libsndfile build
        pytest.skip(f"libsndfile cannot write {fmt}: {err}")
    data, sr = audio.load_audio_file(path)
    assert sr == 44100 and data.dtype == np.float32 and data.shape[0] == 2
    ref_data, ref_sr = ref_audio.load_waveform(str(path))
    np.testing.assert_array_equal(data, ref_data)
    assert audio.to_mono(data).shape == (1, data.shape[1])


def test_load_audio_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "not_audio.wav"
    bad.write_text("this is not a wave file")
    with pytest.raises(ValueError, match="not_audio.wav"):
        audio.load_audio_file(bad)
    with pytest.raises(ValueError, match="missing.flac.*does not exist"):
        audio.load_audio_file(tmp_path / "missing.flac")
    empty = tmp_path / "empty.wav"
    sf.write(empty, np.zeros((0, 1), dtype=np.float32), 24000)
    with pytest.raises(ValueError, match="empty.wav.*no samples"):
        audio.load_audio_file(empty)
