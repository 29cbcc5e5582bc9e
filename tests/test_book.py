"""omnivoice book on the tiny model: an EPUB 3 written here -> an M4B whose chapters (read back with PyAV) have
the book's titles in order and cover the audio; a rerun makes nothing; a lexicon entry remakes exactly the
sentences that hold its word; ``kill -9`` and a rerun lose nothing; the read-along EPUB's SMIL follows the
sentences; a cast naming a missing voice is refused before any work; Ray with two local actors.

The tiny model's audio is noise-like (random weights): these tests check the book layer's bookkeeping, files
and times, never how the speech sounds.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import zipfile

import pytest
import soundfile

from omnivoice_demo.storage.digests import file_sha256
from tests.support.books import cover_jpeg, write_epub3

pytest.importorskip("ebooklib")
av = pytest.importorskip("av")

CHAPTERS = [
    ("The Harbour", ["Anna walked to the harbour. The boats were in.", "The bass player waved at her."]),
    ("The Storm", ["The wind rose at night. Rain hit the roof."]),
    ("The Morning", ["All was calm again. The bass was still there."]),
]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def book_args(model, book, output, *extra):
    return ["book", str(book), "--model", str(model), "--output", str(output), "--num-step", "2", "--no-guard",
            "--no-progress", *extra]


def run_book(capsys, *args) -> dict:
    from omnivoice_demo.cli.main import main

    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0, out
    return json.loads(out[-1])


def sentence_files(output) -> dict[str, float]:
    return {p.name: p.stat().st_mtime_ns for p in (output / "sentences").glob("*.flac")}


@pytest.fixture(scope="module")
def made(tiny_fp32_folder, tmp_path_factory):
    """The book made once (in-process), for the checks that only read its files."""
    from omnivoice_demo.cli.main import main

    root = tmp_path_factory.mktemp("book")
    book = write_epub3(root / "harbour.epub", CHAPTERS)
    output = root / "out"
    assert main(book_args(tiny_fp32_folder, book, output)) == 0
    return {"book": book, "output": output, "root": root}


def test_an_epub3_becomes_an_m4b_with_its_chapters_in_order_covering_the_audio(made):
    output = made["output"]
    m4b = output / "The Test Book.m4b"
    with av.open(str(m4b)) as container:
        chapters = [(c["metadata"]["title"], float(c["start"] * c["time_base"]), float(c["end"] * c["time_base"]))
                    for c in container.chapters()]
        duration = container.duration / 1e6
        tags = container.metadata
        audio = [s for s in container.streams if s.type == "audio"]
        pictures = [s for s in container.streams if s.type == "video" and s.disposition & av.stream.Disposition.attached_pic]
        cover = bytes(next(p for p in container.demux(pictures[0]) if p.size))
    assert [title for title, _, _ in chapters] == ["The Harbour", "The Storm", "The Morning"]
    assert chapters[0][1] == 0 and all(a[2] == b[1] for a, b in zip(chapters, chapters[1:]))
    assert chapters[-1][2] == pytest.approx(duration, abs=0.05)      # the markers cover the audio
    report = json.loads((output / "report.json").read_text())
    lengths = [soundfile.info(str(output / c["file"])).duration for c in report["chapters"]]
    assert [end - start for _, start, end in chapters] == pytest.approx(lengths, abs=1e-3)
    assert (tags["title"], tags["artist"], tags["genre"]) == ("The Test Book", "Ada Author", "Audiobook")
    assert audio[0].codec_context.name == "aac" and cover == cover_jpeg()
    assert [c["title"] for c in report["chapters"]] == ["The Harbour", "The Storm", "The Morning"]
    for chapter in report["chapters"]:   # ACX: RMS -23..-18 dBFS, peaks <= -3 dBFS, per chapter
        assert -23 <= chapter["rms_db"] <= -18 and chapter["peak_db"] <= -3 and chapter["meets_target"]
    assert (output / "chapters/01.srt").read_text().count("-->") == 4   # heading + 3 sentences


def test_a_rerun_makes_nothing_and_a_lexicon_entry_remakes_exactly_its_sentences(made, tiny_fp32_folder, capsys,
                                                                                  tmp_path):
    output = made["output"]
    before = sentence_files(output)
    line = run_book(capsys, *book_args(tiny_fp32_folder, made["book"], output))
    assert line == {"chapters": 3, "sentences": 10, "made": 0, "reused": 10, "output": str(output / "The Test Book.m4b")}
    assert sentence_files(output) == before                             # not one file touched
    lexicon = tmp_path / "lexicon.tsv"
    lexicon.write_text("bass\tbase\n")
    line = run_book(capsys, *book_args(tiny_fp32_folder, made["book"], output, "--lexicon", str(lexicon)))
    assert (line["made"], line["reused"]) == (2, 8)                     # the two sentences that say "bass"
    after = sentence_files(output)
    new = sorted(set(after) - set(before))
    texts = sorted(json.loads((output / "sentences" / name.replace(".flac", ".json")).read_text())["text"]
                   for name in new)
    assert texts == ["The base player waved at her.", "The base was still there."]
    assert all(after[name] == before[name] for name in before)          # the others were not remade


def test_the_readalong_epub_syncs_each_sentence_to_its_chapter_audio(made):
    from omnivoice_demo.book.reading import read_book

    output = made["output"]
    path = output / "The Test Book.readalong.epub"
    report = json.loads((output / "report.json").read_text())
    with zipfile.ZipFile(path) as archive:
        assert archive.infolist()[0].filename == "mimetype" and archive.read("mimetype") == b"application/epub+zip"
        opf = archive.read("OEBPS/content.opf").decode()
        smil = archive.read("OEBPS/ch01.smil").decode()
        xhtml = archive.read("OEBPS/ch01.xhtml").decode()
        m4a = archive.read("OEBPS/audio/01.m4a")
    assert 'media-overlay="ch01_overlay"' in opf and "media:active-class" in opf
    clips = re.findall(r'<text src="ch01.xhtml#(\w+)"/><audio src="audio/01.m4a" clipBegin="([\d:.]+)" '
                       r'clipEnd="([\d:.]+)"/>', smil)
    spans = re.findall(r'<span id="(\w+)">([^<]*)</span>', xhtml)
    assert [i for i, _, _ in clips] == [i for i, _ in spans]
    assert [t for _, t in spans] == ["The Harbour", "Anna walked to the harbour.", "The boats were in.",
                                     "The bass player waved at her."]
    seconds = [sum(float(x) * 60 ** n for n, x in enumerate(reversed(c.split(":")))) for _, b, e in clips for c in (b, e)]
    assert seconds == sorted(seconds) and seconds[-1] <= report["chapters"][0]["samples"] / 24000
    assert len(m4a) > 1000 and 'href="audio/01.m4a" media-type="audio/mp4"' in opf
    assert [c.title for c in read_book(path).chapters] == ["The Harbour", "The Storm", "The Morning"]


def test_a_cast_naming_a_missing_voice_is_refused_before_any_work(tiny_fp32_folder, tmp_path, capsys):
    from omnivoice_demo.cli.main import main

    book = write_epub3(tmp_path / "b.epub", CHAPTERS)
    cast = tmp_path / "cast.json"
    cast.write_text(json.dumps({"Anna": "alloy", "Ben": "nobody-saved-this"}))
    code = main(book_args(tiny_fp32_folder, book, tmp_path / "out", "--cast", str(cast)))
    err = capsys.readouterr().err
    assert code == 2 and "Ben" in err and "nobody-saved-this" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_the_cast_speaks_its_quotes_and_the_plan_has_their_voices(tiny_fp32_folder, tmp_path):
    from omnivoice_demo.book.project import BookSettings, plan_book
    from omnivoice_demo.book.reading import read_book
    from omnivoice_demo.book.voices import Voicing
    from omnivoice_demo.settings.generation import GenerationConfig

    book = read_book(write_epub3(tmp_path / "b.epub", [("One", ['"Come here," said Anna. The sea was grey.',
                                                              '"No," Ben said.'])]))
    cast = {"Anna": Voicing("anna", instruct="female"), "Ben": Voicing("ben", instruct="male")}
    plan = plan_book(book, BookSettings(config=GenerationConfig(), narrator=Voicing("narrator"), cast=cast))
    voices = {item.id: item.instruct for item in plan.items}
    assert [(s.text, s.speaker, voices[s.item_id]) for s in plan.sentences] == [
        ("One", "", None), ("Come here,", "Anna", "female"), ("said Anna.", "", None), ("The sea was grey.", "", None),
        ("No,", "Ben", "male"), ("Ben said.", "", None)]
    again = plan_book(book, BookSettings(config=GenerationConfig(), narrator=Voicing("narrator"),
                                         cast={**cast, "Ben": Voicing("ben", instruct="elderly")}))
    changed = {s.text for s, t in zip(plan.sentences, again.sentences) if s.item_id != t.item_id}
    assert changed == {"No,"}      # a new voice for one character changes only that character's sentences


@pytest.mark.slow
def test_kill_9_at_any_moment_and_a_rerun_lose_nothing(tiny_fp32_folder, tmp_path, made):
    book = write_epub3(tmp_path / "b.epub", CHAPTERS)
    output = tmp_path / "out"
    command = [sys.executable, "-m", "omnivoice_demo", *book_args(tiny_fp32_folder, book, output)]
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while len(list((output / "sentences").glob("*.json"))) < 3 and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    kept = {p.name for p in (output / "sentences").glob("s*.json")}
    assert 3 <= len(kept) < 10
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["reused"] >= len(kept) and line["made"] + line["reused"] == 10
    assert not list((output / "sentences").glob(".part-*"))
    # the same sentences as the run that was never killed, sample for sample
    ours = {p.name: file_sha256(p) for p in (output / "sentences").glob("*.flac")}
    theirs = {p.name: file_sha256(p) for p in (made["output"] / "sentences").glob("*.flac") if p.name in ours}
    assert len(ours) == 10 and all(ours[name] == theirs[name] for name in theirs)
    assert (output / "The Test Book.m4b").is_file()


@pytest.mark.slow
def test_ray_with_two_local_actors_makes_the_same_sentences(tiny_fp32_folder, tmp_path, made, capsys, monkeypatch):
    ray = pytest.importorskip("ray")
    monkeypatch.setenv("PYTHONPATH", REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ray.init(num_cpus=2, _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False)
    try:
        output = tmp_path / "ray-out"
        line = run_book(capsys, *book_args(tiny_fp32_folder, made["book"], output, "--ray", "auto"))
    finally:
        ray.shutdown()
    assert line["made"] == 10
    sidecars = [json.loads(p.read_text()) for p in (output / "sentences").glob("s*.json")]
    assert len({s["pid"] for s in sidecars}) == 2        # two actors shared the sentences
    for sidecar in sidecars:
        theirs = made["output"] / "sentences" / sidecar["audio"]
        if theirs.is_file():   # the lexicon test may have remade two of the reference's
            assert sidecar["sha256"] == file_sha256(theirs)


def test_the_report_lists_the_sentences_that_failed_every_take(tiny_fp32_folder, tmp_path, monkeypatch):
    """The guard is on for books; a planted recogniser fails every take of one sentence, and the report names it."""
    import dataclasses

    from omnivoice_demo.asr import Transcript
    from omnivoice_demo.batch.local import InlineBackend
    from omnivoice_demo.batch.worker import ModelSpec
    from omnivoice_demo.book.project import BookSettings, plan_book, run_book
    from omnivoice_demo.book.reading import read_book
    from omnivoice_demo.book.voices import Voicing
    from omnivoice_demo.settings.generation import GenerationConfig
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    class Recogniser:   # hears every sentence right, but "The storm came." never
        def transcribe(self, audio, sample_rate, language=None):
            return Transcript(text=self.text, language="en", seconds=0.0)

    heard = Recogniser()

    @dataclasses.dataclass(frozen=True)
    class PlantedSpec(ModelSpec):
        def open(self, threads):
            return OmniVoiceEngine(self.folder, verify="size", calibrate=False, backbone="fp32", recognizer=heard)

    monkeypatch.setattr("omnivoice_demo.engine.guard.audio_problems", lambda audio, frames: ())
    original = OmniVoiceEngine.run

    def run(engine, plan, *args, **kwargs):   # what the recogniser will hear for this sentence
        heard.text = "nothing like it" if "storm" in plan.chunks[0] else plan.chunks[0]
        return original(engine, plan, *args, **kwargs)

    monkeypatch.setattr(OmniVoiceEngine, "run", run)
    book = read_book(write_epub3(tmp_path / "b.epub", [("One", ["Calm sea. The storm came."])]))
    settings = BookSettings(config=GenerationConfig(num_step=2, guard=True, guard_tries=2), narrator=Voicing("d"),
                            readalong=False, audio_format="flac")
    plan = plan_book(book, settings)
    done = run_book(plan, settings, tmp_path / "out",
                    backend=lambda: InlineBackend(PlantedSpec(folder=str(tiny_fp32_folder))), progress=False)
    report = json.loads((tmp_path / "out/report.json").read_text())
    assert done.summary.unpassed_chunks == 1 and done.summary.checked_chunks == 3
    [failed] = report["failed_checks"]
    assert failed["text"] == "The storm came." and failed["takes"] == 2 and failed["chapters"] == [1]
    assert failed["transcripts"] == ["nothing like it"] * 2 and (tmp_path / "out" / failed["audio"]).is_file()


@pytest.mark.parametrize("audio_format, codec", [("mp3", "mp3"), ("opus", "opus")])
def test_a_chapter_as_mp3_or_opus_keeps_its_length_and_tags(tmp_path, audio_format, codec):
    import numpy as np

    from omnivoice_demo.book.containers import write_chapter_audio

    source = tmp_path / "01.flac"
    soundfile.write(str(source), (0.1 * np.sin(np.arange(24000 * 3) / 20)).astype("float32"), 24000)
    target = tmp_path / f"01.{audio_format}"
    write_chapter_audio(target, source, audio_format, title="The Storm", album="The Book", author="Ada", track=2)
    with av.open(str(target)) as container:
        stream = container.streams.audio[0]
        seconds = sum(frame.samples for frame in container.decode(stream)) / stream.rate
        tags = {**container.metadata, **stream.metadata}
    assert stream.codec_context.name.startswith(codec) and seconds == pytest.approx(3.0, abs=0.1)
    assert tags.get("title") == "The Storm" and tags.get("album") == "The Book"


def test_made_with_word_timings_the_readalong_highlights_each_word_of_the_written_text(
        tiny_fp32_folder, recognizer_folder, tmp_path, capsys, monkeypatch):
    """``--word-timestamps``: each sentence's words (aligned by the random-weight recogniser, so their times are
    checked for order and place, not for where the words are really said) become word-level ``<par>``s inside the
    sentence's ``<seq>``, the page keeps the book's own text, a sentence spoken otherwise than written (a number
    read as words) stays one unit, and each chapter has word-level subtitles."""
    monkeypatch.setenv("OMNIVOICE_ASR_MODEL", str(recognizer_folder))
    book = write_epub3(tmp_path / "words.epub", [("The Harbour", ["Anna walked to the harbour. She had 3 boats."])],
                       cover=False)
    output = tmp_path / "out"
    run_book(capsys, *book_args(tiny_fp32_folder, book, output, "--word-timestamps", "--normalize-text"))
    with zipfile.ZipFile(output / "The Test Book.readalong.epub") as archive:
        smil = archive.read("OEBPS/ch01.smil").decode()
        xhtml = archive.read("OEBPS/ch01.xhtml").decode()
    paragraph = re.search(r"<p>((?:(?!</p>).)*Anna(?:(?!</p>).)*)</p>", xhtml).group(1)
    assert re.sub(r"<[^>]+>", "", paragraph) == "Anna walked to the harbour. She had 3 boats."   # as written
    anna = re.search(r'<span id="(c01s\d{4})"><span id="\1w001">Anna</span>', paragraph).group(1)
    words = re.findall(rf'<span id="({anna}w\d{{3}})">([^<]*)</span>', paragraph)
    assert [w for _, w in words] == ["Anna", "walked", "to", "the", "harbour"]
    seq = re.search(rf'<seq epub:textref="ch01.xhtml#{anna}">(.*?)</seq>', smil).group(1)
    clips = re.findall(r'<text src="ch01.xhtml#(\w+)"/><audio src="audio/01.m4a" clipBegin="([\d:.]+)" '
                       r'clipEnd="([\d:.]+)"/>', seq)
    assert [i for i, _, _ in clips] == [i for i, _ in words]
    seconds = [sum(float(x) * 60 ** n for n, x in enumerate(reversed(t.split(":")))) for _, b, e in clips
               for t in (b, e)]
    assert seconds == sorted(seconds)
    boats = re.search(r'<span id="(c01s\d{4})">She had 3 boats.</span>', paragraph).group(1)   # spoken "three"
    assert f'<par id="p_{boats}"><text src="ch01.xhtml#{boats}"/>' in smil and f"{boats}w001" not in smil
    word_srt = (output / "chapters" / "01.words.srt").read_text()
    assert "Anna walked" in word_srt and "three" in word_srt
    assert (output / "chapters" / "01.words.vtt").read_text().startswith("WEBVTT")


def test_a_book_made_in_parts_grows_into_one_m4b_in_book_order(tiny_fp32_folder, tmp_path, capsys):
    """Issue 51: ``--chapters 1-3`` one evening, ``--chapters 5-6`` the next: one M4B with chapters 1, 2, 3, 5, 6
    in book order (the first part is kept, not overwritten), each chapter's files named by its number in the
    book, and nothing left in chapters/ that no kept chapter wrote (an earlier run's word subtitles, a chapter
    file numbered otherwise); the last evening makes only chapter 4."""
    from omnivoice_demo.book.containers import read_chapters

    titles = ["One", "Two", "Three", "Four", "Five", "Six"]
    book = write_epub3(tmp_path / "six.epub", [(t, [f"This is chapter {t.lower()}."]) for t in titles], cover=False)
    output = tmp_path / "out"
    m4b = output / "The Test Book.m4b"
    first = run_book(capsys, *book_args(tiny_fp32_folder, book, output, "--chapters", "1-3"))
    assert first["made"] == 6 and [c["title"] for c in read_chapters(m4b)] == ["One", "Two", "Three"]
    kept = {name: file_sha256(output / "chapters" / name) for name in ("01.flac", "02.flac", "03.flac")}
    (output / "chapters" / "01.words.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nstale\n")
    (output / "chapters" / "04.flac").write_bytes((output / "chapters" / "01.flac").read_bytes())
    second = run_book(capsys, *book_args(tiny_fp32_folder, book, output, "--chapters", "5-6"))
    assert (second["made"], second["reused"]) == (4, 6)   # the first part's sentences checked and reused
    assert [c["title"] for c in read_chapters(m4b)] == ["One", "Two", "Three", "Five", "Six"]
    names = sorted(p.name for p in (output / "chapters").iterdir() if not p.name.startswith("."))
    assert names == sorted(f"{n:02d}.{kind}" for n in (1, 2, 3, 5, 6) for kind in ("flac", "srt", "vtt",
                                                                                   "chapter.json"))
    assert {name: file_sha256(output / "chapters" / name) for name in kept} == kept   # the first part untouched
    assert "chapter five" in (output / "chapters" / "05.srt").read_text()
    marks = read_chapters(m4b)
    lengths = [soundfile.info(str(output / "chapters" / f"{n:02d}.flac")).duration for n in (1, 2, 3, 5, 6)]
    assert [m["end"] - m["start"] for m in marks] == pytest.approx(lengths, abs=1e-3)
    with zipfile.ZipFile(output / "The Test Book.readalong.epub") as archive:
        smils = sorted(n for n in archive.namelist() if n.endswith(".smil"))
        assert smils == [f"OEBPS/ch{n:02d}.smil" for n in (1, 2, 3, 5, 6)]
        assert "chapter five" in archive.read("OEBPS/ch05.xhtml").decode()
    last = run_book(capsys, *book_args(tiny_fp32_folder, book, output))
    assert (last["made"], last["reused"]) == (2, 10)
    assert [c["title"] for c in read_chapters(m4b)] == titles


def test_the_book_tabs_download_is_named_after_the_book(tiny_fp32_folder, tmp_path):
    """Issue 51: the Book tab's M4B was offered as ``book-<token>.m4b``; it is named as the CLI names it, with the
    output folder's token (what lets only its owner fetch it on a shared server) before the suffix."""
    import types

    from omnivoice_demo.ui.tabs.book import downloadable
    from tests.support.studios import folder_studio

    studio = folder_studio(tiny_fp32_folder, tmp_path / "studio")
    made = tmp_path / "The Test Book.m4b"
    made.write_bytes(b"an audiobook")
    done = types.SimpleNamespace(state="done", result=types.SimpleNamespace(output=str(made)))
    copy = downloadable(studio, done, None)
    assert re.fullmatch(r"The Test Book-[0-9a-f]{24}\.m4b", os.path.basename(copy)), copy
    assert open(copy, "rb").read() == b"an audiobook"
    assert downloadable(studio, types.SimpleNamespace(state="running", result=None), None) is None


