"""The Book tab: upload a book, see its chapters, choose voices and the cast, start / pause / resume with
progress per chapter, listen to a finished chapter, download the M4B (``book.jobs``, docs/books.md).

On a shared server the voices are the named designs and descriptions only (no server file is named), the
book is bounded before any work (``book.jobs``), and the job, its chapters and its M4B are its owner's.
"""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import time
from typing import Optional

import gradio as gr

from ...book.checks import BOOK_TAB, check_recognizer
from ...book.jobs import BookJobs
from ...book.project import BookSettings, estimated_seconds
from ...book.voices import Voicing, chapter_voices
from ...settings.generation import GenerationConfig
from ...errors import InvalidInput
from ...studio import Studio
from ..error_mapping import ui_errors
from ..owners import owner_of

NARRATOR_DEFAULT = "alloy"
#: entries of the "Chapter voices" box (each is looked up, a description read: bounded before that work)
MAX_CHAPTER_VOICES = 100
NONE = "(none)"
HEADERS = ["#", "Chapter", "Sentences", "Made", "Minutes"]


def voicing(studio: Studio, value: Optional[str], what: str) -> Optional[Voicing]:
    """A voice of the tab: a named design, a description in words, or (a local app only) a saved voice."""
    from ...text.descriptions import read_description
    from ...studio.vocabulary import DESIGNS

    if not value or value == NONE:
        return None
    value = value.strip()
    if value.lower() in DESIGNS:
        return Voicing(name=value, instruct=DESIGNS[value.lower()])
    if not studio.shared and value in studio.voices.names():
        from ...book.voices import resolve_voicing

        return resolve_voicing(value, studio.voices, what=what)
    description = read_description(value, param="voice")
    if not description.instruct:
        raise InvalidInput(f"{what}: {value!r} is no voice name nor a description the model understands "
                           "(for example: female, low pitch, british accent).")
    return Voicing(name=value, instruct=description.instruct)


def settings_of(studio: Studio, narrator, dialogue, cast_text, chapter_voices_text, num_step, guard) -> BookSettings:
    cast = {}
    if cast_text and cast_text.strip():
        try:
            data = json.loads(cast_text)
        except ValueError as exc:
            raise InvalidInput(f"The cast is not JSON ({exc}); write {{\"Anna\": \"nova\"}}.") from None
        if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            raise InvalidInput("The cast maps names to voices: {\"Anna\": \"nova\", \"Ben\": \"onyx\"}.")
        cast = {name.strip(): voicing(studio, voice, f"the cast's {name!r}") for name, voice in data.items()}
    # entries split at ";", a line end, or a comma before the next "N=" (a description has commas of its own)
    entries = [entry for entry in re.split(r"[;\n]|,(?=\s*\d+\s*=)", chapter_voices_text or "") if entry.strip()]
    if len(entries) > MAX_CHAPTER_VOICES:
        raise InvalidInput(f"Chapter voices: at most {MAX_CHAPTER_VOICES} entries, got {len(entries)}.")
    numbered = chapter_voices(entries, None, lambda value, what: voicing(studio, value, what))
    config = GenerationConfig(num_step=int(num_step), guard=bool(guard)).validate()
    return BookSettings(config=config, narrator=voicing(studio, narrator, "Narrator") or Voicing("default"),
                        dialogue=voicing(studio, dialogue, "Voice for quoted speech"), cast=cast,
                        chapter_voices=numbered)


def table(job) -> list[list]:
    if job is None:
        return []
    seconds = estimated_seconds(job.plan) / max(len(job.plan.sentences), 1)
    return [[row["number"], row["title"], row["sentences"], row["made"], round(row["sentences"] * seconds / 60, 1)]
            for row in job.chapters()]


