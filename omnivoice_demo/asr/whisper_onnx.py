"""A Whisper folder opened on ONNX Runtime: its settings, tokenizer and graphs, and the forwards every use
of it runs (a window encoded, the decoder run with its KV cache, the language token read or detected).

``WhisperOnnx`` knows the graphs of ``folder.py``'s layout (split or merged decoder) and the decoder with its
cross-attention as outputs (``attention_graph``), opened on first use; ``recognizer.SpeechRecognizer`` builds
transcription and word timing on it.
"""

from __future__ import annotations

import json
import pathlib
from typing import Optional

import numpy as np

from ..errors import InvalidInput, ModelFolderError, excerpt
from ..runtime.sessions import open_session, providers_for, session_options
from .features import log_mel
from .folder import check_folder


def _read_json(folder: pathlib.Path, name: str) -> dict:
    try:
        return json.loads((folder / name).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelFolderError(f"{name} in the speech recogniser folder {folder} cannot be read ({exc}); "
                               "download or build the folder again.") from exc


class WhisperOnnx:
    """A Whisper folder (``convert.whisper`` or an ``onnx-community/whisper-*`` snapshot) on ONNX Runtime."""

    def __init__(self, folder, precision: str = "int8", provider: str = "cpu", threads: Optional[int] = None,
                 verify: str = "size"):
        from tokenizers import Tokenizer

        self.folder = pathlib.Path(folder)
        self.precision = precision
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
            heads = generation.get("alignment_heads")
            self.alignment_heads = [(int(l), int(h)) for l, h in heads] if heads else None
            self.median_filter_width = int(config.get("median_filter_width") or 7)
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
        self.graphs, self.provider, self.threads = graphs, provider, threads
        self.verify = verify
        self._alignment_session = None

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

    def _encode(self, wav_16k: np.ndarray) -> np.ndarray:
        """The encoder's hidden states of one window of <= 30 s (padded to 30 s, as Whisper's features are)."""
        features = log_mel(wav_16k, n_mels=self.n_mels, n_fft=int(self.preprocessor.get("n_fft", 400)),
                           hop_length=int(self.preprocessor.get("hop_length", 160)), n_samples=self.window)
        return self.sessions["encoder"].run(None, {"input_features": features[None]})[0]

    def _detected_language(self, logits: np.ndarray) -> int:
        """generate's language detection: the language token with the highest logit after <|startoftranscript|>."""
        return int(self.lang_ids[np.argmax(logits[0, -1, self.lang_ids])])

    def alignment_session(self):
        """The decoder graph with its cross-attention as outputs (``attention_graph``), opened on first use."""
        if self._alignment_session is None:
            from .attention_graph import alignment_graph
            from .folder import PRECISION_SUFFIX

            if "decoder" not in self.graphs:
                raise ModelFolderError(f"The speech recogniser folder {self.folder} has only a merged decoder, "
                                       "which cannot be read for word times; use a folder with decoder_model*.onnx "
                                       "(the Hub's exports have both) or build one with `python -m convert.whisper`.")
            path = alignment_graph(self.folder, self.graphs["decoder"], PRECISION_SUFFIX[self.precision],
                                   self.layers, checksums=self.verify == "sha256")
            try:
                self._alignment_session = open_session(path, providers_for(self.provider),
                                                       session_options(self.threads))
            except Exception as exc:  # onnxruntime raises its own types
                raise ModelFolderError(f"The word-timing graph {path.name} cannot be loaded "
                                       f"({type(exc).__name__}); delete it and run again to rebuild it.") from exc
        return self._alignment_session
