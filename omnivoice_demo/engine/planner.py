"""A request made into a checked plan, before any compute: ``Planner``.

``Planner.prepare`` is ``_preprocess_all`` of the reference (``omnivoice/models/omnivoice.py``): the language,
the instruct, the voice, the text as the model reads it (pronunciations, numbers in words), its target length
and its chunks, with every check of the request and of this engine's ``Limits`` made here, before any work.
It needs only the text tokenizer, the limits and the control tokens: the graphs (hundreds of MB, seconds to
load) are needed only to run the plan, so ``TextPlanner`` (a planner of a model folder's tokenizer) lets a
command line refuse a text over a limit, or malformed SSML, before it loads the model (issue 58).  The engine
plans through its own ``Planner`` (``OmniVoiceEngine.planner``) and makes the same checks again when it runs
(a cloned voice, known only then, is held to them there).

SSML (``segments.plan_segments``), a script's turns (``turns.prepare_turns``) and a text read ahead while its
first sentence is made (``read_ahead.read_ahead_plan``) are planned by these same methods.
"""

from __future__ import annotations

import dataclasses
import pathlib
import secrets
from typing import Optional, Union

import numpy as np

from ..constants import FRAME_RATE
from ..errors import InvalidInput, check_control_tokens, check_unicode
from ..settings.generation import GenerationConfig
from ..settings.limits import Limits
from ..storage.voice_file import Voice
from ..text.languages import resolve_language
from ..text.lexicon import as_lexicon
from ..text.normalize import read_as_words, read_sentences_as_words
from ..text.normalize_choice import choose_normalization
from ..text.prompt import build_condition_ids, collapse_whitespace_runs, load_text_tokenizer, special_tokens, \
    validate_text
from ..text.ssml import looks_like_ssml
from ..text.text_work import check_number_bounds, without_numbers
from ..text.voice_design import has_chinese, resolve_instruct
from .duration import chunk_for_generation, chunk_reference, needs_chunking, plan_target_frames
from .events import GenerationPlan
from .guard import require_aligner, require_recognizer
from .read_ahead import StreamedPlan, read_ahead_plan
from .segments import SegmentsPlan, plan_segments
from .streaming import sentence_chunks, splitting_language
from .turns import TurnsPlan, prepare_turns


class Planner:
    """Validates a request and plans it (``prepare``) with the text tokenizer and the limits alone.

    ``recognizer``: the engine's speech recogniser, whose presence the sentence check and word timings need
    (refused at planning, with what to install); None (``TextPlanner``) leaves that to the loaded engine."""

    def __init__(self, tokenizer, limits: Optional[Limits] = None, recognizer=None, *, check_installed: bool = True):
        self.tokenizer = tokenizer
        self.limits = limits or Limits()
        self.recognizer = recognizer
        self.check_installed = check_installed
        self.control_tokens = special_tokens(tokenizer)   # refused in every user text (check_control_tokens)

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
        Every check, the ``limits`` included, happens here, before any work.
        ``read_ahead``: with sentence streaming and numbers read as words, a ``read_ahead.StreamedPlan`` when the
        text has later sentences: the first is read now (with every check of the text as written and the first
        chunk's), the others on a worker while it is generated; the whole plan's checks are then made before any
        audio is given out (``OmniVoiceEngine.run``).
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
            self.check_prompt_text(instruct, "The instruct")
        if isinstance(voice, (str, pathlib.Path)):
            voice = self.load_voice(voice)
        if voice is not None and not isinstance(voice, Voice):
            raise InvalidInput("voice must be a Voice (from clone_voice or Voice.load) or the path of a saved voice",
                               param="voice")
        if voice is not None:
            self.limits.check("The voice's reference", voice.frames, "max_reference_frames", " frames")
            self.check_prompt_text(voice.transcript, "The voice's transcript")
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
                self.require_installed(config)
                streamed = read_ahead_plan(self, text, code, instruct, voice, config, normalization)
                if streamed is not None:
                    return streamed
            # sentence streaming reads each sentence alone (so the first can be read first); else the whole text,
            # as the reference
            text, failed = (read_sentences_as_words(text, normalization.language) if config.sentence_streaming
                            else read_as_words(text, normalization.language))
            normalization = normalization.with_failures(failed)   # said in the result and the response
        plan = self.checked_plan(self.plan_of(text, code, instruct, voice, config, normalization))
        self.require_installed(config)
        return plan

    def prepare_turns(self, turns, **kwargs) -> TurnsPlan:
        """Several voices in one output (``turns.Turn``: speaker, text, voice or design), planned as ``prepare``
        plans one (its other arguments) and held as a whole to the same limits."""
        return prepare_turns(self, turns, **kwargs)

    def prepare_sentence(self, text: str, sentences: list[str], index: int, **kwargs) -> GenerationPlan:
        """The plan of making sentence ``index`` of an earlier result again (``OmniVoiceEngine.run_sentence``).

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

    def plan_of(self, text: str, code: Optional[str], instruct: Optional[str], voice: Optional[Voice],
                config: GenerationConfig, normalization=None) -> GenerationPlan:
        """The plan of a text as it is read (numbers already in words): its length and chunks
        (``_preprocess_all``), unchecked (``checked_plan``)."""
        resolved_instruct = resolve_instruct(instruct, use_zh=has_chinese(text))
        target, plan_speed = plan_target_frames(text, voice.transcript if voice else None,
                                                voice.frames if voice else None, speed=config.speed,
                                                duration=config.duration)
        # sentence streaming: the first sentence alone, then chunks of the reference's size, at any length
        chunks = (sentence_chunks(text, target, config.chunk_duration, language=splitting_language(code, normalization),
                                  quick_start=config.quick_start)
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

    def load_voice(self, path: Union[str, pathlib.Path]) -> Voice:
        """A saved voice, checked against the limits (reference length, file size, its transcript)."""
        voice = Voice.load(path, max_frames=self.limits.max_reference_frames, max_bytes=self.limits.max_upload_bytes)
        self.check_prompt_text(voice.transcript, "The voice's transcript")
        return voice

    def check_prompt_text(self, text: str, what: str) -> None:
        """A text that enters the prompt besides the text to speak (a transcript, an instruct): valid Unicode
        and within ``max_text_chars`` and ``max_prompt_tokens`` on its own, before it is tokenised with the rest."""
        if not isinstance(text, str):
            raise InvalidInput(f"{what} must be text, not {type(text).__name__}.")
        check_unicode(text, what)
        self.limits.check(what, len(text), "max_text_chars", " characters")
        check_control_tokens(text, what, self.control_tokens)
        self.limits.check(what, len(self.tokenizer.encode(text).ids), "max_prompt_tokens", " tokens")

    def require_installed(self, config: GenerationConfig) -> None:
        """What the settings need installed, refused now with what to download rather than run without it."""
        if not self.check_installed:
            return
        if config.guard:
            require_recognizer(self.recognizer)
        if config.word_timestamps:
            require_aligner(self.recognizer)
        if config.loudness is not None:
            from ..audio.loudness import require_pyloudnorm

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


class TextPlanner(Planner):
    """The planner of a model folder's tokenizer, without its graphs: it plans and checks (``prepare``), it cannot
    run a plan; what the settings need installed (a recogniser, pyloudnorm) is the loaded engine's to check."""

    def __init__(self, model_dir: Union[str, pathlib.Path], limits: Optional[Limits] = None):
        self.folder = pathlib.Path(model_dir)
        super().__init__(load_text_tokenizer(self.folder), limits, check_installed=False)
