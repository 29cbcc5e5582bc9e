"""SSML: each element read into segments (pauses counted in samples), the XML bombs refused, the limits of the
markup, and the generation of the segments on the tiny engine: pauses inserted as exact silence, neighbouring
segments joined as the reference joins chunks, several voices in one request through the HTTP API."""

from __future__ import annotations

import functools
import io
import json

import numpy as np
import pytest
import soundfile as sf

from omnivoice_demo.audio.processing import cross_fade_chunks
from omnivoice_demo.text import normalize
from omnivoice_demo.settings.limits import Limits
from omnivoice_demo.text.lexicon import from_mapping
from omnivoice_demo.text.ssml import Segment, SsmlError, looks_like_ssml, parse
from omnivoice_demo.errors import InvalidInput, ResourceLimitExceeded
from omnivoice_demo.storage.digests import codes_sha256
from omnivoice_demo.studio.stream_audio import pcm16
from omnivoice_demo.studio.vocabulary import DESIGNS, resolve_voice
from tests.test_malformed_requests import api, speech  # noqa: F401 - the HTTP API's router in process (a fixture)
from tests.test_vocabulary import a_voice

FAST = dict(seed=7, num_step=4)


def speak(body: str, **attributes) -> str:
    extra = "".join(f' {k}="{v}"' for k, v in attributes.items())
    return f"<speak{extra}>{body}</speak>"


def spoken(markup: str) -> list[Segment]:
    return [s for s in parse(markup).segments if s.text]


def needs_normaliser():
    if normalize.missing_modules():
        pytest.skip("the [normalize] extra is not installed")


# --- the elements, one by one -------------------------------------------------------------------------

def test_detection_is_a_text_that_starts_with_speak():
    assert looks_like_ssml("  \n<speak>Hi.</speak>") and looks_like_ssml('<speak version="1.1">Hi.</speak>')
    assert looks_like_ssml('<?xml version="1.0"?>\n<speak>Hi.</speak>') and looks_like_ssml(BILLION_LAUGHS)
    assert not looks_like_ssml("Say <speak> please.") and not looks_like_ssml("<?xml?> no") \
        and not looks_like_ssml(None)


def test_speak_p_and_s_are_text_with_their_boundaries():
    document = parse(speak("<p><s>One.</s><s>Two.</s></p>\n  <p>Three   four.</p>"))
    assert [s.text for s in document.segments] == ["One. Two. Three four."]
    assert document.notes == ()


@pytest.mark.parametrize("attributes, samples", [
    ('time="500ms"', 12000), ('time="1.5s"', 36000), ('time="1ms"', 24), ('time="0.0417s"', 1001),
    ('time=" 2 S "', 48000), ('strength="x-weak"', 6000), ('strength="weak"', 12000), ('strength="medium"', 18000),
    ("", 18000), ('strength="strong"', 24000), ('strength="x-strong"', 30000),
    ('time="250ms" strength="x-strong"', 6000),   # time wins
])
def test_break_is_a_pause_counted_in_samples_at_24_khz(attributes, samples):
    segments = parse(speak(f"Before.<break {attributes}/>After.")).segments
    assert [s.text for s in segments] == ["Before.", "", "After."]
    assert segments[1].silence == samples


def test_breaks_next_to_each_other_add_up_and_strength_none_is_no_pause():
    segments = parse(speak('A.<break time="100ms"/> <break time="20ms"/>B.<break strength="none"/>C.')).segments
    assert [(s.text, s.silence) for s in segments] == [("A.", 0), ("", 2880), ("B. C.", 0)]


@pytest.mark.parametrize("attributes, words", [('time="fast"', "500ms or 1.5s"), ('time="11s"', "at most 10 s"),
                                               ('strength="loud"', "x-strong"), ('time="-1s"', "500ms")])
def test_a_bad_break_is_refused_with_its_line_and_column(attributes, words):
    with pytest.raises(SsmlError, match=words) as caught:
        parse(f'<speak>\nA.\n  <break {attributes}/></speak>')
    assert (caught.value.line, caught.value.column) == (3, 3)


def test_prosody_rate_is_the_speed_and_pitch_and_volume_are_noted():
    document = parse(speak('A.<prosody rate="slow">B.<prosody rate="+50%">C.</prosody></prosody>'
                           '<prosody rate="80%" pitch="high" volume="loud">D.</prosody><prosody rate="1.2">E.</prosody>'))
    assert [(s.text, s.rate) for s in document.segments] == [
        ("A.", 1.0), ("B.", 0.75), ("C.", 1.125), ("D.", 0.8), ("E.", 1.2)]
    assert any("<prosody pitch>" in n and "ignored" in n for n in document.notes)
    assert any("<prosody volume>" in n for n in document.notes)


