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

The folder, its graphs and their forwards are ``whisper_onnx.WhisperOnnx``'s (the graphs of ``folder.py``'s
layout, split or merged decoder); this module is what is done with them.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Optional, Sequence

import numpy as np

from ..audio.processing import frame_power
from ..errors import InvalidInput, ModelFolderError, excerpt
from .whisper_onnx import WhisperOnnx

WHISPER_RATE = 16000
CUT_SEARCH_SECONDS = 5.0
CUT_FRAME_SECONDS = 0.02
DEFAULT_MAX_SECONDS = 600.0
#: of a window that is not the last, the words starting this close to its end are aligned again in the next
ALIGN_KEEP_MARGIN = 5.0
#: 16 kHz samples of one encoder frame: the least audio a token can be aligned to
ALIGN_SAMPLES_PER_TOKEN = 320


@dataclasses.dataclass(frozen=True)
class Transcript:
    """What was said in a clip: ``text`` (stripped), ``language`` (Whisper's code, e.g. "en"),
    ``seconds`` (time spent recognising), and per window the generated token ids."""

    text: str
    language: Optional[str]
    seconds: float
    audio_seconds: float = 0.0
    tokens: tuple = ()


class SpeechRecognizer(WhisperOnnx):
    """What is done with a Whisper folder (``whisper_onnx.WhisperOnnx``): a clip transcribed (``transcribe``), a
    known text's words timed in it (``align``)."""

    def __init__(self, folder, precision: str = "int8", provider: str = "cpu", threads: Optional[int] = None,
                 verify: str = "size", max_seconds: float = DEFAULT_MAX_SECONDS):
        self.max_seconds = float(max_seconds)
        super().__init__(folder, precision, provider, threads, verify)
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

    def decode_window(self, wav_16k: np.ndarray, language: Optional[str] = None) -> tuple[list[int], int]:
        """Greedy tokens (the prompt not included) and the language token of one window of <= 30 s."""
        hidden = self._encode(wav_16k)
        lang = self._language_token(language)
        prompt_rest = [self.transcribe_id, self.no_timestamps_id]
        if lang is None:
            logits, cache = self._decode_first(np.array([[self.start_id]], dtype=np.int64), hidden)
            lang = self._detected_language(logits)
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

    # --- forced alignment: word times -------------------------------------------------------

    def _require_alignment_heads(self) -> list[tuple[int, int]]:
        if not self.alignment_heads:
            raise ModelFolderError(
                f"The speech recogniser folder {self.folder} cannot time words: its generation_config.json lists "
                "no alignment_heads (the released Whisper checkpoints list them). Use a released recogniser "
                "(such as onnx-community/whisper-base) or rebuild the folder with `python -m convert.whisper` from "
                "a checkpoint whose generation_config.json has alignment_heads.")
        bad = [(l, h) for l, h in self.alignment_heads if not (0 <= l < self.layers and 0 <= h < self.heads)]
        if bad:
            raise ModelFolderError(f"The alignment_heads of {self.folder} name head {bad[0]}, which this "
                                   f"{self.layers}-layer, {self.heads}-head decoder does not have; build it again.")
        return self.alignment_heads

    @property
    def max_text_tokens(self) -> int:
        """Text tokens one window can align: the decoder's positions less the four of the prompt."""
        return self.max_target_positions - 4

    def text_tokens(self, text: str) -> list[int]:
        """``text`` as Whisper writes it after the prompt: ``" " + text``, as text tokens only (every id below
        end-of-text).

        The recogniser's own markers written in the text (``<|en|>``, ``<|notimestamps|>``, a timestamp
        ``<|0.00|>``: added tokens, special or not) never become markers: a person can only say the characters
        they are written with, so such a text is read by the tokenizer's own pre-tokenizer and BPE model without
        its added tokens (``_plain_tokens``).  A text without them keeps ``encode``'s ids, which are the same."""
        spoken = " " + text.strip()
        ids = self.tokenizer.encode(spoken, add_special_tokens=False).ids
        if all(i < self.eos_id for i in ids):
            return ids
        return self._plain_tokens(spoken)

    def _plain_tokens(self, text: str) -> list[int]:
        """``text`` through the tokenizer's normalizer, pre-tokenizer and model alone: the added tokens (the
        markers) are not matched, so every character is read as text."""
        tokenizer = self.tokenizer
        if tokenizer.normalizer is not None:
            text = tokenizer.normalizer.normalize_str(text)
        pieces = tokenizer.pre_tokenizer.pre_tokenize_str(text) if tokenizer.pre_tokenizer is not None \
            else [(text, (0, len(text)))]
        ids = [token.id for piece, _ in pieces for token in tokenizer.model.tokenize(piece)]
        if any(i >= self.eos_id for i in ids):  # a vocabulary whose text tokens reach the markers: never aligned
            raise InvalidInput("The text holds a piece the speech recogniser reads only as one of its own markers; "
                               "write it in words to time it.", param="text")
        return ids

    def align_window(self, wav_16k: np.ndarray, token_ids: Sequence[int], language: Optional[int] = None,
                     ) -> tuple[np.ndarray, np.ndarray, int]:
        """Times (s) and probabilities of ``token_ids`` spoken in one window of <= 30 s, and the language token.

        The decoder reads ``<|startoftranscript|><|lang|><|transcribe|><|notimestamps|>`` + the tokens; the
        alignment heads' attention at the tokens' rows gives their times (``alignment.token_times``), the
        logits before each token its probability (softmax over the text tokens, as openai-whisper's
        ``find_alignment``)."""
        from .alignment import token_times

        heads = self._require_alignment_heads()
        frames = -(-wav_16k.shape[0] // int(self.preprocessor.get("hop_length", 160)))  # the extractor's mask
        if len(token_ids) > frames // 2:
            raise InvalidInput(f"The audio ({wav_16k.shape[0] / WHISPER_RATE:.2f} s) is too short for its text "
                               f"({len(token_ids)} tokens; each needs at least 20 ms): give the audio the text was "
                               "spoken in, or less text.", param="text")
        hidden = self._encode(wav_16k)
        if language is None:
            logits, _ = self._decode_first(np.array([[self.start_id]], dtype=np.int64), hidden)
            language = self._detected_language(logits)
        prompt = [self.start_id, language, self.transcribe_id, self.no_timestamps_id]
        session = self.alignment_session()
        names = [f"cross_attentions.{layer}" for layer in sorted({l for l, _ in heads})]
        values = session.run(["logits", *names], {"input_ids": np.array([prompt + list(token_ids)], dtype=np.int64),
                                                  "encoder_hidden_states": hidden})
        logits, layers = values[0], dict(zip(sorted({l for l, _ in heads}), values[1:]))
        rows = slice(len(prompt), len(prompt) + len(token_ids))
        attention = np.stack([layers[l].reshape(-1, *layers[l].shape[-2:])[h, rows] for l, h in heads])
        times = token_times(attention, frames, self.median_filter_width)
        text_logits = logits[0, len(prompt) - 1:len(prompt) - 1 + len(token_ids), :self.eos_id].astype(np.float64)
        text_logits -= text_logits.max(axis=-1, keepdims=True)
        log_probs = text_logits - np.log(np.exp(text_logits).sum(axis=-1, keepdims=True))
        probabilities = np.exp(log_probs[np.arange(len(token_ids)), list(token_ids)])
        return times, probabilities, language

    def align(self, audio, sample_rate: int, text: str, language: Optional[str] = None) -> list:
        """The words of ``text`` in order, each a ``WordTiming`` (``word``, ``start``, ``end`` in seconds from
        the clip's start, ``probability``), as spoken in ``audio`` (``[samples]`` or ``[channels, samples]``).

        Forced alignment: Whisper reads the known text rather than guessing it (see ``align_window``).  Text
        that is not in the audio is still aligned, with low probabilities.  Audio over one 30 s window or text
        over one window's tokens is aligned piece by piece (``_align_pieces``).  ``language`` (a Whisper code)
        skips detection; it also decides the word split (per character for Chinese, Japanese, Thai, ...)."""
        from .alignment import group_words, word_timings

        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("There is no text to align: give the words that were spoken.", param="text")
        self._require_alignment_heads()
        lang = self._language_token(language)
        wav = self._prepare_audio(audio, sample_rate)
        ids = self.text_tokens(text)
        with self._lock:
            times, probabilities, lang = self._align_pieces(wav, ids, lang)
        words = group_words(ids, lambda t: self.tokenizer.decode(t, skip_special_tokens=False),
                            self.id_to_lang.get(lang), self.eos_id)
        return word_timings(words, times, probabilities, wav.shape[0] / WHISPER_RATE)

    def _align_pieces(self, wav: np.ndarray, ids: list[int], lang: Optional[int]):
        """Align ``ids`` in ``wav`` one window at a time.  A window is at most 30 s and takes as many whole
        words as fit its tokens; when text is left over, the window is cut to the share of the audio its
        words should take (by tokens, with a quarter to spare).  Of a window that is not the last, only the
        words that start more than ``ALIGN_KEEP_MARGIN`` s before its end are kept (the words past the audio
        are pressed into its end) and that leave the audio after them room for the tokens after them; the next
        window starts at the first word not kept.  The times are of the words' first tokens; a word of a window
        never starts before the words kept from the one before."""
        from .alignment import group_words

        words = group_words(ids, lambda t: self.tokenizer.decode(t, skip_special_tokens=False), None, self.eos_id)
        times, probabilities = np.zeros(len(ids)), np.zeros(len(ids))
        word, start, total = 0, 0, wav.shape[0]
        while word < len(words):
            count, end_word = 0, word
            while end_word < len(words) and count + len(words[end_word][1]) <= self.max_text_tokens:
                count += len(words[end_word][1])
                end_word += 1
            if end_word == word:
                raise InvalidInput(f"A word of the text is over {self.max_text_tokens} tokens long; it cannot be "
                                   "aligned.", param="text")
            remaining = total - start
            span = min(self.window, remaining)
            first_id = words[word][1][0]
            if end_word < len(words):
                share = int(remaining * count / (len(ids) - first_id) * 1.25)
                span = min(span, max(share, int(2 * ALIGN_KEEP_MARGIN * WHISPER_RATE)))
            last = end_word == len(words) and span == remaining
            piece = ids[first_id:words[end_word - 1][1][-1] + 1]
            piece_times, piece_probs, lang = self.align_window(wav[start:start + span], piece, lang)
            keep = end_word - word
            if not last:
                # keep the words that start well before the window's end, and early enough that the tokens after
                # them still fit the audio after them (one encoder frame each, and a half)
                left = len(ids) - np.array([words[k][1][0] for k in range(word, end_word)])
                room = (total - left * ALIGN_SAMPLES_PER_TOKEN * 1.5 - start) / WHISPER_RATE
                starts = np.array([piece_times[words[k][1][0] - first_id] for k in range(word, end_word)])
                fits = (starts < span / WHISPER_RATE - ALIGN_KEEP_MARGIN) & (starts <= room)
                keep = max(1, int(np.argmin(fits)) if not fits.all() else len(fits))
            kept = words[word + keep - 1][1][-1] + 1
            times[first_id:kept] = piece_times[:kept - first_id] + start / WHISPER_RATE
            probabilities[first_id:kept] = piece_probs[:kept - first_id]
            if word + keep < len(words):
                following = words[word + keep][1][0]
                after = int(round(piece_times[following - first_id] * WHISPER_RATE))
                last_kept = int(round(piece_times[words[word + keep - 1][1][0] - first_id] * WHISPER_RATE))
                latest = total - int((len(ids) - following) * ALIGN_SAMPLES_PER_TOKEN * 1.5) - start
                start += max(last_kept, min(after, latest))
            word += keep
        return np.maximum.accumulate(times), probabilities, lang