def status(job) -> str:
    if job is None:
        return ""
    rows = job.chapters()
    made, total = sum(r["made"] for r in rows), sum(r["sentences"] for r in rows)
    line = f"**{job.state}** · {made} of {total} sentences"
    if job.state == "running" and made and job.started:
        per = (time.monotonic() - job.started) / max(made, 1)
        line += f" · about {per * (total - made) / 60:.1f} min left"
    if job.state == "done" and job.result is not None:
        line += f" · made {job.result.made}, reused {job.result.reused}"
        if job.result.silent:
            line += f" · {len(job.result.silent)} kept as silence (no take had audio; report.json names them)"
        if job.result.failed_checks:
            line += f" · {job.result.checks_words()}"
    if job.message:
        line += f" · {job.message}"
    return line


def downloadable(studio: Studio, job, owner: Optional[str]) -> Optional[str]:
    """A finished job's audiobook as an output file of ``owner``'s, named as the CLI names it (``<title>.m4b``,
    with the output folder's random token before the suffix: on a shared server the name is what lets only its
    owner fetch it); None while it is not made."""
    if job is None or job.state != "done" or job.result is None or not job.result.output:
        return None
    made = pathlib.Path(job.result.output)
    copy = studio.output_path(made.stem, made.suffix, owner)
    shutil.copyfile(made, copy)
    return str(copy)