def test_a_rate_outside_the_models_range_is_clamped_with_a_note():
    document = parse(speak('<prosody rate="5">Quick.</prosody><prosody rate="x-slow">Slow.</prosody>'))
    assert [s.rate for s in document.segments] == [2.0, 0.5]
    assert any("2 was used" in n for n in document.notes)


def test_sub_reads_its_alias():
    assert [s.text for s in spoken(speak('The <sub alias="World Wide Web">WWW</sub> is big.'))] == \
        ["The World Wide Web is big."]
    with pytest.raises(SsmlError, match="alias"):
        parse(speak("<sub>WWW</sub>"))


def test_say_as_characters_spells_out():
    assert spoken(speak('Code <say-as interpret-as="characters">AB1</say-as>, '
                        '<say-as interpret-as="spell-out">ok</say-as>.'))[0].text == "Code A B 1 , o k ."


@pytest.mark.parametrize("kind, content, typed", [
    ("cardinal", "123", "123"), ("ordinal", "2", "2nd"), ("ordinal", "13", "13th"), ("digits", "123", "1 2 3"),
    ("date", "2025-12-01", "2025-12-01"), ("time", "10:30", "10:30"), ("telephone", "555-0123", "5 5 5, 0 1 2 3"),
])
def test_say_as_numbers_read_through_the_normaliser(kind, content, typed):
    needs_normaliser()
    text = spoken(speak(f'<say-as interpret-as="{kind}">{content}</say-as>'))[0].text
    assert text == " ".join(normalize.normalize_text(typed, "en").split())
    assert not any(ch.isdigit() for ch in text)


def test_say_as_in_a_num2words_language_and_chinese():
    needs_normaliser()
    assert spoken(speak('<say-as interpret-as="ordinal">3</say-as>', **{"xml:lang": "de"}))[0].text == "dritte"
    assert spoken(speak('<say-as interpret-as="ordinal">3</say-as>', **{"xml:lang": "zh"}))[0].text == \
        normalize.normalize_text("第3", "zh")


def test_say_as_without_xml_lang_reads_in_the_requests_language(engine):
    """No xml:lang: the request's language reads the number (it was English's rule whatever the request said);
    an xml:lang still wins, and with neither the normaliser's rule without a language (English here) stays."""
    markup = speak('Wir sind <say-as interpret-as="cardinal">21</say-as>. '
                   '<lang xml:lang="fr">Et <say-as interpret-as="cardinal">21</say-as>.</lang>')
    german = [s.text for s in parse(markup, language="de").segments if s.text]
    assert german == ["Wir sind einundzwanzig .", "Et vingt et un ."], german
    assert [s.text for s in parse(markup).segments if s.text][0] == \
        "Wir sind " + " ".join(normalize.normalize_text("21", "en").split()) + " ."
    plan = engine.prepare(markup, language="de", ssml=True, num_step=2)
    assert "einundzwanzig" in plan.plans[0].text and "vingt et un" in plan.plans[1].text


def test_say_as_without_the_normaliser_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(normalize, "missing_modules", lambda: ["pynini"])
    with pytest.raises(SsmlError, match=r"line 1.*date.*pynini.*pip install"):
        parse(speak('<say-as interpret-as="date">2025-12-01</say-as>'))
    monkeypatch.setattr(normalize, "missing_modules", lambda: ["num2words", "pynini"])   # numbers need num2words
    with pytest.raises(SsmlError, match=r"line 1.*cardinal.*num2words, pynini.*pip install"):
        parse(speak('<say-as interpret-as="cardinal">12</say-as>'))
    assert spoken(speak('<say-as interpret-as="characters">12</say-as>'))[0].text == "1 2"   # needs none


@pytest.mark.parametrize("markup, words", [('<say-as interpret-as="money">3</say-as>', "must be one of"),
                                           ('<say-as interpret-as="cardinal">many</say-as>', "holds a number")])
def test_a_bad_say_as_is_refused(markup, words):
    needs_normaliser()
    with pytest.raises(SsmlError, match=words):
        parse(speak(markup))


