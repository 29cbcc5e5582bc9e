"""Speaker similarity: the cosine of two clips' embeddings from an ONNX speaker-verification model.

The model is resolved like the speech recogniser (``resolve_speaker_model``): an
``.onnx`` file, a folder holding one, or a Hub repo id (``owner/name``, or
``owner/name:path/in/repo.onnx`` when the repo holds several graphs), downloaded
into the Hugging Face cache and checked against the Hub's sizes and sha256.  It is
only resolved and loaded when a speaker model is asked for.

Two kinds of graph are understood, told apart by the rank of their first input:

* ``[batch, frames, bins]`` (WeSpeaker's ResNet34 / ECAPA exports): Kaldi
  filterbank features of the 16 kHz clip scaled to 16-bit range (``kaldi_fbank``,
  the computation of ``torchaudio.compliance.kaldi.fbank`` with WeSpeaker's
  settings: 25 ms frames every 10 ms, no dither), mean-normalised over time;
* ``[batch, samples]``: the 16 kHz waveform itself (WavLM-style verifiers).

The first output, flattened, is the embedding.
"""

from __future__ import annotations

import json
import os
import pathlib
from functools import lru_cache
from typing import Optional

import numpy as np

from ..errors import ModelFolderError, ModelNotAvailable
from ..audio.resample import resample

SPEAKER_RATE = 16000
FRAME_LENGTH, FRAME_SHIFT, FFT_SIZE = 400, 160, 512  # 25 ms, 10 ms at 16 kHz; Kaldi rounds the FFT up
PREEMPHASIS, LOW_FREQ = 0.97, 20.0
DEFAULT_BINS = 80
FLOAT_EPS = float(np.finfo(np.float32).eps)


def kaldi_fbank(wav_16k: np.ndarray, bins: int = DEFAULT_BINS) -> np.ndarray:
    """Log mel filterbank ``[frames, bins]`` as Kaldi computes it (povey window, pre-emphasis 0.97,
    DC removed per frame, power spectrum, mel banks from 20 Hz to Nyquist, snip edges)."""
    wav = np.asarray(wav_16k, dtype=np.float64).reshape(-1)
    if wav.shape[0] < FRAME_LENGTH:
        wav = np.pad(wav, (0, FRAME_LENGTH - wav.shape[0]))
    count = 1 + (wav.shape[0] - FRAME_LENGTH) // FRAME_SHIFT
    frames = wav[np.arange(FRAME_LENGTH)[None, :] + FRAME_SHIFT * np.arange(count)[:, None]]
    frames = frames - frames.mean(axis=1, keepdims=True)
    previous = np.concatenate([frames[:, :1], frames[:, :-1]], axis=1)
    frames = frames - PREEMPHASIS * previous
    n = np.arange(FRAME_LENGTH)
    frames = frames * (0.5 - 0.5 * np.cos(2 * np.pi * n / (FRAME_LENGTH - 1))) ** 0.85
    power = np.abs(np.fft.rfft(frames, n=FFT_SIZE, axis=1)) ** 2
    energies = power @ _kaldi_mel_banks(bins).T
    return np.log(np.maximum(energies, FLOAT_EPS)).astype(np.float32)


