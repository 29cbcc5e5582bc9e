"""The Higgs Audio V2 codec on ONNX Runtime: 24 kHz audio <-> 8 x T codes.

``AudioCodec(codec_dir)`` opens the four graphs written by
``convert.codec.export_codec`` (the layout of the published community export):

* encode: ``acoustic_encoder`` (24 kHz waveform) and ``semantic_encoder``
  (the same audio resampled to 16 kHz by ``omnivoice_demo.audio.resample``, which
  reproduces ``torchaudio.functional.resample``) feed ``quantizer_encoder``,
  which returns the codes;
* decode: ``higgs_decoder`` turns codes back into 24 kHz audio, 960 samples
  per frame.

Only onnxruntime and NumPy are imported.  Input names are read from the
sessions, so a folder whose graphs name their inputs differently (but keep the
order and shapes) works as well.
"""

from __future__ import annotations

import pathlib
from typing import Iterable, Sequence

import numpy as np
import onnxruntime as ort

from .. import constants
from ..errors import InvalidInput, ModelFolderError
from ..storage.manifest import CODEC_GRAPHS
from ..runtime.sessions import open_session, run_options
from .resample import resample

__all__ = ["AudioCodec", "CODEC_GRAPH_FILES"]

#: Graph roles -> file names inside the codec folder (the manifest's paths, less ``audio_tokenizer/``).
CODEC_GRAPH_FILES = {role: pathlib.PurePosixPath(rel).name for role, rel in CODEC_GRAPHS.items()}