def test_phoneme_becomes_the_models_bracket_syntax_as_the_lexicon_writes_it():
    cmu = spoken(speak('The <phoneme alphabet="cmu-arpabet" ph="b ey1 s">bass</phoneme> is loud.'))[0].text
    assert cmu == from_mapping({"bass": "[B EY1 S]"}).apply("The bass is loud.") == "The [B EY1 S] is loud."
    pinyin = spoken(speak('<phoneme alphabet="pinyin" ph="ni3 hao3">你好</phoneme>'))[0].text
    assert pinyin == "NI3 HAO3"


@pytest.mark.parametrize("attributes, words", [('alphabet="ipa" ph="beɪs"', "cmu-arpabet or pinyin"),
                                               ('alphabet="cmu-arpabet" ph="b e y s 1"', "is not cmu-arpabet"),
                                               ('alphabet="pinyin" ph="ni hao"', "is not pinyin")])
def test_a_bad_phoneme_is_refused(attributes, words):
    with pytest.raises(SsmlError, match=words):
        parse(speak(f"<phoneme {attributes}>bass</phoneme>"))


def test_voice_name_and_lang_give_each_segment_its_voice_and_language():
    document = parse(speak('Hi.<voice name="onyx" gender="male">I am Onyx. <lang xml:lang="fr">Bonjour.</lang>'
                           '</voice><voice name="Anna">And I Anna.</voice>', **{"xml:lang": "en"}))
    assert [(s.text, s.voice, s.language) for s in document.segments] == [
        ("Hi.", None, "en"), ("I am Onyx.", "onyx", "en"), ("Bonjour.", "onyx", "fr"), ("And I Anna.", "Anna", "en")]
    assert any("<voice gender>" in n for n in document.notes)
    with pytest.raises(SsmlError, match="needs name"):
        parse(speak("<voice>Hi.</voice>"))
    with pytest.raises(SsmlError, match="needs xml:lang"):
        parse(speak("<lang>Hi.</lang>"))


def test_emphasis_and_mark_are_kept_as_text_with_a_note():
    document = parse(speak('A <emphasis level="strong">big</emphasis> day.<mark name="here"/> Yes.'))
    assert [s.text for s in document.segments] == ["A big day. Yes."]
    assert any("<emphasis>" in n for n in document.notes) and any("<mark>" in n for n in document.notes)


def test_an_unknown_element_is_refused_with_its_line_and_column():
    with pytest.raises(SsmlError, match=r"line 2, column 5.*<audio> is not supported") as caught:
        parse('<speak>Hi.\n    <audio src="x.wav"/></speak>')
    assert caught.value.param == "input"
    with pytest.raises(SsmlError, match="root element must be <speak>"):
        parse("<p>Hi.</p>")


@pytest.mark.parametrize("markup, where", [("<speak>\n  <p>Hi.</s></speak>", (2, 11)),
                                           ("<speak>A & B</speak>", (1, 11)),
                                           ("<speak>Hi.", (1, 11)), ("<speak>&undefined;</speak>", (1, 8))])
def test_malformed_xml_is_refused_with_its_line_and_column(markup, where):
    with pytest.raises(SsmlError, match="not well-formed XML") as caught:
        parse(markup)
    assert (caught.value.line, caught.value.column) == where
    assert f"line {where[0]}, column {where[1]}" in str(caught.value)


# --- XML bombs and the bounds of the markup ------------------------------------------------------------

BILLION_LAUGHS = ('<?xml version="1.0"?>\n<!DOCTYPE speak [\n <!ENTITY lol "lol">\n'
                  + "".join(f' <!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n'
                            for i in range(1, 10))
                  + "]>\n<speak>&lol9;</speak>")
EXTERNAL_ENTITY = '<?xml version="1.0"?>\n<!DOCTYPE speak [<!ENTITY secret SYSTEM "file:///etc/passwd">]>\n' \
                  "<speak>&secret;</speak>"
EXTERNAL_DTD = '<!DOCTYPE speak SYSTEM "http://example.invalid/speak.dtd">\n<speak>Hi.</speak>'
PARAMETER_ENTITY = '<!DOCTYPE speak [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>\n<speak>Hi.</speak>'


@pytest.mark.parametrize("markup", [BILLION_LAUGHS, EXTERNAL_ENTITY, EXTERNAL_DTD, PARAMETER_ENTITY],
                         ids=["billion-laughs", "external-entity", "external-dtd", "parameter-entity"])
def test_xml_bombs_are_refused_before_anything_expands(markup):
    with pytest.raises(SsmlError, match=r"DTD \(<!DOCTYPE \.\.\.>\) is not accepted") as caught:
        parse(markup, Limits.local())
    assert caught.value.line is not None and "Traceback" not in str(caught.value)