def build(studio: Studio) -> None:
    jobs = BookJobs(studio.out_dir / "books", studio.shared)
    from ...studio.vocabulary import DESIGNS

    names = list(DESIGNS) + ([] if studio.shared else studio.voices.names())
    with gr.Tab("Book", id="book"):
        gr.Markdown("A book in, an audiobook out: upload an EPUB, Markdown or text file, choose the voices, "
                    "and make an M4B with its chapters. Pause any time; Start again resumes and reuses every "
                    "sentence already made.")
        with gr.Row():
            upload = gr.File(label="Book (.epub, .md, .txt)", file_types=[".epub", ".md", ".txt"], type="filepath",
                             elem_id="book-file")
            with gr.Column():
                narrator = gr.Dropdown(names, value=NARRATOR_DEFAULT, allow_custom_value=True, label="Narrator",
                                       elem_id="book-narrator")
                dialogue = gr.Dropdown([NONE] + names, value=NONE, allow_custom_value=True,
                                       label="Voice for quoted speech", elem_id="book-dialogue")
                cast = gr.Textbox(label='Cast: names to voices, JSON ({"Anna": "nova"})', lines=2,
                                  elem_id="book-cast")
                with gr.Row():
                    choice = gr.Textbox(label="Chapters (empty: all)", placeholder="1-3, 5", max_length=200,
                                        elem_id="book-chapter-choice")
                    chapter_voice = gr.Textbox(label="Chapter voices (as numbered below)",
                                               placeholder="2=nova, 3=female, low pitch", max_length=2000,
                                               elem_id="book-chapter-voices")
                with gr.Row():
                    num_step = gr.Slider(4, 64, value=32, step=1, label="Steps", elem_id="book-steps")
                    guard = gr.Checkbox(value=True, label="Check each sentence", elem_id="book-guard")
                    encoding = gr.Textbox(label="Encoding, when not UTF-8", placeholder="cp1252, shift_jis",
                                          max_length=40, elem_id="book-encoding")
        summary = gr.Markdown("", elem_id="book-summary")
        chapters = gr.Dataframe(headers=HEADERS, value=[], interactive=False, elem_id="book-chapters")
        with gr.Row():
            start = gr.Button("Start / resume", variant="primary", elem_id="book-start")
            pause = gr.Button("Pause", elem_id="book-pause")
        state_line = gr.Markdown("", elem_id="book-status")
        timer = gr.Timer(1.0, active=False)
        with gr.Row():
            pick = gr.Dropdown([], label="Listen to a finished chapter", elem_id="book-pick")
            player = gr.Audio(type="filepath", interactive=False, label="Chapter", elem_id="book-player")
        m4b = gr.File(label="Audiobook (.m4b)", interactive=False, elem_id="book-m4b")
    # every handler names its inputs: Gradio gives the visitor (``gr.Request``) only to a parameter before any
    # ``*args``, and without it every visitor's book is one job ("local")
    controls = [narrator, dialogue, cast, chapter_voice, num_step, guard, encoding]

    @ui_errors
    def opened(path, chosen, narrator, dialogue, cast, chapter_voices_text, num_step, guard, encoding,
               request: gr.Request = None):
        if not path:
            return "", [], ""
        studio.check_upload(str(path), "book")
        studio.models.get()   # a model is loaded (else its error): the job runs on it
        settings = settings_of(studio, narrator, dialogue, cast, chapter_voices_text, num_step, guard)
        job = jobs.open(owner_of(request), path, settings, chapters=chosen or None,
                        encoding=(encoding or "").strip() or None)
        book = job.plan.book
        minutes = estimated_seconds(job.plan) / 60
        length = f"{minutes / 60:.1f} h" if minutes >= 60 else f"{minutes:.1f} min"
        lines = [f"**{book.title}**" + (f" by {book.author}" if book.author else ""),
                 f"{len(book.chapters)} chapters · {len(job.plan.sentences)} sentences · about {length} of audio"
                 + (f" · language {job.plan.language}" if job.plan.language else "")]
        if book.skipped:
            lines.append("Left out: " + "; ".join(book.skipped[:8]))
        for line in book.garbled[:5]:
            lines.append(f"⚠ Not readable as UTF-8: {line.replace('--encoding', 'the encoding')}")
        return "\n\n".join(lines), table(job), status(job)

    @ui_errors
    def started(path, chosen, narrator, dialogue, cast, chapter_voices_text, num_step, guard, encoding,
                request: gr.Request = None):
        owner = owner_of(request)
        job = jobs.get(owner)
        if job is None or job.state != "running":
            if not path:
                raise InvalidInput("Upload a book first.")
            # the recogniser "Check each sentence" needs, looked for once before any work (not once per sentence)
            check_recognizer(GenerationConfig(guard=bool(guard)), BOOK_TAB, studio.models.get().engine.recognizer,
                             offline=True if getattr(studio.models, "offline", None) else None)
            opened(path, chosen, narrator, dialogue, cast, chapter_voices_text, num_step, guard, encoding,
                   request=request)   # the chapters and voices as they are now
        job = jobs.start(owner, studio.models.get())
        return status(job), table(job), gr.Timer(active=True)

    def paused(request: gr.Request = None):
        return status(jobs.pause(owner_of(request)))

    def ticked(request: gr.Request = None):
        owner = owner_of(request)
        job = jobs.get(owner)
        if job is None:
            return "", [], gr.update(), gr.update(), gr.Timer(active=False)
        running = job.state == "running"
        finished = [f"{r['number']}. {r['title']}" for r in job.chapters()
                    if (job.folder / "chapters" / f"{r['number']:02d}.flac").is_file()] if not running else []
        download = downloadable(studio, job, owner) or gr.update()
        return (status(job), table(job), gr.update(choices=finished) if finished else gr.update(), download,
                gr.Timer(active=running))

    @ui_errors
    def listen(choice, request: gr.Request = None):
        if not choice:
            return None
        owner = owner_of(request)
        number = int(str(choice).split(".", 1)[0])
        source = jobs.chapter_file(owner, number)
        if source is None:
            raise InvalidInput("That chapter is not made yet.")
        copy = studio.output_path(f"chapter-{number:02d}", ".flac", owner)
        shutil.copyfile(source, copy)
        return str(copy)

    upload.change(opened, inputs=[upload, choice, *controls], outputs=[summary, chapters, state_line],
                  api_visibility="private")
    choice.submit(opened, inputs=[upload, choice, *controls], outputs=[summary, chapters, state_line],
                  api_visibility="private")
    choice.blur(opened, inputs=[upload, choice, *controls], outputs=[summary, chapters, state_line],
                api_visibility="private")
    start.click(started, inputs=[upload, choice, *controls], outputs=[state_line, chapters, timer],
                api_visibility="private")
    pause.click(paused, outputs=state_line, api_visibility="private", queue=False)
    timer.tick(ticked, outputs=[state_line, chapters, pick, m4b, timer], api_visibility="private", queue=False)
    pick.change(listen, inputs=pick, outputs=player, api_visibility="private")
