"""Small HTML and Markdown pieces of the page: the progress bar, the chunk player, result lines, durations."""

from __future__ import annotations

import html
import re
from typing import Optional

import numpy as np


HISTORY_HEADERS = ["time", "tab", "text", "seed", "audio (s)", "RTF"]
CHECK_HEADERS = ["chunk", "text", "CER", "takes", "kept", "passed", "heard"]


def fmt_seconds(seconds: Optional[float]) -> str:
    if seconds is None or not np.isfinite(seconds):
        return "?"
    if seconds < 0.1:
        return "under 0.1 s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def progress_html(fraction: float, headline: str, detail: str = "", state: str = "running") -> str:
    percent = max(0.0, min(1.0, fraction)) * 100
    return (f'<div class="ov-progress ov-{state}" data-fraction="{fraction:.4f}">'
            f'<div class="ov-progress-text"><b>{html.escape(headline)}</b>'
            f'<span>{html.escape(detail)}</span></div>'
            f'<div class="ov-progress-track"><div class="ov-progress-fill" style="width:{percent:.1f}%"></div></div>'
            '</div>')


def idle_progress(text: str = "Ready.") -> str:
    return progress_html(0.0, text, state="idle")


def stopped_progress(current: Optional[str] = None):
    """The progress bar after Stop: "Stopped." while a run was starting, queued or running; otherwise (a
    finished, failed or no run) the bar as it was, which must not claim a cancel."""
    if current is not None and not any(f'ov-progress ov-{state}"' in current for state in ("running", "queued")):
        return current
    return progress_html(0.0, "Stopped.", "The generation was cancelled.", state="idle")


def failed_progress() -> str:
    """The progress bar after a run that failed (its message is shown beside): not the last run's "Done"."""
    return progress_html(0.0, "Not run.", "See the message; the previous result was cleared.", state="idle")


def chunk_player_html(run_id: str, chunks: list[tuple[int, str]], total: int) -> str:
    """The chunks finished so far, each an <audio> element; the page's script plays new ones in order."""
    if not chunks:
        return ""
    items = "".join(
        f'<div class="ov-chunk-row"><span>chunk {index + 1}/{total}</span>'
        f'<audio controls preload="auto" data-ov-chunk="{run_id}:{index}" src="{uri}"></audio></div>'
        for index, uri in chunks)
    return f'<div class="ov-chunks" data-ov-run="{run_id}">{items}</div>'


def read_along_html(words, player_id: str) -> str:
    """The read-along view of a result's words (``asr.alignment.WordTiming``s, seconds in the result's audio): each
    word a span with its start and end, a speaker's name where a script's turn starts; the page's script
    (assets/read_along.js) highlights the word being heard in the player ``player_id`` (an element id).  Empty
    without words (word timings off)."""
    if not words:
        return ""
    parts, speaker = [], None
    for index, word in enumerate(words):
        if word.speaker is not None and word.speaker != speaker:
            parts.append(f'<b class="ov-speaker">{html.escape(word.speaker)}:</b>')
        speaker = word.speaker
        parts.append(f'<span class="ov-word" data-ov-word="{index}" data-start="{word.start:.3f}" '
                     f'data-end="{word.end:.3f}">{html.escape(word.word)}</span>')
    return (f'<div class="ov-read-along" data-ov-player="{html.escape(player_id)}" data-ov-current="-1" '
            f'title="Click a word to hear it from there">{" ".join(parts)}</div>')


def result_info(result, model_label: str) -> str:
    """Markdown under a finished generation: audio length, compute time, RTF, seed, chunks, steps, timings."""
    stages = ", ".join(f"{k} {v:.2f} s" for k, v in result.timings.items() if k != "total")
    chunks = len(result.chunks)
    return (f"**{result.duration:.2f} s** of audio in **{result.timings['total']:.2f} s** "
            f"(RTF {result.rtf:.2f}) · seed **{result.seed}** · {chunks} chunk{'s' if chunks > 1 else ''} · "
            f"{result.settings['num_step']} steps · {model_label}\n\nTimings: {stages}." + turns_info(result.turns))


def turns_info(turns: list[dict]) -> str:
    """A script's turns: who speaks when and what is read (nothing for one voice)."""
    return "".join(f"\n\n{t['start']:.2f}–{t['end']:.2f} s **{shown(t['speaker'])}**: {shown(t['text'], 120)}"
                   for t in turns)


def shown(text: str, limit: Optional[int] = None) -> str:
    """Text as Markdown shows it literally (escaped), cut to ``limit`` characters."""
    cut = text if limit is None or len(text) <= limit else text[:limit] + "…"
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|>~])", r"\\\1", html.escape(cut, quote=False))


def style_note(description) -> str:
    """A line under the result when a word of the description picked a saved voice's style clip (else empty)."""
    if not description.style:
        return ""
    return f"\n\nStyle: **{html.escape(description.style)}** (the saved voice's own clip in that style)."


def history_rows(history: list[dict]) -> list[list]:
    return [[h["when"], h["tab"], h["text"], h["seed"], h["duration"], h["rtf"]] for h in reversed(history)]


def check_rows(checks) -> list[list]:
    """The sentence check's table: per chunk its CER (and problems), its takes, the kept one, what was heard."""
    return [[c.chunk + 1, c.text, f"{c.cer:.3f}" + "".join(f" + {p}" for p in c.best.problems), len(c.takes), c.kept,
             "yes" if c.passed else "no (best kept)", c.best.transcript] for c in checks]