def test_the_markup_is_bounded_and_its_text_counts_against_the_text_limit():
    limits = Limits(max_text_chars=40, max_ssml_chars=400, max_ssml_elements=6)
    # markup well past the text limit, text within it
    assert parse(speak('<break time="1ms"/>' * 4 + "Short text.", version="1.1"), limits)
    with pytest.raises(ResourceLimitExceeded, match="max_text_chars"):
        parse(speak("<s>" + "x" * 30 + "</s><s>" + "y" * 30 + "</s>"), limits)
    with pytest.raises(ResourceLimitExceeded, match="max_ssml_chars"):
        parse(speak(" " * 400 + "Hi."), limits)
    with pytest.raises(ResourceLimitExceeded, match="max_ssml_elements"):
        parse(speak("<s>A</s>" * 6), limits)
    with pytest.raises(ResourceLimitExceeded, match="say-as text read through the normaliser.*max_normalize_chars"):
        parse(speak('<say-as interpret-as="digits">' + "7" * 700 + "</say-as>"), Limits(max_text_chars=5000))
    with pytest.raises(SsmlError, match="nested more than 32 deep"):
        parse(speak("<s>" * 40 + "Hi." + "</s>" * 40), Limits.local())
    with pytest.raises(InvalidInput, match="not valid Unicode"):
        parse(speak("Hi \ud800."))


# --- generation on the tiny engine -----------------------------------------------------------------------

def design_voices(name):
    return resolve_voice(name, [], lambda saved: None)


def test_a_break_is_exact_silence_between_the_segments_own_audio(engine):
    first = engine.generate("Hello there.", **FAST).audio
    second = engine.generate("Good morning.", **FAST).audio
    events = list(engine.stream(speak('Hello there.<break time="250ms"/>Good morning.'), ssml=None, **FAST))
    result = events[-1]
    assert np.array_equal(result.audio, np.concatenate([first, np.zeros(6000, np.float32), second]))
    pause = result.audio[len(first):len(first) + 6000]
    assert pause.size == 6000 and not pause.any()
    assert [(s["text"], s["start_sample"], s["end_sample"]) for s in result.segments] == [
        ("Hello there.", 0, len(first)), ("Good morning.", len(first) + 6000, len(first) + 6000 + len(second))]
    # what a stream sends, piece after piece, is the result sample for sample
    pieces = [e.audio for e in events if e.kind == "segment"]
    assert len(pieces) == 3 and np.array_equal(np.concatenate(pieces), result.audio)
    assert len(result.codes) == 2 and result.seed == 7


def test_neighbouring_voices_are_joined_as_the_reference_joins_chunks(engine):
    first = engine.generate("Hello there.", instruct=DESIGNS["alloy"], **FAST).audio
    second = engine.generate("Good morning.", instruct=DESIGNS["onyx"], **FAST).audio
    markup = speak('<voice name="alloy">Hello there.</voice> <voice name="ONYX">Good morning.</voice>')
    result = engine.generate(markup, ssml=True, voices=design_voices, **FAST)
    joined = cross_fade_chunks([first[np.newaxis], second[np.newaxis]])[0]
    assert np.array_equal(result.audio, joined)
    assert [s["instruct"] for s in result.segments] == [engine.prepare("x", instruct=DESIGNS[name]).instruct
                                                       for name in ("alloy", "onyx")]
    assert result.segments[1]["start_sample"] == len(joined) - len(second)


def test_rate_language_and_the_plan_of_each_segment(engine):
    plan = engine.prepare(speak('<prosody rate="x-slow">Hello there.</prosody><lang xml:lang="fr">Bonjour.</lang>'),
                          ssml=True, language="en", speed=1.2, **FAST)
    assert [(p.speed, p.language) for p in plan.plans] == [(pytest.approx(0.6), "en"), (1.2, "fr")]
    normal = engine.prepare("Hello there.", speed=1.2, **FAST)
    assert plan.plans[0].target_frames > normal.target_frames
    assert plan.config.seed == 7 and len(plan.chunks) == 2


