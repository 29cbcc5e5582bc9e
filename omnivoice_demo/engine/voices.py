"""Audio in and out of the codec, and a voice cloned from a clip (``create_voice_clone_prompt``).

What ``OmniVoiceEngine.encode``, ``decode``, ``load_audio`` and ``clone_voice`` do, each input bounded by the
engine's ``Limits`` before any work: the audio's length and file size, the codes' length, the reference clip
and its transcript.  A clip given without a transcript is transcribed by the engine's recogniser (as the
reference does with Whisper), and the voice records that it was recognised and in which language.
"""

from __future__ import annotations

import pathlib
from typing import Callable, Optional, Union

import numpy as np

from ..audio import processing as audio_ops
from ..audio.codec import AudioCodec
from ..constants import HOP_LENGTH, SAMPLE_RATE
from ..errors import InvalidInput
from ..settings.limits import Limits
from ..storage.voice_file import Voice
from ..text.prompt import add_punctuation


def encode(codec: AudioCodec, limits: Limits, audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Codes ``[8, T]`` of any audio: mixed to mono, resampled to 24 kHz, cut to a multiple of 960."""
    sample_rate = audio_ops.check_sample_rate(sample_rate, "audio")
    frames = np.shape(audio)[-1] if np.ndim(audio) else 0
    limits.check("The audio", round(frames / sample_rate, 1), "max_codec_input_seconds", " s")
    wav = audio_ops.as_float_audio(audio, "audio")
    wav = audio_ops.to_mono(wav)
    if sample_rate != SAMPLE_RATE:
        from ..audio.resample import resample

        wav = resample(wav, int(sample_rate), SAMPLE_RATE)
    usable = wav.shape[-1] // HOP_LENGTH * HOP_LENGTH
    if usable == 0:
        raise InvalidInput("The audio is shorter than one codec frame (40 ms); give a longer clip.")
    return codec.encode(np.ascontiguousarray(wav[0, :usable]))


def decode(codec: AudioCodec, limits: Limits, codes: np.ndarray) -> np.ndarray:
    """Audio (float32, 24 kHz) of codes ``[8, T]`` (at most ``limits.max_decode_frames``)."""
    frames = np.shape(codes)[-1] if np.ndim(codes) else 0
    limits.check("The codes' length", frames, "max_decode_frames", " frames")
    return codec.decode(codes)


def load_audio(limits: Limits, path: Union[str, pathlib.Path], purpose: str = "reference") -> tuple[np.ndarray, int]:
    """(float32 ``[C, N]``, rate) of an audio file, bounded by ``limits`` before decoding: ``purpose`` is
    ``"reference"`` (``max_reference_seconds``) or ``"codec"`` (``max_codec_input_seconds``); ``max_upload_bytes``
    bounds the file."""
    seconds = limits.max_codec_input_seconds if purpose == "codec" else limits.max_reference_seconds
    return audio_ops.load_audio_file(path, max_seconds=seconds, max_bytes=limits.max_upload_bytes,
                                     what="audio file" if purpose == "codec" else "reference audio")


def clone_voice(codec: AudioCodec, limits: Limits, recognizer, check_text: Callable[[str, str], None],
                audio: Union[np.ndarray, str, pathlib.Path], sample_rate: Optional[int] = None,
                transcript: Optional[str] = None, preprocess: bool = True, name: str = "") -> Voice:
    """A reusable voice from a reference clip and its transcript (``create_voice_clone_prompt``).

    ``audio`` is an array (``[samples]`` or ``[channels, samples]``) with its ``sample_rate``, or the path of an
    audio file; ``check_text(text, what)`` holds a typed transcript to the prompt's limits
    (``Planner.check_prompt_text``); without one the processed clip is transcribed by ``recognizer``."""
    if isinstance(audio, (str, pathlib.Path)):
        audio, sample_rate = load_audio(limits, audio)
    if sample_rate is None:
        raise InvalidInput("sample_rate is required with an audio array", param="sample_rate")
    sample_rate = audio_ops.check_sample_rate(sample_rate, "reference audio")
    frames = np.shape(audio)[-1] if np.ndim(audio) else 0
    limits.check("The reference audio", round(frames / sample_rate, 1), "max_reference_seconds", " s")
    typed = transcript is not None and bool(transcript.strip())
    if typed:
        check_text(transcript, "The transcript")
    wav, rms = audio_ops.prepare_reference(audio_ops.as_float_audio(audio, "reference audio"), sample_rate,
                                           transcript_given=typed, preprocess=preprocess,
                                           max_seconds=limits.max_reference_seconds)
    language = None
    if not typed:
        recognised = recognizer.transcribe(wav[0], SAMPLE_RATE)
        if not recognised.text:
            raise InvalidInput("No words were recognised in the reference audio: type what is said in the clip, "
                               "or record a clip of clear speech.")
        transcript, language = recognised.text, recognised.language
    codes = codec.encode(np.ascontiguousarray(wav[0]))
    text = add_punctuation(transcript) if preprocess else transcript.strip()
    return Voice(codes=codes, transcript=text, rms=rms, name=name,
                 transcript_source="typed" if typed else "recognised", language=language)
