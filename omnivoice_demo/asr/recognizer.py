"""Speech recognition with Whisper on ONNX Runtime: audio -> ``Transcript``.

``SpeechRecognizer(folder).transcribe(audio, sample_rate)`` computes what
``WhisperForConditionalGeneration.generate`` (the reference's
``pipeline("automatic-speech-recognition")``) computes for a multilingual model
with greedy decoding, token for token:

1. the clip is mixed to mono and resampled to 16 kHz (``omnivoice_demo.audio.resample``,
   the port of ``torchaudio.functional.resample`` that the pipeline uses);
2. log-mel features of each 30 s window (``features.log_mel``), the encoder;
3. unless a language is given, it is detected the way ``generate`` does:
   the logits after ``<|startoftranscript|>``, restricted to the language tokens,
   argmax;
4. the prompt ``<|startoftranscript|> <|lang|> <|transcribe|> <|notimestamps|>``,
   then greedy decoding with the KV cache, with ``generate``'s logits processors
   (``suppress_tokens`` always, ``begin_suppress_tokens`` at the first new token),
   until end-of-text or ``max_length`` new tokens (at most 448 in all);
5. text = the new tokens below end-of-text, decoded and stripped.

Audio longer than one window (30 s) is cut into windows at the quietest
moment of the last ``CUT_SEARCH_SECONDS`` of each window and the windows'
texts are joined.  (``generate``'s own long-form mode needs timestamp
decoding; a transcript of a cloning reference, which the reference trims to
15-20 s first, never needs it.)

The graphs are those of ``folder.py``'s layout (split or merged decoder).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import threading
import time
from typing import Optional, Sequence

import numpy as np

from ..audio.processing import frame_power
from ..errors import InvalidInput, ModelFolderError, excerpt
from ..runtime.sessions import open_session, providers_for, session_options
from .features import log_mel
from .folder import check_folder

WHISPER_RATE = 16000
CUT_SEARCH_SECONDS = 5.0
CUT_FRAME_SECONDS = 0.02
DEFAULT_MAX_SECONDS = 600.0


@dataclasses.dataclass(frozen=True)
class Transcript:
    """What was said in a clip: ``text`` (stripped), ``language`` (Whisper's code, e.g. "en"),
    ``seconds`` (time spent recognising), and per window the generated token ids."""

    text: str
    language: Optional[str]
    seconds: float
    audio_seconds: float = 0.0
    tokens: tuple = ()


def _read_json(folder: pathlib.Path, name: str) -> dict:
    try:
        return json.loads((folder / name).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelFolderError(f"{name} in the speech recogniser folder {folder} cannot be read ({exc}); "
                               "download or build the folder again.") from exc


class SpeechRecognizer:
    """A Whisper folder (``convert.whisper`` or an ``onnx-community/whisper-*`` snapshot) on ONNX Runtime."""

    def __init__(self, folder, precision: str = "int8", provider: str = "cpu", threads: Optional[int] = None,
                 verify: str = "size", max_seconds: float = DEFAULT_MAX_SECONDS):
        from tokenizers import Tokenizer

        self.folder = pathlib.Path(folder)
        self.precision = precision
        self.max_seconds = float(max_seconds)
        graphs = check_folder(self.folder, precision, checksums=verify == "sha256")
        config = _read_json(self.folder, "config.json")
        generation = _read_json(self.folder, "generation_config.json")
        self.preprocessor = _read_json(self.folder, "preprocessor_config.json")
        try:
            self.layers = int(config["decoder_layers"])
            self.heads = int(config["decoder_attention_heads"])
            self.head_dim = int(config["d_model"]) // self.heads
            self.max_length = int(generation.get("max_length") or 448)
            self.max_target_positions = int(config["max_target_positions"])
            self.start_id = int(generation["decoder_start_token_id"])
            eos = generation["eos_token_id"]
            self.eos_id = int(eos[0] if isinstance(eos, list) else eos)
            self.lang_to_id = {k: int(v) for k, v in generation["lang_to_id"].items()}
            self.transcribe_id = int(generation["task_to_id"]["transcribe"])
            self.no_timestamps_id = int(generation["no_timestamps_token_id"])
            self.suppress = np.array(generation.get("suppress_tokens") or [], dtype=np.int64)
            self.begin_suppress = np.array(generation.get("begin_suppress_tokens") or [], dtype=np.int64)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFolderError(f"The speech recogniser folder {self.folder} lacks a multilingual Whisper "
                                   f"setting ({exc}); download or build it again.") from exc
        self.id_to_lang = {v: k.strip("<|>") for k, v in self.lang_to_id.items()}
        self.lang_ids = np.array(sorted(self.lang_to_id.values()), dtype=np.int64)
        self.n_mels = int(self.preprocessor.get("feature_size", 80))
        self.window = int(self.preprocessor.get("n_samples", 480000))
        try:
            self.tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
            options, providers = session_options(threads), providers_for(provider)
            self.sessions = {role: open_session(self.folder / rel, providers, options)
                             for role, rel in graphs.items()}
        except InvalidInput:
            raise
        except Exception as exc:  # onnxruntime and tokenizers raise their own types
            raise ModelFolderError(f"The speech recogniser in {self.folder} cannot be loaded "
                                   f"({type(exc).__name__}: {exc}); download or build it again.") from exc
        self.merged = "decoder_merged" in self.sessions
        self._lock = threading.Lock()  # one transcription at a time: it already uses every thread given

    # --- audio -------------------------------------------------------------------

    def _prepare_audio(self, audio, sample_rate: int) -> np.ndarray:
        wav = np.asarray(audio)
        if wav.ndim == 2:
            if wav.shape[0] > 16 and wav.shape[1] <= 16:
                raise InvalidInput(f"The audio has shape {wav.shape}: pass it channels first ([channels, samples]).")
            wav = wav.mean(axis=0)
        if wav.ndim != 1 or wav.size == 0:
            raise InvalidInput(f"The audio to transcribe must be [samples] or [channels, samples] with samples, "
                               f"got shape {wav.shape}.")
        if not np.issubdtype(wav.dtype, np.floating):
            raise InvalidInput(f"The audio to transcribe must be floating point in [-1, 1], got {wav.dtype}.")
        if not isinstance(sample_rate, (int, np.integer)) or not 1000 <= int(sample_rate) <= 384000:
            raise InvalidInput(f"sample_rate must be an integer from 1000 to 384000, got {excerpt(sample_rate)}.",
                               param="sample_rate")
        seconds = wav.shape[0] / int(sample_rate)
        if seconds > self.max_seconds:
            raise InvalidInput(f"The audio to transcribe is {seconds:.1f} s long; the recogniser's limit is "
                               f"{self.max_seconds:.0f} s. Trim it.")
        wav = wav.astype(np.float32)
        if not np.isfinite(wav).all():
            raise InvalidInput("The audio to transcribe contains NaN or infinite samples.")
        if int(sample_rate) != WHISPER_RATE:
            from ..audio.resample import resample

            wav = resample(wav[None, :], int(sample_rate), WHISPER_RATE)[0]
        return wav

    def windows(self, wav_16k: np.ndarray) -> list[np.ndarray]:
        """Cut 16 kHz audio into windows of at most 30 s, each cut at the quietest 20 ms of its last 5 s."""
        pieces, start, total = [], 0, wav_16k.shape[0]
        frame = int(CUT_FRAME_SECONDS * WHISPER_RATE)
        while total - start > self.window:
            search = wav_16k[start + self.window - int(CUT_SEARCH_SECONDS * WHISPER_RATE):start + self.window]
            energy = frame_power(search, frame)
            cut = start + self.window - search.shape[0] + int(np.argmin(energy)) * frame + frame // 2
            pieces.append(wav_16k[start:cut])
            start = cut
        pieces.append(wav_16k[start:])
        return pieces

    # --- model -------------------------------------------------------------------

    def _empty_past(self, batch: int = 1) -> dict[str, np.ndarray]:
        shape = (batch, self.heads, 0, self.head_dim)
        return {f"past_key_values.{i}.{kind}.{part}": np.zeros(shape, np.float32)
                for i in range(self.layers) for kind in ("decoder", "encoder") for part in ("key", "value")}

    def _decode_first(self, ids: np.ndarray, hidden: np.ndarray) -> tuple[np.ndarray, dict]:
        """Logits and the cache (self + cross) of a prompt with no past."""
        if self.merged:
            session = self.sessions["decoder_merged"]
            feeds = {"input_ids": ids, "encoder_hidden_states": hidden, "use_cache_branch": np.array([False]),
                     **self._empty_past(ids.shape[0])}
        else:
            session = self.sessions["decoder"]
            feeds = {"input_ids": ids, "encoder_hidden_states": hidden}
        names = [o.name for o in session.get_outputs()]
        values = session.run(None, feeds)
        cache = {name.replace("present", "past_key_values", 1): v for name, v in zip(names[1:], values[1:])}
        return values[0], cache

    def _decode_next(self, ids: np.ndarray, hidden: np.ndarray, cache: dict) -> tuple[np.ndarray, dict]:
        """Logits of ``ids`` after the cached tokens, and the cache with them (cross part kept)."""
        if self.merged:
            session = self.sessions["decoder_merged"]
            feeds = {"input_ids": ids, "encoder_hidden_states": hidden, "use_cache_branch": np.array([True]), **cache}
        else:
            session = self.sessions["decoder_with_past"]
            feeds = {"input_ids": ids, **cache}
        names = [o.name for o in session.get_outputs()]
        values = session.run(None, feeds)
        updated = dict(cache)
        for name, value in zip(names[1:], values[1:]):
            if ".decoder." in name:
                updated[name.replace("present", "past_key_values", 1)] = value
        return values[0], updated

    def _language_token(self, language: Optional[str]) -> Optional[int]:
        if language is None:
            return None
        code = language.strip().lower()
        token = self.lang_to_id.get(f"<|{code}|>")
        if token is None:
            raise InvalidInput(f"The recogniser knows no language {excerpt(language)}; give a Whisper language code "
                               f"such as {', '.join(sorted(self.id_to_lang.values())[:6])} ... or none to detect it.",
                               param="language")
        return token

    def decode_window(self, wav_16k: np.ndarray, language: Optional[str] = None) -> tuple[list[int], int]:
        """Greedy tokens (the prompt not included) and the language token of one window of <= 30 s."""
        features = log_mel(wav_16k, n_mels=self.n_mels, n_fft=int(self.preprocessor.get("n_fft", 400)),
                           hop_length=int(self.preprocessor.get("hop_length", 160)), n_samples=self.window)
        hidden = self.sessions["encoder"].run(None, {"input_features": features[None]})[0]
        lang = self._language_token(language)
        prompt_rest = [self.transcribe_id, self.no_timestamps_id]
        if lang is None:
            logits, cache = self._decode_first(np.array([[self.start_id]], dtype=np.int64), hidden)
            lang = int(self.lang_ids[np.argmax(logits[0, -1, self.lang_ids])])
            logits, cache = self._decode_next(np.array([[lang, *prompt_rest]], dtype=np.int64), hidden, cache)
        else:
            logits, cache = self._decode_first(np.array([[self.start_id, lang, *prompt_rest]], dtype=np.int64), hidden)
        # generate's limit: max_length new tokens after the prompt, within the model's positions
        length, tokens = 4, []
        limit = min(self.max_length + length, self.max_target_positions)
        while True:
            scores = logits[0, -1].astype(np.float32, copy=True)
            scores[self.suppress] = -np.inf
            if not tokens:
                scores[self.begin_suppress] = -np.inf
            token = int(np.argmax(scores))
            tokens.append(token)
            length += 1
            if token == self.eos_id or length >= limit:
                break
            logits, cache = self._decode_next(np.array([[token]], dtype=np.int64), hidden, cache)
        return tokens, lang

    def text_of(self, tokens: Sequence[int]) -> str:
        return self.tokenizer.decode([t for t in tokens if t < self.eos_id], skip_special_tokens=True).strip()

    def transcribe(self, audio, sample_rate: int, language: Optional[str] = None) -> Transcript:
        """The transcript of ``audio`` (``[samples]`` or ``[channels, samples]``, float, any rate).
        ``language`` (a Whisper code such as "en") skips detection; the transcript reports the language
        of its first window."""
        started = time.perf_counter()
        wav = self._prepare_audio(audio, sample_rate)
        texts, all_tokens, first_lang = [], [], None
        with self._lock:
            for piece in self.windows(wav):
                tokens, lang = self.decode_window(piece, language)
                first_lang = first_lang if first_lang is not None else lang
                all_tokens.append(tuple(tokens))
                text = self.text_of(tokens)
                if text:
                    texts.append(text)
        return Transcript(text=" ".join(texts), language=self.id_to_lang.get(first_lang),
                          seconds=time.perf_counter() - started, audio_seconds=wav.shape[0] / WHISPER_RATE,
                          tokens=tuple(all_tokens))