def test_the_segments_are_checked_before_any_work(engine, limited):
    with pytest.raises(InvalidInput, match=r"line 1, <voice name='Nobody'>.*No saved voice or named design is "
                                           r"called 'Nobody'"):
        engine.prepare(speak('<voice name="Nobody">Hi.</voice>'), ssml=True, voices=design_voices)
    with pytest.raises(InvalidInput, match="needs voice names"):
        engine.prepare(speak('<voice name="alloy">Hi.</voice>'), ssml=True)
    with pytest.raises(InvalidInput, match="no text to speak"):
        engine.prepare(speak('<break time="1s"/>'), ssml=True)
    with pytest.raises(InvalidInput, match="duration"):
        engine.prepare(speak("Hi."), ssml=True, duration=2.0)
    limited(max_audio_seconds=5)
    with pytest.raises(ResourceLimitExceeded, match="with its pauses.*max_audio_seconds"):
        engine.prepare(speak('Hi.<break time="3s"/><break time="3s"/>Bye.'), ssml=True)
    assert engine.prepare("<speak>Hi.</speak>").text == "<speak>Hi.</speak>"   # the Python default: plain text


# --- the HTTP API: several voices in one request ----------------------------------------------------------

MULTI_VOICE = speak('<voice name="anna">Hello there.</voice><break time="400ms"/>'
                    '<voice name="onyx"><prosody rate="fast">Good morning.</prosody></voice>')


def test_multi_voice_ssml_through_the_http_api(api, engine):
    api.context.voices.save(a_voice(), "Anna")
    voices = functools.partial(resolve_voice, saved_names=api.context.voices.names(),
                               load_saved=api.context.voices.load)
    expected = engine.generate(MULTI_VOICE, ssml=True, voices=voices, **FAST)
    body = {"input": MULTI_VOICE, "voice": "alloy", "seed": 7, "steps": 4, "normalize_text": False}
    whole = speech(api, dict(body, response_format="wav", stream=False))
    assert whole.status_code == 200, whole.text
    assert whole.headers["X-OmniVoice-Codes-SHA256"] == codes_sha256(expected.codes)
    assert whole.headers["X-OmniVoice-Chunks"] == "2"
    audio, rate = sf.read(io.BytesIO(whole.content), dtype="int16")
    assert rate == 24000 and len(audio) == len(expected.audio)
    anna_end = expected.segments[0]["end_sample"]
    assert expected.segments[1]["start_sample"] == anna_end + 9600 and not audio[anna_end:anna_end + 9600].any()
    assert expected.segments[1]["speed"] == 1.25
    streamed = speech(api, dict(body, response_format="pcm"))   # OpenAI's default: streamed as made
    assert streamed.status_code == 200 and streamed.content == pcm16(expected.audio)


@pytest.mark.parametrize("markup, status, words", [
    (speak('<voice name="Bob">Hi.</voice>'), 400, "called 'Bob'"),
    ("<speak>\n<p>Hi.</speak>", 400, "line 2, column 9"),   # at the mismatched name
    (BILLION_LAUGHS, 400, "DTD"), (EXTERNAL_ENTITY, 400, "DTD"),
    (speak("<s>Hi.</s>" * 600), 413, "max_ssml_elements"),
])
def test_bad_ssml_is_a_4xx_with_a_clear_message(api, markup, status, words):
    response = speech(api, {"input": markup, "stream": False, "steps": 1})
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    assert words in message and "Traceback" not in message and "internal" not in message.lower()


# --- batch rows: SSML with its voices read when the file is read, subtitles on the segments ----------------

def test_an_ssml_batch_row_has_subtitles_on_its_segments(tiny_fp32_folder, tmp_path):
    from omnivoice_demo.batch.items import read_batch
    from omnivoice_demo.batch.local import InlineBackend
    from omnivoice_demo.batch.plan import BatchPlan
    from omnivoice_demo.batch.runner import run_batch
    from omnivoice_demo.batch.subtitles import parse_timestamps
    from omnivoice_demo.batch.worker import Job, ModelSpec
    from omnivoice_demo.settings.generation import GenerationConfig

    markup = speak('Hello there.<break time="500ms"/><voice name="onyx">Good morning. See you.</voice>')
    source = tmp_path / "items.jsonl"
    source.write_text("\n".join(json.dumps(row) for row in [
        {"id": "show", "text": markup, "seed": 3},
        {"id": "nobody", "text": speak('<voice name="Nobody">Hi.</voice>')},
        {"id": "broken", "text": "<speak>\n<p>Hi.</speak>"}]) + "\n")
    items, problems = read_batch(source, base=GenerationConfig(num_step=4), voices_dir=tmp_path / "voices")
    assert [item.id for item in items] == ["show"] and items[0].ssml_voices == (("onyx", None, DESIGNS["onyx"]),)
    assert [line for line, _ in problems] == [2, 3]
    assert "called 'Nobody'" in problems[0][1] and "line 2, column" in problems[1][1]
    job = Job(output=str(tmp_path / "out"), subtitles=("srt",))
    summary = run_batch(BatchPlan(items=tuple(items), job=job),
                        backend=lambda: InlineBackend(ModelSpec(model=str(tiny_fp32_folder))), progress=False).summary
    assert summary.done == 1
    sidecar = json.loads((tmp_path / "out" / "show.json").read_text())
    audio, _ = sf.read(tmp_path / "out" / sidecar["audio"], dtype="int16")
    first, second = sidecar["chunks"]
    assert [first["text"], second["text"]] == ["Hello there.", "Good morning. See you."]
    pause = audio[round(first["end"] * 24000):round(second["start"] * 24000)]
    assert len(pause) == 12000 and not pause.any()                      # the break, exactly
    cues = parse_timestamps((tmp_path / "out" / "show.srt").read_text())
    assert len(cues) == 3 and cues[0][0] == pytest.approx(first["start"], abs=0.001)
    assert cues[1][0] == pytest.approx(second["start"], abs=0.001) and cues[2][1] == pytest.approx(second["end"],
                                                                                                     abs=0.001)


