"""OmniVoice on ONNX Runtime: ``OmniVoiceEngine``, the model a library user meets, and its generation loop.

What a user does is a method: ``generate``, ``stream``, ``clone_voice`` / ``load_voice``, word timings
(``word_timestamps=True``: ``result.words``); and what front ends need besides: ``prepare`` (a request checked
and planned before any compute; ``prepare_turns``, ``prepare_sentence``), ``run`` / ``run_sentence``,
``estimate`` / ``estimate_seconds``, ``render_key`` / ``render_parts``, ``encode`` / ``decode`` / ``load_audio``,
``describe`` (docs/engine.md lists them; tests/test_engine_surface.py holds the class to that list).  The work
behind them lives in modules of one job: a request's checks and plan (``planner``), the folder opened
(``opening``), voices and the codec (``voices``), render keys (``render_key``), time (``estimate``, ``work``),
the join (``join``), the step loop (``steps``) and one step's scoring (``sampling``).

The loop, read next to ``omnivoice/models/omnivoice.py``:

* ``Planner.prepare``            <- ``generate`` / ``_preprocess_all`` (language, instruct, target length,
                                    duration and speed, chunking decision)
* ``OmniVoiceEngine._rows``      <- ``_prepare_inference_inputs`` (the conditional row) and the
                                    unconditional row of ``_generate_iterative`` (target frames only)
* ``OmniVoiceEngine._unmask``    <- ``_generate_iterative``'s step loop (``steps.unmask``: one forward per
                                    row, the heads and ``sampling.decode_step`` where cells are still masked)
* ``OmniVoiceEngine._run``       <- ``_generate_chunked`` (chunk 0 is the reference of later
                                    chunks when there is no voice) and ``_decode_and_post_process``
Off by default (then token-exact with the reference): ``sentence_streaming``, ``guidance_every``,
``prompt_refresh``.  The reference runs its two rows as one batch padded to the longer row; here they are two
unpadded forwards, the same function without the padding's cost.
"""

from __future__ import annotations

import contextlib
import dataclasses
import pathlib
import time
import warnings
from typing import Generator, Iterator, Optional, Union

import numpy as np

from ..asr.lazy import LazyRecognizer
from ..audio.codec import AudioCodec
from ..backbones.choice import BackboneWatch, choose_backbone
from ..constants import AUDIO_MASK_ID, NUM_CODEBOOKS, SAMPLE_RATE
from ..errors import InvalidInput, ModelFolderError
from ..runtime.sessions import providers_for, session_options
from ..settings.generation import GenerationConfig
from ..settings.limits import Limits
from ..settings.presets import prompt_refresh_for
from ..storage.manifest import BACKBONE_GRAPHS, CODEC_DIR, model_content
from ..storage.voice_file import Voice
from ..text.prompt import build_condition_ids, load_text_tokenizer
from . import render_key as render_keys
from . import voices, word_times
from .duration import chunk_reference
from .estimate import PipelineEstimator
from .events import ChunkEvent, GenerationPlan, GenerationResult, StepEvent, Timer
from .guard import Guard
from .join import join_chunks  # noqa: F401 - also where callers import it from
from .onnx_model import OmniVoiceOnnx, attention_ratio
from .opening import open_folder, refuse_backbone
from .planner import Planner
from .read_ahead import StreamedPlan
from .sampling import decode_step
from .segments import SegmentsPlan, run_segments
from .steps import CellHeads, unmask
from .streaming import chunk_frames, playback_piece
from .turns import TurnsPlan, run_turns
from .work import plan_work

#: the planner's methods the engine once had, and their names on ``engine.planner`` (``__getattr__``)
MOVED_TO_PLANNER = {"plan_of": "plan_of", "checked_plan": "checked_plan", "check_planned_frames":
                    "check_planned_frames", "prompt_tokens": "prompt_tokens", "_check_prompt_text":
                    "check_prompt_text", "_require_for": "require_installed"}


# --- the engine --------------------------------------------------------------------------

