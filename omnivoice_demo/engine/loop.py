"""OmniVoice's generation loop on ONNX Runtime, step by step as the reference runs it.

Read next to ``omnivoice/models/omnivoice.py``:

* ``OmniVoiceEngine.prepare``    <- ``generate`` / ``_preprocess_all`` (language, instruct,
                                    target length, duration and speed, chunking decision)
* ``OmniVoiceEngine._rows``      <- ``_prepare_inference_inputs`` (the conditional row) and the
                                    unconditional row of ``_generate_iterative`` (target frames only)
* ``OmniVoiceEngine._unmask``    <- ``_generate_iterative``'s step loop (``steps.unmask``: one forward per
                                    row, the heads and ``sampling.decode_step`` where cells are still masked)
* ``OmniVoiceEngine._run``       <- ``_generate_chunked`` (chunk 0 is the reference of later
                                    chunks when there is no voice) and ``_decode_and_post_process``
Options, off by default (then token-exact with the reference): ``sentence_streaming`` (streaming.py),
``guidance_every``, ``prompt_refresh`` (the prompt's keys and values kept between whole forwards:
``onnx_model.PromptPast``); time estimates: estimate.py.  ``backbone="auto"`` (the default) runs an int4
folder's backbone as the fastest choice on this machine that passes the fidelity gate (as built,
its weights dequantized to fp32, or an 8-bit rebuild: backbone_choice.py); a folder built in fp32
runs as built (the exact model); any choice can be pinned by name.  ``backbone_weights`` (the
original checkpoint: a folder, its ``model.safetensors`` or a Hub repo such as ``k2-fsa/OmniVoice``)
builds the fp32 and 8-bit choices from the real weights instead of the folder's.

One difference of form, not of result: the reference runs the conditional and
unconditional rows as one batch padded to the longer row, each row attending
only within its own length; here they are two unpadded forwards, which
compute the same function without the padding's cost.
"""

from __future__ import annotations

import contextlib
import dataclasses
import pathlib
import secrets
import time
from typing import Generator, Iterator, Optional, Union

import numpy as np

from ..audio import processing as audio_ops
from ..asr.lazy import LazyRecognizer
from ..audio.codec import AudioCodec
from ..audio.loudness import normalise_loudness, require_pyloudnorm
from ..settings.generation import GenerationConfig
from ..settings.limits import Limits
from ..constants import AUDIO_MASK_ID, FRAME_RATE, HOP_LENGTH, NUM_CODEBOOKS, SAMPLE_RATE
from ..backbones.choice import BackboneWatch, choose_backbone
from .duration import chunk_for_generation, chunk_reference, chunk_target_frames, needs_chunking, plan_target_frames
from ..errors import InvalidInput, ModelFolderError
from .estimate import PipelineEstimator
from .work import plan_work
from . import word_times
from .guard import Guard, require_aligner, require_recognizer
from .events import ChunkEvent, GenerationPlan, GenerationResult, StepEvent, Timer
from ..text.languages import resolve_language
from ..text.lexicon import as_lexicon
from ..text.normalize import read_as_words, read_sentences_as_words
from ..text.normalize_choice import choose_normalization
from ..text.text_work import check_number_bounds, without_numbers
from ..storage.manifest import BACKBONE_GRAPHS, CODEC_DIR, load_manifest, model_content, verify_files
from . import render_key as render_keys
from .onnx_model import OmniVoiceOnnx, attention_ratio
from ..settings.presets import prompt_refresh_for
from ..runtime.sessions import providers_for, session_options
from .sampling import decode_step
from .steps import CellHeads, unmask
from .read_ahead import StreamedPlan, read_ahead_plan
from .segments import SegmentsPlan, plan_segments, run_segments
from ..text.ssml import looks_like_ssml
from .streaming import playback_piece, sentence_chunks, splitting_language
from .turns import TurnsPlan, prepare_turns, run_turns
from ..text.prompt import (
    add_punctuation,
    build_condition_ids,
    collapse_whitespace_runs,
    load_text_tokenizer,
    special_tokens,
    validate_text,
)
from ..errors import check_control_tokens, check_unicode
from ..storage.voice_file import Voice
from ..text.voice_design import has_chinese, resolve_instruct


# --- the join ----------------------------------------------------------------------------

def join_chunks(chunk_audio: list[np.ndarray], ref_rms: Optional[float], config: GenerationConfig) -> np.ndarray:
    """The output of a generation from its chunks' decoded audio (``_decode_and_post_process``): the chunks
    cross-faded (``cross_fade_chunks``), post-processed at the voice's loudness (``ref_rms``; None without a
    voice), then brought to the delivery loudness when ``config.loudness`` asks.  float32 ``[N]``.

    What every generation ends with, and what a result with one sentence made again is joined with."""
    joined = audio_ops.cross_fade_chunks([np.asarray(a, dtype=np.float32)[np.newaxis, :] for a in chunk_audio],
                                         SAMPLE_RATE)
    final = audio_ops.postprocess_audio(joined, ref_rms, postprocess=config.postprocess,
                                        pad_duration=config.pad_duration, fade_duration=config.fade_duration,
                                        sample_rate=SAMPLE_RATE)
    if config.loudness is not None:  # delivery loudness, off by default (the exact output)
        final = normalise_loudness(final[0], SAMPLE_RATE, config.loudness)[0][np.newaxis]
    return np.ascontiguousarray(final[0], dtype=np.float32)