# --- Wyoming: a synthesize text that starts with <speak ------------------------------------------------------

@pytest.fixture(scope="module")
def wyoming(tiny_fp32_folder, tmp_path_factory):
    from omnivoice_demo.studio import EngineService, ModelManager, VoiceLibrary
    from omnivoice_demo.wyoming.server import WyomingServer, make_context
    from tests.support.app_server import free_port

    root = tmp_path_factory.mktemp("wyoming-ssml")
    models = ModelManager(cache_dir=root / "cache", offline=True)
    loaded = models.load(str(tiny_fp32_folder), "fp32")
    port = free_port()
    running = WyomingServer(f"tcp://127.0.0.1:{port}",
                            make_context(models, VoiceLibrary(root / "voices"), EngineService(),   # the exact path
                                         preset="Reference", quick_start=0)).start_in_thread()
    running.port = port
    yield running, loaded.engine
    running.stop_thread()


def test_wyoming_speaks_ssml_with_its_pauses_and_voices(wyoming):
    from tests.test_wyoming import audio_of, synthesize, talk

    server, engine = wyoming
    markup = speak('Hello there.<break time="200ms"/><voice name="onyx">Good morning.</voice>')
    received = talk(server.port, [synthesize(markup, seed=11)])
    assert [e.type for _, e in received][-1] == "audio-stop"
    expected = engine.generate(markup, ssml=True, voices=design_voices, seed=11, sentence_streaming=True,
                               normalize_text="auto")
    assert audio_of(received) == pcm16(expected.audio) and len(expected.segments) == 2
    error = talk(server.port, [synthesize(BILLION_LAUGHS)], until=("error",))[-1][1]
    assert "DTD" in error.data["text"] and error.data["code"] == "invalid_value"


README_SSML = '''<speak>Welcome.<break time="500ms"/>
  <voice name="onyx">I am <say-as interpret-as="ordinal">2</say-as> in line.</voice>
  <prosody rate="slow">The <phoneme alphabet="cmu-arpabet" ph="B EY1 S">bass</phoneme> is loud.</prosody>
</speak>'''


def test_the_readmes_ssml_reads_with_the_default_install_without_wetextprocessing(monkeypatch):
    """The default install has num2words, not WeTextProcessing (pynini, about 740 MB): the README's example (an
    ordinal) and the other number kinds read through num2words; a date still says what to install."""
    import pathlib
    import sys

    assert README_SSML in (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    for module in ("tn", "pynini"):
        monkeypatch.setitem(sys.modules, module, None)
    assert normalize.missing_modules() == ["WeTextProcessing", "pynini"]
    texts = " ".join(s.text for s in spoken(README_SSML))
    assert "I am second in line." in texts
    said = [spoken(speak(f'<say-as interpret-as="{kind}">{content}</say-as>'))[0].text
            for kind, content in (("cardinal", "1,234"), ("digits", "42"), ("telephone", "555-01"))]
    assert said == ["one thousand, two hundred and thirty-four", "four two", "five five five, zero one"]
    assert spoken(speak('<say-as interpret-as="ordinal">3</say-as>', **{"xml:lang": "de"}))[0].text == "dritte"
    with pytest.raises(SsmlError, match="WeTextProcessing.*740 MB"):
        parse(speak('<say-as interpret-as="date">2025-12-01</say-as>'))
