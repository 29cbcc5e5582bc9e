"""Every case of issue 12, replayed through the engine and through the running app.

The bomb files are built here from numbers (``bombs.py``).  Each case must end
in a clear error (an ``InvalidInput`` naming the problem; through the app a
``gradio_client`` ``AppError`` with that message, never "internal error") or,
for a legitimate input that used to be a bomb (a 12001 Hz clip), in a normal
result; memory (RSS, sampled while the case runs) stays within +300 MB of the
start and comes back; and a normal request is served right after.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import psutil
import pytest

from tests.support import bombs
from omnivoice_demo.settings.limits import Limits
from omnivoice_demo.errors import InvalidInput

RSS_BUDGET_MB = 300
CASE_SECONDS = 60  # a guard against a hang, not a speed claim


class PeakRss:
    """Samples a process's RSS every 10 ms while the ``with`` block runs."""

    def __init__(self, pid: int):
        self.process = psutil.Process(pid)
        self.start = self.peak = self.process.memory_info().rss / 2**20
        self._stop = threading.Event()

    def _run(self):
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.process.memory_info().rss / 2**20)
            except psutil.NoSuchProcess:
                return
            time.sleep(0.01)

    def __enter__(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def now(self) -> float:
        return self.process.memory_info().rss / 2**20


def settles(meter: PeakRss, baseline: float, seconds: float = 10.0) -> float:
    """RSS once it is back within the budget of ``baseline`` (or after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while meter.now() > baseline + RSS_BUDGET_MB and time.monotonic() < deadline:
        time.sleep(0.2)
    return meter.now()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return bombs.build_all(tmp_path_factory.mktemp("bombs"))


@pytest.fixture(scope="module")
def engine(tiny_fp32_folder):
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    return OmniVoiceEngine(tiny_fp32_folder, limits=Limits())


def _voice(engine, path):
    return engine.generate("Hello.", voice=path, num_step=1, seed=0)


# case -> (call on the engine, what the error says; None: the input is legitimate and must be served)
ENGINE_CASES = {
    "wav_12001hz": (lambda e, f: e.clone_voice(f["wav_12001hz"], transcript="hello there, this is a test."), None),
    "wav_claims_2147483647hz": (lambda e, f: e.clone_voice(f["wav_claims_2147483647hz"], transcript="hi."),
                                "2147483647 Hz; supported rates"),
    "codec_1009_to_1029hz_x5": (lambda e, f: [e.encode(*e.load_audio(f[k], "codec"))
                                              for k in f if k.startswith("wav_10")], "1009 Hz; supported rates"),
    "flac_hour_of_silence": (lambda e, f: e.clone_voice(f["flac_hour_of_silence"], transcript="hi."),
                             "3600.0 s long; the limit is 60 s"),
    "flac_hour_to_codec": (lambda e, f: e.load_audio(f["flac_hour_of_silence"], "codec"), "the limit is 60 s"),
    "decode_zeros_8x30000": (lambda e, f: e.decode(np.zeros((8, 30000), dtype=np.int64)), "max_decode_frames"),
    "voice_npz_bomb": (lambda e, f: _voice(e, f["voice_npz_bomb"]), "limit is 12000 values .max_reference_seconds"),
    "text_4000_a": (lambda e, f: e.generate("a" * 4000, num_step=1), "max_text_chars"),
    "text_30000_a": (lambda e, f: e.generate("a" * 30000, num_step=1), "max_text_chars"),
    "text_100000_punctuated": (lambda e, f: e.prepare(bombs.PUNCTUATED_100K), "max_text_chars"),
    "speed_10": (lambda e, f: e.generate("Hello there.", num_step=1, speed=10.0), "speed must be between 0.5 and 2"),
    "steps_over_limit": (lambda e, f: e.prepare("Hello.", num_step=200), "max_steps"),
    "chunk_duration_0": (lambda e, f: e.prepare("Hello.", chunk_duration=0), "chunk_duration must be between"),
    "duration_over_limit": (lambda e, f: e.prepare("Hello.", duration=500), "max_audio_seconds"),
    "voice_rms_nan": (lambda e, f: _voice(e, f["voice_rms_nan"]), "rms nan"),
    "voice_rms_negative": (lambda e, f: _voice(e, f["voice_rms_negative"]), "rms -5.0"),
    "voice_float_codes": (lambda e, f: _voice(e, f["voice_float_codes"]), "type float64"),
    "voice_bool_codes": (lambda e, f: _voice(e, f["voice_bool_codes"]), "type bool"),
    "voice_meta_list": (lambda e, f: _voice(e, f["voice_meta_list"]), "meta is a list"),
    "voice_no_transcript": (lambda e, f: _voice(e, f["voice_no_transcript"]), "no transcript"),
}


@pytest.mark.parametrize("case", list(ENGINE_CASES))
def test_engine_refuses_each_bomb_cleanly(engine, files, case):
    call, message = ENGINE_CASES[case]
    with PeakRss(psutil.Process().pid) as meter:
        started = time.monotonic()
        if message is None:
            call(engine, files)
        else:
            with pytest.raises(InvalidInput, match=message) as caught:
                call(engine, files)
            assert "\n" not in str(caught.value).strip() and "/tmp" not in str(caught.value)
        took = time.monotonic() - started
    assert took < CASE_SECONDS
    assert meter.peak - meter.start < RSS_BUDGET_MB, (case, meter.start, meter.peak)
    assert settles(meter, meter.start) < meter.start + RSS_BUDGET_MB
    served = engine.generate("A normal request right after.", num_step=2, seed=1)
    assert served.audio.size > 0


def test_unpunctuated_text_within_the_limits_is_served_in_chunks(engine):
    result = engine.generate("a " * 700, num_step=1, seed=0, chunk_threshold=5.0, chunk_duration=5.0)
    assert len(result.chunks) > 1


def test_seed_range_is_exact(engine):
    assert engine.prepare("Hi.", seed=2**63 - 1).config.seed == 2**63 - 1
    assert engine.prepare("Hi.", seed=2**53 + 1).config.seed == 2**53 + 1


# --- through the running app -------------------------------------------------------------------------

gradio_client = pytest.importorskip("gradio_client")


@pytest.fixture(scope="module")
def app(tiny_fp32_folder, tmp_path_factory):
    from tests.support.app_server import AppProcess, wait_model_ready
    from gradio_client import Client

    server = AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32"], tmp_path_factory.mktemp("app"))
    try:
        server.wait_serving()
        client = Client(server.url, verbose=False)
        wait_model_ready(client)
        yield server, client
    finally:
        server.stop()


def _clone(client, path, **extra):
    from gradio_client import handle_file

    return client.predict(reference=handle_file(str(path)), transcript="hello there, this is a test.",
                          text="Hello.", consent=True, num_step=1, api_name="/clone", **extra)


def _codec(client, path):
    from gradio_client import handle_file

    return client.predict(audio=handle_file(str(path)), api_name="/codec")


def _decode(client, path):
    from gradio_client import handle_file

    return client.predict(codes=handle_file(str(path)), api_name="/decode")


def _speak(client, text, **extra):
    return client.predict(text=text, num_step=1, seed=0, api_name="/speak", **extra)


APP_CASES = {
    "wav_12001hz": (lambda c, f: _clone(c, f["wav_12001hz"]), None),
    "wav_claims_2147483647hz": (lambda c, f: _clone(c, f["wav_claims_2147483647hz"]), "supported rates"),
    "codec_1009_to_1029hz_x5": (lambda c, f: [_codec(c, f[k]) for k in f if k.startswith("wav_10")],
                                "supported rates"),
    "flac_hour_of_silence_clone": (lambda c, f: _clone(c, f["flac_hour_of_silence"]), "3600.0 s long"),
    "flac_hour_of_silence_codec": (lambda c, f: _codec(c, f["flac_hour_of_silence"]), "3600.0 s long"),
    "decode_zeros_8x30000": (lambda c, f: _decode(c, f["codes_zeros_8x30000"]), "max_decode_frames"),
    "text_4000_a": (lambda c, f: _speak(c, "a" * 4000), "max_text_chars"),
    "text_30000_a": (lambda c, f: _speak(c, "a" * 30000), "max_text_chars"),
    "text_100000_punctuated": (lambda c, f: _speak(c, bombs.PUNCTUATED_100K), "max_text_chars"),
    "speed_10": (lambda c, f: _speak(c, "Hello there.", speed=10.0), "speed must be between"),
}


@pytest.mark.slow
def test_app_refuses_each_bomb_and_keeps_serving(app, files):
    from gradio_client.exceptions import AppError

    server, client = app
    baseline = PeakRss(server.process.pid).now()
    outcomes = {}
    for case, (call, message) in APP_CASES.items():
        with PeakRss(server.process.pid) as meter:
            started = time.monotonic()
            try:
                call(client, files)
                outcomes[case] = "served"
            except AppError as exc:
                outcomes[case] = str(exc)
            took = time.monotonic() - started
        if message is None:
            assert outcomes[case] == "served", (case, outcomes[case])
        else:
            assert message in outcomes[case] and "internal error" not in outcomes[case].lower(), (case, outcomes[case])
            assert "/tmp" not in outcomes[case]
        print(f"app {case}: {took:.1f} s, server peak +{meter.peak - baseline:.0f} MB over {baseline:.0f} MB, "
              f"{outcomes[case][:100]}")
        assert took < CASE_SECONDS, case
        assert meter.peak - baseline < RSS_BUDGET_MB, (case, baseline, meter.peak)
        assert settles(meter, baseline) < baseline + RSS_BUDGET_MB, case
        assert client.predict(text="Served right after.", num_step=2, seed=1, api_name="/speak")
    assert server.process.poll() is None, server.log_text()