# --- the engine --------------------------------------------------------------------------

class OmniVoiceEngine:
    """Loads a model folder and generates speech with the reference's loop.

    ``model_dir`` is a folder in the layout of ``convert`` (ours, or a repaired
    copy of the published export).  The manifest and the files are checked
    (``verify="sha256"`` re-hashes every file, ``"size"`` only checks sizes);
    then a two-forward probe checks that the backbone attends in both
    directions, so no folder can silently run the wrong (causal) model.
    """

    def __init__(self, model_dir: Union[str, pathlib.Path], provider: str = "cpu", threads: Optional[int] = None,
                 verify: str = "sha256", limits: Optional[Limits] = None, calibrate: bool = True,
                 backbone: str = "auto", recognizer=None, backbone_weights=None):
        self.limits = limits or Limits()
        # transcribes references given without a transcript; made (and downloaded) on first use
        self.recognizer = recognizer if recognizer is not None else LazyRecognizer(provider=provider, threads=threads)
        self.folder = pathlib.Path(model_dir)
        if not self.folder.is_dir():
            raise ModelFolderError(f"{self.folder} is not a folder; give the path of an OmniVoice ONNX model folder.")
        self.manifest = load_manifest(self.folder)
        if verify not in ("sha256", "size", "none"):
            raise InvalidInput("verify must be 'sha256', 'size' or 'none'")
        if verify != "none":
            verify_files(self.folder, self.manifest, checksums=verify == "sha256")
        self.provider, self.threads = provider, threads
        if self.manifest.get("execution_provider") == "cuda" and provider != "cuda":
            raise ModelFolderError(
                f"{self.folder} was built for the CUDA provider (profile {self.profile}): its backbone uses "
                "attention features onnxruntime implements only on CUDA. Use provider='cuda' on a machine "
                "with a GPU, or a CPU folder (precision int4, fp16 or fp32)."
            )
        self.model = OmniVoiceOnnx(self.folder, provider=provider, threads=threads)
        # the heads at the cells still masked, on the steps where few are (steps.py)
        self.cell_heads = CellHeads(self.folder, providers_for(provider), session_options(threads))
        self.model_content = model_content(self.manifest)   # the render key's model: kept in the manifest
        weights = None
        if backbone_weights is not None:  # the original checkpoint: the backbone's choices are built from it
            from ..hub.weights import backbone_weights as find_weights

            weights = find_weights(backbone_weights)
        self.backbone_weights_digest = weights.digest if weights is not None else None
        # auto's choice is checked against the generations' own steps, and probed again when the machine is
        # quiet where its probe was contended (``BackboneWatch``); each step's forwards pass its gate
        self.backbone_watch = BackboneWatch(kappa=attention_ratio(self.folder) or 0.0)
        self.backbone_choice = choose_backbone(self.model, backbone, self.folder / BACKBONE_GRAPHS["backbone"],
                                               providers_for(provider), lambda: session_options(threads), threads=threads,
                                               weights=weights, watch=self.backbone_watch)
        verdict = self.model.attention_verdict()
        if verdict != "bidirectional":
            self._refuse_backbone(verdict)
        constants = self.manifest.get("model", {})
        self.num_codebooks = int(constants.get("num_codebooks", NUM_CODEBOOKS))
        self.mask_id = int(constants.get("audio_mask_id", AUDIO_MASK_ID))
        self.tokenizer = load_text_tokenizer(self.folder)
        self.control_tokens = special_tokens(self.tokenizer)   # refused in every user text (check_control_tokens)
        codec_dir = self.folder / CODEC_DIR
        self.codec = (AudioCodec(codec_dir, providers_for(provider), session_options(threads))
                      if codec_dir.is_dir() else None)
        # the time estimates' cost model: a short warm-up now, refined by every run
        self.estimator = PipelineEstimator(attention_ratio=attention_ratio(self.folder))
        self.warmup_seconds = self.estimator.calibrate(self) if calibrate else 0.0

    def _refuse_backbone(self, verdict: str) -> None:
        """The backbone failed its check at load (``attention_verdict``): a ``ModelFolderError`` naming the real
        cause.  A backbone rebuilt in our cache is removed (never kept for the next run to fail on again)."""
        cache = self.backbone_choice.get("cache")
        if cache:
            import shutil

            shutil.rmtree(cache, ignore_errors=True)
        where = f"The backbone rebuilt in our cache ({cache}, now removed)" if cache else f"The backbone in {self.folder}"
        if verdict == "not finite":
            raise ModelFolderError(
                f"{where} gives NaN or infinite outputs: its weights hold NaN or infinities (its graphs attend in "
                "both directions; the weights are at fault). Give weights that are finite: the original checkpoint "
                "(python -m convert refuses a poisoned one, naming the tensor), or download the folder again.")
        if cache:
            raise ModelFolderError(
                f"{where} does not attend in both directions, though its files passed their check; the next load "
                "builds it again.")
        raise ModelFolderError(
            f"The backbone in {self.folder} attends causally, so it computes a different model than "
            "OmniVoice (the published ONNX export has this bug). Repair it into a new folder with "
            "omnivoice_demo.backbones.repair.make_bidirectional(folder, new_folder), or let resolve_model() do it.")

    @property
    def profile(self) -> str:
        return self.manifest.get("profile", "unknown")

    def describe(self) -> dict:
        return {"folder": str(self.folder), "profile": self.profile, "provider": self.provider,
                "threads": self.threads, "precision": self.manifest.get("precision", {}),
                "backbone_attention": "bidirectional", "repairs": self.manifest.get("repairs", []),
                "backbone_compute": self.backbone_choice}

    def _require_codec(self) -> AudioCodec:
        if self.codec is None:
            raise ModelFolderError(f"{self.folder} has no {CODEC_DIR}/ folder with the codec graphs; "
                                   "build it with `python -m convert ... --include-higgs`.")
        return self.codec

    # --- codec round trip and voices --------------------------------------------------

    def encode(self, audio: np.ndarray, sample_rate: int) -> np.ndarray:
        """Codes ``[8, T]`` of any audio: mixed to mono, resampled to 24 kHz, cut to a multiple of 960."""
        sample_rate = audio_ops.check_sample_rate(sample_rate, "audio")
        frames = np.shape(audio)[-1] if np.ndim(audio) else 0
        self.limits.check("The audio", round(frames / sample_rate, 1), "max_codec_input_seconds", " s")
        wav = audio_ops.as_float_audio(audio, "audio")
        wav = audio_ops.to_mono(wav)
        if sample_rate != SAMPLE_RATE:
            from ..audio.resample import resample

            wav = resample(wav, int(sample_rate), SAMPLE_RATE)
        usable = wav.shape[-1] // HOP_LENGTH * HOP_LENGTH
        if usable == 0:
            raise InvalidInput("The audio is shorter than one codec frame (40 ms); give a longer clip.")
        return self._require_codec().encode(np.ascontiguousarray(wav[0, :usable]))

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Audio (float32, 24 kHz) of codes ``[8, T]`` (at most ``limits.max_decode_frames``)."""
        frames = np.shape(codes)[-1] if np.ndim(codes) else 0
        self.limits.check("The codes' length", frames, "max_decode_frames", " frames")
        return self._require_codec().decode(codes)

    def load_voice(self, path: Union[str, pathlib.Path]) -> Voice:
        """A saved voice, checked against this engine's limits (reference length, file size)."""
        voice = Voice.load(path, max_frames=self.limits.max_reference_frames, max_bytes=self.limits.max_upload_bytes)
        self._check_prompt_text(voice.transcript, "The voice's transcript")
        return voice

    def load_audio(self, path: Union[str, pathlib.Path], purpose: str = "reference") -> tuple[np.ndarray, int]:
        """(float32 ``[C, N]``, rate) of an audio file, bounded by this engine's limits before decoding.

        ``purpose`` is ``"reference"`` (``max_reference_seconds``) or ``"codec"``
        (``max_codec_input_seconds``); ``max_upload_bytes`` bounds the file.
        """
        seconds = (self.limits.max_codec_input_seconds if purpose == "codec" else self.limits.max_reference_seconds)
        return audio_ops.load_audio_file(path, max_seconds=seconds, max_bytes=self.limits.max_upload_bytes,
                                         what="audio file" if purpose == "codec" else "reference audio")

    def clone_voice(self, audio: Union[np.ndarray, str, pathlib.Path], sample_rate: Optional[int] = None,
                    transcript: Optional[str] = None, preprocess: bool = True, name: str = "") -> Voice:
        """A reusable voice from a reference clip and its transcript (``create_voice_clone_prompt``).

        ``audio`` is an array (``[samples]`` or ``[channels, samples]``) with its
        ``sample_rate``, or the path of an audio file.  Without a transcript the
        processed clip is transcribed by ``self.recognizer`` (as the reference does
        with Whisper), and the voice records that it was recognised and in which language.
        """
        if isinstance(audio, (str, pathlib.Path)):
            audio, sample_rate = self.load_audio(audio)
        if sample_rate is None:
            raise InvalidInput("sample_rate is required with an audio array", param="sample_rate")
        sample_rate = audio_ops.check_sample_rate(sample_rate, "reference audio")
        frames = np.shape(audio)[-1] if np.ndim(audio) else 0
        self.limits.check("The reference audio", round(frames / sample_rate, 1), "max_reference_seconds", " s")
        typed = transcript is not None and bool(transcript.strip())
        if typed:
            self._check_prompt_text(transcript, "The transcript")
        wav, rms = audio_ops.prepare_reference(audio_ops.as_float_audio(audio, "reference audio"), sample_rate,
                                               transcript_given=typed, preprocess=preprocess,
                                               max_seconds=self.limits.max_reference_seconds)
        language = None
        if not typed:
            recognised = self.recognizer.transcribe(wav[0], SAMPLE_RATE)
            if not recognised.text:
                raise InvalidInput("No words were recognised in the reference audio: type what is said in the clip, "
                                   "or record a clip of clear speech.")
            transcript, language = recognised.text, recognised.language
        codes = self._require_codec().encode(np.ascontiguousarray(wav[0]))
        text = add_punctuation(transcript) if preprocess else transcript.strip()
        return Voice(codes=codes, transcript=text, rms=rms, name=name,
                     transcript_source="typed" if typed else "recognised", language=language)

    # --- planning ---------------------------------------------------------------------

    def prepare(self, text: str, *, language: Optional[str] = None, instruct: Optional[str] = None,
                voice: Union[Voice, str, pathlib.Path, None] = None, config: Optional[GenerationConfig] = None,
                pronunciations=None, ssml: Optional[bool] = False, voices=None, read_ahead: bool = False,
                **overrides) -> Union[GenerationPlan, SegmentsPlan, StreamedPlan]:
        """Validate a request and decide its length and chunks (``_preprocess_all``); no compute.

        ``config`` (default ``GenerationConfig()``, the reference's settings) with
        any of its fields given as keyword ``overrides``, e.g. ``num_step=16``.  ``pronunciations``: a
        ``lexicon.Lexicon`` or its JSON form (``{"word": "[B EY1 S]"}``), applied to the text first.
        ``ssml``: the text is SSML (``None``: when it starts with ``<speak``), planned segment by segment
        (``segments.plan_segments``; ``voices`` resolves its ``<voice name>``s).
        Every check, this engine's ``limits`` included, happens here, before any work.
        ``read_ahead``: with sentence streaming and numbers read as words, a ``read_ahead.StreamedPlan`` when the
        text has later sentences: the first is read now (with every check of the text as written and the first
        chunk's), the others on a worker while it is generated; the whole plan's checks are then made before any
        audio is given out (``run``).
        """
        if ssml or (ssml is None and looks_like_ssml(text)):
            return plan_segments(self, text, language=language, instruct=instruct, voice=voice, config=config,
                                 pronunciations=pronunciations, voices=voices, **overrides)
        config = (config or GenerationConfig()).replace(**overrides).validate()
        text = validate_text(text)
        self.limits.check("The text", len(text), "max_text_chars", " characters")
        check_control_tokens(text, "The text", self.control_tokens)
        text = collapse_whitespace_runs(text)  # planned from what is read: runs of whitespace read as one character
        self.limits.check("num_step", config.num_step, "max_steps")
        code = resolve_language(language)
        if pronunciations:   # before normalisation, which keeps their brackets and pinyin as they are
            text = as_lexicon(pronunciations).apply(text)
            self.limits.check("The text with its pronunciations", len(text), "max_text_chars", " characters")
            check_control_tokens(text, "The text with its pronunciations (a lexicon respelling)", self.control_tokens)
        if instruct is not None:
            self._check_prompt_text(instruct, "The instruct")
        if isinstance(voice, (str, pathlib.Path)):
            voice = self.load_voice(voice)
        if voice is not None and not isinstance(voice, Voice):
            raise InvalidInput("voice must be a Voice (from clone_voice or Voice.load) or the path of a saved voice",
                               param="voice")
        if voice is not None:
            self.limits.check("The voice's reference", voice.frames, "max_reference_frames", " frames")
            self._check_prompt_text(voice.transcript, "The voice's transcript")
        ref_text = voice.transcript if voice else None
        ref_frames = voice.frames if voice else None
        if config.seed is None:
            config = config.replace(seed=secrets.randbelow(2**31))
        # whether, and in which language, numbers are read as words (the user's language, else the text's own);
        # the model still gets ``code``, the user's language or none, as the reference
        normalization = choose_normalization(text, code, config.normalize_text, self.limits)
        if normalization.language is not None:   # the reference's place: the target text only, before its length
            self._check_before_normalising(text, ref_text, ref_frames, config)
            if read_ahead and config.sentence_streaming:   # the first sentence now, the others while it is made
                self._require_for(config)
                streamed = read_ahead_plan(self, text, code, instruct, voice, config, normalization)
                if streamed is not None:
                    return streamed
            # sentence streaming reads each sentence alone (so the first can be read first); else the whole text,
            # as the reference
            text, failed = (read_sentences_as_words(text, normalization.language) if config.sentence_streaming
                            else read_as_words(text, normalization.language))
            normalization = normalization.with_failures(failed)   # said in the result and the response
        plan = self.checked_plan(self.plan_of(text, code, instruct, voice, config, normalization))
        self._require_for(config)
        return plan

    def plan_of(self, text: str, code: Optional[str], instruct: Optional[str], voice: Optional[Voice],
                config: GenerationConfig, normalization=None) -> GenerationPlan:
        """The plan of a text as it is read (numbers already in words): its length and chunks
        (``_preprocess_all``), unchecked (``checked_plan``)."""
        resolved_instruct = resolve_instruct(instruct, use_zh=has_chinese(text))
        target, plan_speed = plan_target_frames(text, voice.transcript if voice else None,
                                                voice.frames if voice else None, speed=config.speed,
                                                duration=config.duration)
        # sentence streaming: the first sentence alone, then chunks of the reference's size, at any length
        chunks = (sentence_chunks(text, target, config.chunk_duration, language=splitting_language(code, normalization))
                  if config.sentence_streaming else [text])
        if len(chunks) == 1 and needs_chunking(target, config.chunk_threshold):
            chunks = chunk_for_generation(text, target, config.chunk_duration)
        return GenerationPlan(text=text, chunks=chunks, target_frames=target, speed=plan_speed, language=code,
                              instruct=resolved_instruct, voice=voice, config=config, normalization=normalization)

    def checked_plan(self, plan: GenerationPlan) -> GenerationPlan:
        """``plan``, held to the limits: its planned speech (times the sentence check's takes), chunks and prompt;
        and every chunk as it is read (after the lexicon, SSML and numbers in words) free of control tokens,
        before any work (the prompt builder checks the ids it builds again, the last word)."""
        for chunk in plan.chunks:
            check_control_tokens(chunk, "The text as it is read (pronunciations applied, numbers in words)",
                                 self.control_tokens)
        self.check_planned_frames(plan.target_frames, plan.config)
        self._check_chunks(plan)
        return plan

    def check_planned_frames(self, frames: int, config: GenerationConfig) -> None:
        self.limits.check("The planned speech", round(frames / FRAME_RATE, 1), "max_audio_seconds", " s")
        if config.guard:  # every take counts: a request cannot multiply its cost past the limit
            self.limits.check(f"The planned speech times guard_tries ({config.guard_tries})",
                              round(frames / FRAME_RATE * config.guard_tries, 1), "max_audio_seconds", " s")

    def _require_for(self, config: GenerationConfig) -> None:
        """What the settings need installed, refused now with what to download rather than run without it."""
        if config.guard:
            require_recognizer(self.recognizer)
        if config.word_timestamps:
            require_aligner(self.recognizer)
        if config.loudness is not None:
            require_pyloudnorm()

    def _check_before_normalising(self, text: str, ref_text: Optional[str], ref_frames: Optional[int],
                                  config: GenerationConfig) -> None:
        """The cheap bounds of a text about to be normalised (its cost grows with them; text_work.py): its
        characters, the digits of each number, its numbers, and the length planned from the text without its
        numbers (a floor of the length after normalisation)."""
        self.limits.check("The text read through normalize_text", len(text), "max_normalize_chars", " characters")
        check_number_bounds(text, self.limits)
        if config.duration is None:
            floor, _ = plan_target_frames(without_numbers(text) or ".", ref_text, ref_frames, speed=config.speed)
            self.limits.check("The planned speech (before normalize_text)", round(floor / FRAME_RATE, 1),
                              "max_audio_seconds", " s")

    def _check_chunks(self, plan: GenerationPlan) -> None:
        self.limits.check("The number of chunks", len(plan.chunks), "max_chunks")
        self.limits.check("The prompt (instruct, reference transcript and text)", self.prompt_tokens(plan),
                          "max_prompt_tokens", " tokens")

    def prepare_sentence(self, text: str, sentences: list[str], index: int, **kwargs) -> GenerationPlan:
        """The plan of making sentence ``index`` of an earlier result again (``run_sentence``).

        ``prepare(text, **kwargs)`` (every check, with the voice and settings given now) with the earlier
        result's chunks ``sentences``, so the sentence keeps its text, its place and its planned length."""
        plan = self.prepare(text, **kwargs)
        if (not isinstance(sentences, (list, tuple)) or not sentences
                or not all(isinstance(s, str) and s.strip() for s in sentences)):
            raise InvalidInput("sentences must be the earlier result's chunks: a list of texts", param="sentences")
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(sentences):
            raise InvalidInput(f"There is no sentence {index!r}: the result has {len(sentences)} "
                               f"(numbered from 0).", param="sentence")
        if list(sentences) != plan.chunks:
            self.limits.check("The sentences", sum(len(s) for s in sentences), "max_text_chars", " characters")
            plan = dataclasses.replace(plan, chunks=list(sentences))
            self._check_chunks(plan)
        return plan

    def prompt_tokens(self, plan: GenerationPlan) -> int:
        """Text tokens of ``plan``'s longest conditional prompt: the style, the reference transcript and the
        text of its longest chunk (every forward of that chunk carries them all, so its cost grows with them)."""
        voice, chunks = plan.voice, plan.chunks
        # without a voice, chunk 0 is the reference of every later chunk (chunk_reference)
        later = range(1, len(chunks)) if voice is None and len(chunks) > 1 else range(len(chunks))
        index = max(later, key=lambda i: len(chunks[i]))
        ref_text, _ = chunk_reference(index, (voice.transcript, None) if voice else None, (chunks[0], None))
        return len(build_condition_ids(chunks[index], self.tokenizer, ref_text=ref_text, language=plan.language,
                                       instruct=plan.instruct, denoise=plan.config.denoise,
                                       has_reference=ref_text is not None))

    def _check_prompt_text(self, text: str, what: str) -> None:
        """A text that enters the prompt besides the text to speak (a transcript, an instruct): valid Unicode
        and within ``max_text_chars`` and ``max_prompt_tokens`` on its own, before it is tokenised with the rest."""
        if not isinstance(text, str):
            raise InvalidInput(f"{what} must be text, not {type(text).__name__}.")
        check_unicode(text, what)
        self.limits.check(what, len(text), "max_text_chars", " characters")
        check_control_tokens(text, what, self.control_tokens)
        self.limits.check(what, len(self.tokenizer.encode(text).ids), "max_prompt_tokens", " tokens")

    def _work(self, plan: GenerationPlan, sentence: Optional[int] = None, checks=None):
        if isinstance(plan, StreamedPlan):   # its whole plan once its later sentences are read, else its head
            plan = plan.now()
        return plan_work(plan, self.tokenizer, self.num_codebooks, self.model.keeps_prompt, sentence=sentence,
                         takes=[len(check.takes) for check in checks] if checks else None)

    def prepare_turns(self, turns, **kwargs) -> TurnsPlan:
        """Several voices in one output (``turns.Turn``: speaker, text, voice or design), planned as ``prepare``
        plans one (its other arguments) and held as a whole to the same limits; ``run`` runs it."""
        return prepare_turns(self, turns, **kwargs)

    def estimate(self, plan: Union[GenerationPlan, TurnsPlan], sentence: Optional[int] = None):
        """The predicted time of ``plan`` (of its chunk ``sentence`` alone: ``run_sentence``; a script's turns
        together) on this machine (an ``estimate.Estimate``; None if never measured, and for a plan in
        segments, whose time line is its segments')."""
        if isinstance(plan, SegmentsPlan):
            return None
        if isinstance(plan, TurnsPlan):
            works = [self._work(one) for one in plan.plans]
            return self.estimator.estimate(dataclasses.replace(
                works[0], chunks=[chunk for work in works for chunk in work.chunks]))
        return self.estimator.estimate(self._work(plan, sentence))

    def estimate_seconds(self, plan: GenerationPlan, sentence: Optional[int] = None) -> Optional[float]:
        """Seconds the whole generation of ``plan`` (or of its chunk ``sentence``) will take on this machine
        (None if never measured)."""
        if isinstance(plan, SegmentsPlan):
            seconds = [self.estimate_seconds(item) for item in plan.plans]
            return None if None in seconds else sum(seconds)
        return getattr(self.estimate(plan, sentence), "total", None)

    # --- generation -----------------------------------------------------------------

    def stream(self, text: str, **kwargs) -> Iterator[Union[StepEvent, ChunkEvent, GenerationResult]]:
        """Events of one generation: a ``StepEvent`` per step, a ``ChunkEvent`` per chunk, then the result.

        The arguments are those of ``prepare``.  The request is validated now
        (an ``InvalidInput`` here, before any compute); closing the returned
        generator stops the work within a step.
        """
        return self.run(self.prepare(text, **kwargs))

    def run(self, plan: Union[GenerationPlan, TurnsPlan]) -> Iterator[Union[StepEvent, ChunkEvent, GenerationResult]]:
        """The events of a plan from ``prepare`` or ``prepare_turns`` (validate now, compute later:
        ``omnivoice_demo.studio.service``); the result carries its ``render_key``."""
        self._require_codec()
        if isinstance(plan, SegmentsPlan):
            return self._keyed(run_segments(self, plan), plan)
        return self._keyed(run_turns(self, plan) if isinstance(plan, TurnsPlan) else self._run(plan), plan)

    def _keyed(self, events: Iterator, plan) -> Iterator:
        """``events``, the result given its render key (of the compute that ran, once it has run); closing this
        closes ``events`` at once."""
        with contextlib.closing(events):
            for event in events:
                if isinstance(event, GenerationResult):
                    event.render_key = self.render_key(plan)
                yield event

    def render_parts(self, plan, audio_format: str = "float32") -> dict:
        """The parts of ``plan``'s render key on this engine (``render_key.render_parts``), as ``audio_format``."""
        compute = render_keys.compute_identity(self.backbone_choice, self.provider, self.backbone_weights_digest)
        return render_keys.render_parts(plan, model=self.model_content, compute=compute, audio_format=audio_format)

    def render_key(self, plan, audio_format: str = "float32") -> str:
        """What decides the audio of ``plan`` on this engine, delivered as ``audio_format``: one sha256
        (``render_key``); the same key, the same audio."""
        return render_keys.key_of(self.render_parts(plan, audio_format))

    def generate(self, text: str, **kwargs) -> GenerationResult:
        """Speech for ``text``; the arguments are those of ``prepare``."""
        result = None
        for event in self.stream(text, **kwargs):
            result = event
        assert isinstance(result, GenerationResult)
        return result

    def run_sentence(self, plan: GenerationPlan, index: int,
                     codes: list[np.ndarray]) -> Iterator[Union[StepEvent, ChunkEvent]]:
        """The events of making chunk ``index`` of ``plan`` (``prepare_sentence``) again: its steps, then its
        ``ChunkEvent``; nothing else changes.  ``codes`` are the result's current chunk codes: without a voice,
        chunk 0's are the later chunks' reference, as in the whole run.  The chunk draws from the plan's seed
        (give the next seed for another take); with the sentence check on, it is checked like any chunk."""
        self._require_codec()
        if len(codes) != len(plan.chunks) or not all(np.ndim(c) == 2 and np.shape(c)[0] == self.num_codebooks
                                                     for c in codes):
            raise InvalidInput(f"codes must be the result's {len(plan.chunks)} chunks' codes, "
                               f"each [{self.num_codebooks}, frames].", param="codes")
        return self._sentence(plan, index, codes)

    def _sentence(self, plan: GenerationPlan, index: int, codes: list[np.ndarray]) -> Iterator:
        timer, started = Timer(), time.perf_counter()
        guard = self._guard(plan.config, timer, plan.language)
        tokens, audio = yield from self._chunk(plan, index, self._layout(plan)[index], codes[0],
                                               np.random.default_rng(plan.config.seed), guard, timer, started)
        words = self._words(plan, index, audio, timer, guard)
        self.estimator.observe_run(self._work(plan, index, guard.checks if guard else None),
                                   dict(timer.seconds, total=time.perf_counter() - started))
        if guard:
            self.estimator.observe_checks(guard.checks)
        yield ChunkEvent(chunk=index, num_chunks=len(plan.chunks), codes=tokens, audio=audio,
                         elapsed=time.perf_counter() - started, check=guard.checks[-1] if guard else None,
                         words=words)

    def _guard(self, config: GenerationConfig, timer: Timer, language: Optional[str] = None) -> Optional[Guard]:
        if not config.guard:
            return None
        return Guard(self.recognizer, config.guard_cer, config.guard_tries, config.seed, timer,
                     words=config.word_timestamps, language=language)

    @staticmethod
    def _layout(plan: GenerationPlan) -> list[int]:
        voice = plan.voice
        return chunk_target_frames(plan.chunks, plan.target_frames, plan.speed,
                                   voice.transcript if voice else None, voice.frames if voice else None)

    def _chunk(self, plan: GenerationPlan, index: int, frames: int, first_codes: Optional[np.ndarray],
               rng: np.random.Generator, guard: Optional[Guard], timer: Timer, started: float) -> Generator:
        """Chunk ``index``: its prompt, then its take (or the sentence check's takes), yielding their step events;
        returns the kept ``(codes, audio)``.  ``first_codes``: chunk 0's codes, the reference of later chunks
        when there is no voice (``_generate_chunked``)."""
        config, voice = plan.config, plan.voice
        ref_text, ref_codes = chunk_reference(index, (voice.transcript, voice.codes) if voice else None,
                                              (plan.chunks[0], first_codes))
        tick = time.perf_counter()
        cond_ids, cond_audio_mask = self._rows(plan.chunks[index], frames, ref_text, ref_codes, plan)
        timer.add("prompt", tick)

        def take(take_rng, number=1):  # one generation of this chunk: its steps, then its decoded audio
            tokens = np.full((self.num_codebooks, frames), self.mask_id, dtype=np.int64)
            refresh = prompt_refresh_for(config, voice.frames if voice else None)   # a design runs whole
            for step, decided in self._unmask(tokens, cond_ids, cond_audio_mask, take_rng, config, timer,
                                              refresh):
                yield StepEvent(chunk=index, num_chunks=len(plan.chunks), step=step, num_steps=config.num_step,
                                codes=tokens.copy(), decided=decided, elapsed=time.perf_counter() - started,
                                take=number)
            tick = time.perf_counter()
            audio = self.codec.decode(tokens)
            timer.add("codec_decode", tick)
            return tokens, audio

        return (yield from (guard.chunk(index, plan.chunks[index], frames, rng, take) if guard else take(rng)))

    def _run(self, plan: Union[GenerationPlan, StreamedPlan]) -> Iterator[Union[StepEvent, ChunkEvent,
                                                                                 GenerationResult]]:
        config = plan.config
        rng = np.random.default_rng(config.seed)
        timer = Timer()
        started = time.perf_counter()
        voice = plan.voice
        chunk_codes: list[np.ndarray] = []
        chunk_audio: list[np.ndarray] = []
        guard = self._guard(config, timer, plan.language)
        all_words: list[list] = []
        first = None
        if isinstance(plan, StreamedPlan):   # its first chunk while its later sentences are read (read_ahead.py)
            first = yield from self._first_ahead(plan, rng, guard, timer, started)
            plan = plan.complete()
            if first is None:   # the whole plan starts otherwise: its first chunk made again, as its own run makes it
                rng, guard = np.random.default_rng(config.seed), self._guard(config, timer, plan.language)
        for index, frames in enumerate(self._layout(plan)):
            if index == 0 and first is not None:
                tokens, audio = first
            else:
                tokens, audio = yield from self._chunk(plan, index, frames, chunk_codes[0] if chunk_codes else None,
                                                       rng, guard, timer, started)
            chunk_codes.append(tokens)
            chunk_audio.append(audio)
            words = self._words(plan, index, audio, timer, guard)
            if words is not None:
                all_words.append(words)
            yield ChunkEvent(chunk=index, num_chunks=len(plan.chunks), codes=tokens, audio=audio,
                             elapsed=time.perf_counter() - started,
                             playback=playback_piece(audio, index, len(plan.chunks), voice.rms if voice else None),
                             check=guard.checks[-1] if guard else None, words=words)

        tick = time.perf_counter()
        final = join_chunks(chunk_audio, voice.rms if voice else None, config)
        timer.add("postprocess", tick)
        placed = word_times.place_words(all_words, chunk_audio, config, len(final)) if config.word_timestamps else []
        timings = dict(timer.seconds, total=time.perf_counter() - started)
        self.estimator.observe_run(self._work(plan, checks=guard.checks if guard else None), timings)
        if guard:
            self.estimator.observe_checks(guard.checks)
        yield GenerationResult(audio=final, sample_rate=SAMPLE_RATE,
                               codes=chunk_codes, seed=config.seed, chunks=list(plan.chunks), timings=timings,
                               settings=plan.settings, config=config, checks=guard.checks if guard else [],
                               words=placed, chunk_words=all_words)

    def _first_ahead(self, plan: StreamedPlan, rng: np.random.Generator, guard: Optional[Guard], timer: Timer,
                     started: float) -> Iterator:
        """The first chunk of a ``StreamedPlan``, made from its head: its step events (counted in the whole plan's
        chunks once it is known); the whole plan is taken as soon as the later sentences are read (its error stops
        the run there) and at the latest when the chunk is made.  Returns the chunk's ``(codes, audio)``, or None
        when the whole plan's first chunk is not the one made (``StreamedPlan.head_agrees``)."""
        events = self._chunk(plan.head, 0, plan.head_frames, None, rng, guard, timer, started)
        try:
            while True:
                try:
                    event = next(events)
                except StopIteration as made:
                    kept = made.value
                    break
                yield dataclasses.replace(event, num_chunks=len(plan.now().chunks))
        finally:
            events.close()
        whole = plan.complete()
        return kept if plan.head_agrees(whole, self._layout(whole)[0]) else None

    def _words(self, plan: GenerationPlan, index: int, audio: np.ndarray, timer: Timer,
               guard: Optional[Guard] = None) -> Optional[list]:
        """Chunk ``index``'s words in its decoded ``audio`` (``word_timestamps`` on; the sentence check's kept take
        was aligned already), else None."""
        if not plan.config.word_timestamps:
            return None
        if guard is not None and guard.checks and guard.checks[-1].best.words:
            return list(guard.checks[-1].best.words)
        tick = time.perf_counter()
        words = word_times.chunk_words(self.recognizer, audio, plan.chunks[index], plan.language)
        timer.add("align", tick)
        return words

    def _rows(self, text: str, frames: int, ref_text: Optional[str], ref_codes: Optional[np.ndarray],
              plan: GenerationPlan) -> tuple[np.ndarray, np.ndarray]:
        """The conditional row (``_prepare_inference_inputs``): ids [1, 8, L] and audio mask [1, L].

        ``[style + text ids on all 8 rows] [reference codes] [frames x mask id]``;
        the audio mask is True from the first audio position to the end.
        """
        text_ids = build_condition_ids(text, self.tokenizer, ref_text=ref_text, language=plan.language,
                                       instruct=plan.instruct, denoise=plan.config.denoise,
                                       has_reference=ref_codes is not None)
        parts = [np.broadcast_to(text_ids, (self.num_codebooks, len(text_ids)))]
        if ref_codes is not None:
            parts.append(np.asarray(ref_codes, dtype=np.int64))
        parts.append(np.full((self.num_codebooks, frames), self.mask_id, dtype=np.int64))
        ids = np.concatenate(parts, axis=1)[np.newaxis]
        audio_mask = np.zeros((1, ids.shape[-1]), dtype=bool)
        audio_mask[0, len(text_ids):] = True
        return np.ascontiguousarray(ids), audio_mask

    def _unmask(self, tokens: np.ndarray, cond_ids: np.ndarray, cond_audio_mask: np.ndarray,
                rng: np.random.Generator, config: GenerationConfig, timer: Timer,
                prompt_refresh: int = 1) -> Iterator[tuple[int, np.ndarray]]:
        """``_generate_iterative`` for one item (``steps.unmask``): decides ``tokens`` in place, yields
        (step, decided).  ``prompt_refresh``: the conditional row whole on every k-th step only."""
        return unmask(self, tokens, cond_ids, cond_audio_mask, rng, config, timer, prompt_refresh, decode_step)