class OmniVoiceEngine:
    """An OmniVoice model folder, loaded: speech from text (``generate``, ``stream``) with the reference's loop.

    ``model_dir`` is a folder in the layout of ``convert`` (ours, or a repaired copy of the published export).
    The manifest and the files are checked (``verify="sha256"`` re-hashes every file, ``"size"`` only checks
    sizes); then a two-forward probe checks that the backbone attends in both directions, so no folder can
    silently run the wrong (causal) model.  ``limits`` bound every request (``settings.limits.Limits``);
    ``recognizer`` transcribes references given without a transcript (made, and downloaded, on first use).
    """

    def __init__(self, model_dir: Union[str, pathlib.Path], provider: str = "cpu", threads: Optional[int] = None,
                 verify: str = "sha256", limits: Optional[Limits] = None, calibrate: bool = True,
                 backbone: str = "auto", recognizer=None, backbone_weights=None):
        recognizer = recognizer if recognizer is not None else LazyRecognizer(provider=provider, threads=threads)
        self.folder, self.manifest = open_folder(model_dir, verify, provider)
        self.provider, self.threads = provider, threads
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
            refuse_backbone(self.folder, self.backbone_choice, verdict)
        constants = self.manifest.get("model", {})
        self.num_codebooks = int(constants.get("num_codebooks", NUM_CODEBOOKS))
        self.mask_id = int(constants.get("audio_mask_id", AUDIO_MASK_ID))
        self.tokenizer = load_text_tokenizer(self.folder)
        # every check of a request, and its plan, before any compute (planner.py)
        self.planner = Planner(self.tokenizer, limits, recognizer)
        self.control_tokens = self.planner.control_tokens   # refused in every user text (check_control_tokens)
        codec_dir = self.folder / CODEC_DIR
        self.codec = (AudioCodec(codec_dir, providers_for(provider), session_options(threads))
                      if codec_dir.is_dir() else None)
        # the time estimates' cost model: a short warm-up now, refined by every run
        self.estimator = PipelineEstimator(attention_ratio=attention_ratio(self.folder))
        self.warmup_seconds = self.estimator.calibrate(self) if calibrate else 0.0

    # what the planner holds and the engine's callers set: one value, the planner's
    limits = property(lambda self: self.planner.limits, lambda self, value: setattr(self.planner, "limits", value),
                      doc="The request limits (``settings.limits.Limits``), the planner's.")
    recognizer = property(lambda self: self.planner.recognizer,
                          lambda self, value: setattr(self.planner, "recognizer", value),
                          doc="The speech recogniser (references without a transcript, checks, word timings).")

    def __getattr__(self, name: str):
        """The planner's methods under their old names on the engine, with a warning saying where they went."""
        if name in MOVED_TO_PLANNER and "planner" in self.__dict__:
            new = MOVED_TO_PLANNER[name]
            warnings.warn(f"OmniVoiceEngine.{name} is deprecated: use engine.planner.{new} (engine/planner.py)",
                          DeprecationWarning, stacklevel=2)
            return getattr(self.planner, new)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def profile(self) -> str:
        return self.manifest.get("profile", "unknown")

    def describe(self) -> dict:
        """What runs: the folder, its profile and precision, the provider and threads, the backbone's compute."""
        return {"folder": str(self.folder), "profile": self.profile, "provider": self.provider,
                "threads": self.threads, "precision": self.manifest.get("precision", {}),
                "backbone_attention": "bidirectional", "repairs": self.manifest.get("repairs", []),
                "backbone_compute": self.backbone_choice}

    def _require_codec(self) -> AudioCodec:
        if self.codec is None:
            raise ModelFolderError(f"{self.folder} has no {CODEC_DIR}/ folder with the codec graphs; "
                                   "build it with `python -m convert ... --include-higgs`.")
        return self.codec

    # --- voices and the codec (voices.py) ------------------------------------------------

    def clone_voice(self, audio: Union[np.ndarray, str, pathlib.Path], sample_rate: Optional[int] = None,
                    transcript: Optional[str] = None, preprocess: bool = True, name: str = "") -> Voice:
        """A reusable voice from a reference clip (an array with its ``sample_rate``, or a file) and its
        transcript, transcribed by ``recognizer`` when not given (``create_voice_clone_prompt``)."""
        return voices.clone_voice(self._require_codec(), self.limits, self.recognizer, self.planner.check_prompt_text,
                                  audio, sample_rate, transcript, preprocess, name)

    def load_voice(self, path: Union[str, pathlib.Path]) -> Voice:
        """A saved voice, checked against this engine's limits (reference length, file size)."""
        return self.planner.load_voice(path)

    def load_audio(self, path: Union[str, pathlib.Path], purpose: str = "reference") -> tuple[np.ndarray, int]:
        """(float32 ``[C, N]``, rate) of an audio file, bounded by the limits of ``purpose`` (``"reference"`` or
        ``"codec"``) before decoding."""
        return voices.load_audio(self.limits, path, purpose)

    def encode(self, audio: np.ndarray, sample_rate: int) -> np.ndarray:
        """Codes ``[8, T]`` of any audio: mixed to mono, resampled to 24 kHz, cut to a multiple of 960."""
        return voices.encode(self._require_codec(), self.limits, audio, sample_rate)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Audio (float32, 24 kHz) of codes ``[8, T]`` (at most ``limits.max_decode_frames``)."""
        return voices.decode(self._require_codec(), self.limits, codes)

    # --- planning (planner.py) and estimates (estimate.py) ------------------------------

    def prepare(self, text: str, **kwargs) -> Union[GenerationPlan, SegmentsPlan, StreamedPlan]:
        """A request validated and planned (its length and chunks), before any compute: ``Planner.prepare``,
        whose arguments it takes (``language``, ``instruct``, ``voice``, ``config`` and any of its fields ...)."""
        return self.planner.prepare(text, **kwargs)

    def prepare_turns(self, turns, **kwargs) -> TurnsPlan:
        """Several voices in one output (``turns.Turn``s), planned together: ``Planner.prepare_turns``."""
        return self.planner.prepare_turns(turns, **kwargs)

    def prepare_sentence(self, text: str, sentences: list[str], index: int, **kwargs) -> GenerationPlan:
        """The plan of making sentence ``index`` of an earlier result again (``run_sentence``)."""
        return self.planner.prepare_sentence(text, sentences, index, **kwargs)

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

    def _work(self, plan: GenerationPlan, sentence: Optional[int] = None, checks=None):
        if isinstance(plan, StreamedPlan):   # its whole plan once its later sentences are read, else its head
            plan = plan.now()
        return plan_work(plan, self.tokenizer, self.num_codebooks, self.model.keeps_prompt, sentence=sentence,
                         takes=[len(check.takes) for check in checks] if checks else None)

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
        return chunk_frames(plan)   # chunk_target_frames, but a quick_start plan's first chunk (streaming.py)

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