@lru_cache(maxsize=4)
def _kaldi_mel_banks(bins: int) -> np.ndarray:
    def mel(f):
        return 1127.0 * np.log(1.0 + np.asarray(f, dtype=np.float64) / 700.0)

    low, high = mel(LOW_FREQ), mel(SPEAKER_RATE / 2)
    delta = (high - low) / (bins + 1)
    fft_mel = mel(np.arange(FFT_SIZE // 2) * SPEAKER_RATE / FFT_SIZE)
    banks = np.zeros((bins, FFT_SIZE // 2 + 1))
    for b in range(bins):
        left, centre, right = low + b * delta, low + (b + 1) * delta, low + (b + 2) * delta
        up, down = (fft_mel - left) / (centre - left), (right - fft_mel) / (right - centre)
        banks[b, :-1] = np.maximum(0.0, np.minimum(up, down))
    return banks


class SpeakerEmbedder:
    """An ONNX speaker-verification graph: ``embed(audio, rate)`` -> a vector; ``similarity(a, b)``."""

    def __init__(self, path, provider: str = "cpu", threads: Optional[int] = None, identity: str = ""):
        import onnxruntime as ort

        from ..runtime.sessions import providers_for, session_options

        self.path = pathlib.Path(path)
        self.identity = identity or self.path.name
        try:
            self.session = ort.InferenceSession(str(self.path), session_options(threads),
                                                providers=providers_for(provider))
        except Exception as exc:  # onnxruntime's own errors: a broken or foreign file
            raise ModelFolderError(f"The speaker model {self.path.name} cannot be loaded by onnxruntime "
                                   f"({type(exc).__name__}); give a speaker-verification .onnx graph.") from None
        first = self.session.get_inputs()[0]
        self.input_name, self.rank = first.name, len(first.shape)
        if self.rank not in (2, 3):
            raise ModelFolderError(f"The speaker model {self.path.name} takes a rank-{self.rank} input; expected "
                                   "features [batch, frames, bins] or a waveform [batch, samples].")
        self.bins = first.shape[2] if self.rank == 3 and isinstance(first.shape[2], int) else DEFAULT_BINS

    def embed(self, audio: np.ndarray, sample_rate: int) -> np.ndarray:
        wav = np.asarray(audio, dtype=np.float32).reshape(1, -1)
        if sample_rate != SPEAKER_RATE:
            wav = resample(wav, sample_rate, SPEAKER_RATE)
        if self.rank == 2:
            feed = wav.astype(np.float32)
        else:
            features = kaldi_fbank(wav[0] * 32768.0, self.bins)
            feed = (features - features.mean(axis=0, keepdims=True))[None].astype(np.float32)
        return np.asarray(self.session.run(None, {self.input_name: feed})[0], dtype=np.float64).reshape(-1)


def resolve_speaker_model(spec: str | os.PathLike, offline: Optional[bool] = None, progress=None,
                          cache: Optional[str | os.PathLike] = None) -> tuple[pathlib.Path, str]:
    """(path of the .onnx graph, an identity for result keys) of ``spec``: a file, a folder or a Hub repo."""
    from ..storage.cache import default_cache_dir
    from ..hub.download import HubSettings
    from ..hub.progress import Reporter

    path = pathlib.Path(os.path.expanduser(str(spec)))
    if path.is_file():
        return path, f"{path.resolve()}|{path.stat().st_size}"
    if path.is_dir():
        graph = path / _one_graph(sorted(p.relative_to(path).as_posix() for p in path.rglob("*.onnx")), str(spec))
        return graph, f"{graph.resolve()}|{graph.stat().st_size}"
    repo_id, _, inner = str(spec).partition(":")
    if repo_id.count("/") != 1 or repo_id.startswith((".", "/", "~")):
        raise ModelNotAvailable(f"The speaker model {spec} is neither an .onnx file, a folder nor a Hub repo id.")
    return _from_hub(repo_id, inner or None, HubSettings.from_environment(offline),
                     pathlib.Path(cache) if cache else default_cache_dir(), Reporter(progress))


def _one_graph(graphs: list[str], where: str) -> str:
    if len(graphs) == 1:
        return graphs[0]
    if not graphs:
        raise ModelNotAvailable(f"{where} holds no .onnx graph; give a speaker-verification ONNX model.")
    raise ModelNotAvailable(f"{where} holds several .onnx graphs ({', '.join(graphs[:4])}); name one: "
                            f"{where}:{graphs[0]} (a repo) or the file's path.")


def _from_hub(repo_id: str, inner: Optional[str], settings, cache: pathlib.Path, reporter) -> tuple[pathlib.Path, str]:
    from ..hub.cache import RepoCache
    from ..hub.download import HubRepo, check_against_listing

    store = RepoCache(cache, "speaker", repo_id, settings.hf_cache)
    hub = HubRepo(repo_id, None, "onnx", settings, store, reporter)
    commit, listing = hub.locate(f"the speaker model {repo_id}")
    if listing is None:
        raise ModelNotAvailable(f"The listing of {repo_id} is not cached; run once online to download it.")
    graph = inner or _one_graph(sorted(p for p in listing if p.endswith(".onnx")), repo_id)
    if graph not in listing:
        raise ModelNotAvailable(f"{repo_id} has no file {graph}.")
    files = [graph] + [p for p in (graph + "_data", graph + ".data") if p in listing]
    snapshot = hub.download(commit, files, f"speaker model {repo_id}@{commit[:8]}", listing)
    marker = store.folder(commit, "checked-speaker.json")
    checked = json.loads(marker.read_text(encoding="utf-8")) if marker.is_file() else {}
    for rel in files:
        if checked.get(rel) != listing[rel].size:
            problem = check_against_listing(snapshot / rel, listing[rel], "the Hugging Face cache")
            if problem:
                raise ModelFolderError(f"{problem}; delete {snapshot / rel} and run again to download it again.")
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({rel: listing[rel].size for rel in files}), encoding="utf-8")
    return snapshot / graph, f"{repo_id}@{commit}:{graph}"