def test_a_book_without_a_recogniser_is_told_once_before_any_work_with_the_flags_book_has(
        tiny_fp32_folder, tmp_path, capsys, monkeypatch):
    """Issue 51: with the sentence check on (the default for books) and no recogniser to be had, every sentence
    failed with the same long line naming flags ``book`` has not (``guard off``, ``--asr-model``), then ``made 0``,
    exit 3.  Now the run is refused once, before any sentence is made, naming --no-guard and OMNIVOICE_ASR_MODEL."""
    from omnivoice_demo.cli.main import main

    monkeypatch.delenv("OMNIVOICE_ASR_MODEL", raising=False)
    monkeypatch.setenv("OMNIVOICE_CACHE", str(tmp_path / "empty-cache"))   # nothing cached, and offline
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    book = write_epub3(tmp_path / "b.epub", [("One", ["A first sentence. A second one. And a third."])], cover=False)
    output = tmp_path / "out"
    args = [a for a in book_args(tiny_fp32_folder, book, output) if a != "--no-guard"]
    capsys.readouterr()
    code = main(args)
    said = capsys.readouterr()
    text = said.out + said.err
    assert code == 2, text
    assert len(text.strip().splitlines()) == 1 and "made" not in said.out, text   # said once, nothing run
    assert "--no-guard" in text and "OMNIVOICE_ASR_MODEL=DIR" in text, text
    assert "--asr-model" not in text and "guard off" not in text, text
    assert not list(output.glob("sentences/*.flac"))