class AudioCodec:
    """Encode 24 kHz mono audio to codes ``[8, T]`` and decode codes back to audio.

    ``codec_dir`` is the ``audio_tokenizer/`` folder of a model folder.
    ``providers`` and ``session_options`` are passed to every
    ``onnxruntime.InferenceSession``.
    """

    sample_rate = constants.SAMPLE_RATE
    semantic_sample_rate = constants.SEMANTIC_SAMPLE_RATE
    hop_length = constants.HOP_LENGTH
    frame_rate = constants.FRAME_RATE
    num_codebooks = constants.NUM_CODEBOOKS
    codebook_size = constants.CODEBOOK_SIZE

    def __init__(
        self,
        codec_dir: str | pathlib.Path,
        providers: Sequence[str] | Iterable = ("CPUExecutionProvider",),
        session_options: ort.SessionOptions | None = None,
    ):
        self.codec_dir = pathlib.Path(codec_dir)
        missing = [f for f in CODEC_GRAPH_FILES.values() if not (self.codec_dir / f).is_file()]
        if missing:
            raise ModelFolderError(
                f"{self.codec_dir} lacks the codec graph(s) {', '.join(missing)}; "
                "export them with convert.codec.export_codec or download the model folder again."
            )
        self._providers, self._options = list(providers), session_options
        self.sessions: dict[str, ort.InferenceSession] = {}
        self.run_options = run_options()  # the arena gives back what a long decode or encode used
        # the decoder serves every generation; the three encoder graphs (most of the codec's
        # weights) are loaded on the first encode, so text-to-speech alone never holds them
        self._session("higgs_decoder")

    def _session(self, role: str) -> ort.InferenceSession:
        if role not in self.sessions:
            self.sessions[role] = open_session(self.codec_dir / CODEC_GRAPH_FILES[role], self._providers,
                                               self._options)
        return self.sessions[role]

    def _input(self, role: str) -> str:
        return self._session(role).get_inputs()[0].name

    def _quantizer_inputs(self) -> tuple[str, str]:
        """(acoustic, semantic) input names of quantizer_encoder, by name when the names say which is which."""
        names = [i.name for i in self._session("quantizer_encoder").get_inputs()]
        if len(names) != 2:
            raise ModelFolderError(f"{CODEC_GRAPH_FILES['quantizer_encoder']} in {self.codec_dir} must take 2 inputs, "
                                   f"it takes {names}; download or build the model folder again.")
        semantic_first = "semantic" in names[0].lower() and "acoustic" not in names[0].lower()
        return (names[1], names[0]) if semantic_first else (names[0], names[1])

    # ------------------------------------------------------------------ encode

    def encode(self, audio_24k: np.ndarray) -> np.ndarray:
        """Codes ``int64 [8, T]`` of mono 24 kHz audio whose length is a multiple of 960 (T = N / 960).

        Trim first, as the reference's ``create_voice_clone_prompt`` does:
        ``audio = audio[: len(audio) // 960 * 960]``.
        """
        return self.encode_batch(self._check_audio(audio_24k)[None, :])[0]

    def encode_batch(self, audio_24k: np.ndarray) -> np.ndarray:
        """Codes ``int64 [B, 8, T]`` of a batch ``[B, N]`` of equal-length clips (N a multiple of 960)."""
        audio = np.asarray(audio_24k)
        if audio.ndim != 2:
            raise InvalidInput(f"encode_batch expects audio of shape [batch, samples], got {audio.shape}")
        for row in audio:
            self._check_audio(row)
        audio = np.ascontiguousarray(audio, dtype=np.float32)
        acoustic = self._session("acoustic_encoder").run(None, {self._input("acoustic_encoder"): audio[:, None, :]},
                                                         self.run_options)[0]
        audio_16k = resample(audio, self.sample_rate, self.semantic_sample_rate)
        semantic = self._session("semantic_encoder").run(
            None, {self._input("semantic_encoder"): np.ascontiguousarray(audio_16k)}, self.run_options)[0]
        if acoustic.shape[2] != semantic.shape[2]:
            raise RuntimeError(
                f"acoustic ({acoustic.shape[2]}) and semantic ({semantic.shape[2]}) frame counts differ "
                f"for {audio.shape[1]} samples; the codec graphs do not match each other"
            )
        name_a, name_s = self._quantizer_inputs()
        codes = self._session("quantizer_encoder").run(
            None, {name_a: acoustic.astype(np.float32, copy=False),
                   name_s: semantic.astype(np.float32, copy=False)}, self.run_options)[0]
        # [Q, B, T] -> [B, Q, T]
        return np.ascontiguousarray(codes.transpose(1, 0, 2).astype(np.int64, copy=False))

    def _check_audio(self, audio: np.ndarray) -> np.ndarray:
        audio = np.asarray(audio)
        if audio.ndim != 1:
            raise InvalidInput(
                f"encode expects mono audio as a 1-D array of samples at {self.sample_rate} Hz, "
                f"got shape {audio.shape}; mix channels down first (mean over channels)"
            )
        if not np.issubdtype(audio.dtype, np.floating):
            raise InvalidInput(f"audio must be floating point (-1..1), got {audio.dtype}")
        n = audio.shape[0]
        if n == 0 or n % self.hop_length:
            raise InvalidInput(
                f"audio length {n} is not a positive multiple of {self.hop_length} samples "
                f"(one codec frame at {self.sample_rate} Hz); trim it as the reference does: "
                f"audio[:len(audio) // {self.hop_length} * {self.hop_length}]"
            )
        if not np.isfinite(audio).all():
            raise InvalidInput("audio contains NaN or infinite samples")
        return audio

    # ------------------------------------------------------------------ decode

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Audio (1-D float32, 960*T samples at 24 kHz) of codes ``[8, T]`` (values 0..1023)."""
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[0] != self.num_codebooks:
            raise InvalidInput(f"decode expects codes of shape [{self.num_codebooks}, frames], got {codes.shape}")
        return self.decode_batch(codes[None])[0]

    def decode_batch(self, codes: np.ndarray) -> np.ndarray:
        """Audio ``float32 [B, 960*T]`` of codes ``[B, 8, T]``."""
        codes = np.asarray(codes)
        if codes.ndim != 3 or codes.shape[1] != self.num_codebooks:
            raise InvalidInput(
                f"decode_batch expects codes of shape [batch, {self.num_codebooks}, frames], got {codes.shape}")
        if codes.shape[2] == 0:
            raise InvalidInput("codes have no frames")
        if not np.issubdtype(codes.dtype, np.integer):
            raise InvalidInput(f"codes must be integers, got {codes.dtype}")
        low, high = int(codes.min()), int(codes.max())
        if low < 0 or high >= self.codebook_size:
            raise InvalidInput(
                f"codes must lie in 0..{self.codebook_size - 1}, got values in {low}..{high} "
                f"(1024 is the mask id: every position must be decoded before the codec runs)"
            )
        feed = np.ascontiguousarray(codes.transpose(1, 0, 2), dtype=np.int64)  # [8, B, T]
        audio = self._session("higgs_decoder").run(None, {self._input("higgs_decoder"): feed}, self.run_options)[0]
        return np.ascontiguousarray(audio[:, 0, :], dtype=np.float32)
