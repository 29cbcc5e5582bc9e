"""Loudness for delivery, measured: the integrated loudness lands on the target, the true peak stays under the ceiling."""

from __future__ import annotations

import numpy as np
import pytest

from omnivoice_demo.audio.loudness import TRUE_PEAK_CEILING, integrated_loudness, normalise_loudness, true_peak
from omnivoice_demo.settings.generation import GenerationConfig
from omnivoice_demo.errors import InvalidInput
from tests.support.signals import speech_like

RATE = 24000


@pytest.mark.parametrize("target", [-16.0, -23.0, -30.0])
@pytest.mark.parametrize("level", [0.02, 0.3])
def test_speech_lands_on_the_target_under_the_ceiling(target, level):
    speech = speech_like(8.0, RATE, seed=2, level=level)[0]
    out, report = normalise_loudness(speech, RATE, target)
    measured = integrated_loudness(out, RATE)       # measured again, on the output itself
    assert abs(measured - target) <= 0.5
    assert true_peak(out, RATE) <= TRUE_PEAK_CEILING
    assert report.after == pytest.approx(measured) and report.before == pytest.approx(integrated_loudness(speech, RATE))


def test_the_true_peak_ceiling_wins_over_a_loud_target():
    """A peaky clip asked to be very loud: its true peak is held at the ceiling, so it comes out quieter."""
    speech = speech_like(8.0, RATE, seed=4)[0]
    out, report = normalise_loudness(speech, RATE, -6.0)
    assert TRUE_PEAK_CEILING - 0.01 <= true_peak(out, RATE) <= TRUE_PEAK_CEILING
    assert integrated_loudness(out, RATE) < -6.5


def test_the_true_peak_sees_between_the_samples():
    """A sine at a quarter of the rate sampled at its zero crossings +-45 degrees: every sample is 0.707 of the
    peak, the oversampled signal finds the peak (about +3 dB over the sample peak)."""
    n = np.arange(RATE)
    wave = np.sin(2 * np.pi * (RATE / 4) * n / RATE + np.pi / 4).astype(np.float32)
    sample_peak = 20 * np.log10(np.abs(wave).max())
    assert true_peak(wave, RATE) - sample_peak == pytest.approx(3.01, abs=0.2)


def test_silence_is_left_as_it_is():
    out, report = normalise_loudness(np.zeros(RATE, np.float32), RATE, -16.0)
    assert not out.any() and report.gain_db == 0.0


@pytest.mark.parametrize("value", [-41.0, -4.0, float("nan")])
def test_a_loudness_outside_its_range_is_named(value):
    with pytest.raises(InvalidInput, match="loudness"):
        GenerationConfig(loudness=value).validate()


def test_the_engine_delivers_at_the_loudness_asked(engine):
    plain = engine.generate("A sentence for the loudness check, long enough to be measured.", seed=1, num_step=4)
    loud = engine.generate("A sentence for the loudness check, long enough to be measured.", seed=1, num_step=4,
                           loudness=-20.0)
    for a, b in zip(plain.codes, loud.codes):
        np.testing.assert_array_equal(a, b)           # the same generation, only the delivery differs
    assert abs(integrated_loudness(loud.audio, RATE) - -20.0) <= 0.5 or true_peak(loud.audio, RATE) >= -1.01
    assert true_peak(loud.audio, RATE) <= TRUE_PEAK_CEILING
    assert loud.config.loudness == -20.0 and plain.config.loudness is None


def test_the_command_lines_and_the_http_api_take_the_loudness(engine, tmp_path):
    import argparse
    import io

    import soundfile
    from omnivoice_demo.settings.generation import add_config_arguments, config_from_arguments
    from omnivoice_demo.studio import VoiceLibrary
    from tests.support.api_client import router_client

    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    assert config_from_arguments(parser.parse_args(["--loudness", "-16"])).loudness == -16.0   # synth and batch
    assert config_from_arguments(parser.parse_args([])).loudness is None

    client = router_client(engine, VoiceLibrary(tmp_path / "voices"))
    body = {"input": "A sentence for the loudness check, long enough to be measured.", "seed": 1, "num_step": 4,
            "loudness": -20, "stream": False, "response_format": "wav"}
    response = client.post("/v1/audio/speech", json=body)
    assert response.status_code == 200, response.text
    audio, rate = soundfile.read(io.BytesIO(response.content), dtype="float32")
    assert true_peak(audio, rate) <= TRUE_PEAK_CEILING + 0.05          # 16-bit rounding of the file
    streamed = client.post("/v1/audio/speech", json=dict(body, stream=True))
    assert streamed.status_code == 400 and "loudness" in streamed.json()["error"]["message"]
    bad = client.post("/v1/audio/speech", json=dict(body, loudness=3))
    assert bad.status_code == 400 and "loudness" in bad.json()["error"]["message"]


def test_each_ssml_segment_is_brought_to_the_loudness_asked(engine, monkeypatch):
    """Planted levels (random weights decode to no level worth measuring): the codec's audio is speech-like for the
    first segment and a square wave for the second.  The post-processing peak-normalises each to 0.5, where the
    speech (crest factor about 12 dB) is about 10 LU quieter than the square wave (3 dB).  Without ``loudness`` the
    two levels stay apart; with it each segment's own stretch lands on the target (within 1 LU), not only the
    whole file's average, and the codes are the same."""
    decode = engine._require_codec().decode
    planted_kinds = []

    def planted(tokens):
        samples = decode(tokens).shape[-1]
        planted_kinds.append("speech" if len(planted_kinds) % 2 == 0 else "square")
        if planted_kinds[-1] == "speech":
            return speech_like(samples / RATE + 1e-6, RATE, seed=3)[0][:samples]
        return (0.3 * np.sign(np.sin(2 * np.pi * 220 * np.arange(samples) / RATE))).astype(np.float32)

    monkeypatch.setattr(engine.codec, "decode", planted)
    markup = ("<speak><p>A first sentence, read quietly by the planted codec, long enough to be measured.</p>"
              "<break time='400ms'/><p>A second sentence, read loudly by the same codec, long enough as well.</p>"
              "</speak>")

    def stretches(result):
        return [integrated_loudness(result.audio[s["start_sample"]:s["end_sample"]], RATE) for s in result.segments]

    plain = engine.generate(markup, ssml=True, seed=1, num_step=2, postprocess=False)
    loud = engine.generate(markup, ssml=True, seed=1, num_step=2, postprocess=False, loudness=-23.0)
    assert planted_kinds == ["speech", "square"] * 2 and len(plain.segments) == 2
    for a, b in zip(plain.codes, loud.codes):
        np.testing.assert_array_equal(a, b)
    quiet, strong = stretches(plain)
    assert strong - quiet > 8, (quiet, strong)                   # unset: the planted levels stay apart
    for measured in stretches(loud):
        assert abs(measured - -23.0) <= 1.0, stretches(loud)     # set: each segment on the target
    assert true_peak(loud.audio, RATE) <= TRUE_PEAK_CEILING
