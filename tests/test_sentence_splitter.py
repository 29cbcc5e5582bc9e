"""The one sentence splitter (``text.sentences``, on sentencex) and the fronts that cut by it (issue 50, item 2;
issue 51, point 3).

The cases below were written for these tests (held out from the benchmark's, ``benchmarks/sentence_splitters.py``):
each is a text and the sentences a reader cuts it into.
"""

from __future__ import annotations

import pytest

from omnivoice_demo.text import sentences as sentences_module
from omnivoice_demo.text.sentences import decided_end, sentence_texts, split_sentences

CASES = [
    # English: titles, Latin abbreviations, a time of day with full stops, a quoted question that goes on, decimals
    ("en", ["Dr. Brown met Prof. Adams at 9 a.m. on Friday.", "They talked for an hour."]),
    ("en", ['"Where are you going?" he asked the driver.', "She pointed north."]),
    ("en", ["Bring fruit, e.g. apples or pears, and bread.", "The bill came to 12.75 pounds."]),
    ("en", ["2. Terms and Conditions.", "You may copy the program as you receive it."]),
    # German: an ordinal date, a time with a full stop, an abbreviation with a space, a numbered heading
    ("de", ["Wir treffen uns am 14. März in Köln.", "Der Zug kommt um 9.45 Uhr an."]),
    ("de", ["Das gilt z. B. für Frau Dr. Weber.", "Sie ist einverstanden."]),
    ("de", ["3. Ergebnisse.", "Die Messung ergab 2,7 Prozent."]),
    # French, Spanish, Italian, Russian: numbered headings, decimals, quoted questions, abbreviations
    ("fr", ["2. Méthode.", "Nous avons mesuré 4.2 litres par jour."]),
    ("es", ["2. Métodos.", "La Dra. Ruiz midió 4.2 litros al día."]),
    ("es", ["«¿Vienes mañana?», preguntó su hermano.", "Ella dijo que sí."]),
    ("it", ["2. Metodi.", "Il dott. Neri ha misurato 4.2 litri al giorno."]),
    ("ru", ["2. Методы.", "Мы измерили 4.2 литра в день."]),
    ("ru", ["Он живёт на ул. Пушкина с 2010 года.", "Ему там нравится."]),
    # Chinese and Japanese: full-width ends and decimals (a Japanese quoted question followed by と is still cut
    # by sentencex: BENCHMARKS.md lists what it gets wrong)
    ("zh", ["我们明天见。", "你几点到？", "价格是3.5元。"]),
    ("ja", ["会議は3.5時間かかった。", "みんな疲れていた。", "本当ですか？"]),
]


def joined(language, sentences):
    return ("" if language in ("zh", "ja") else " ").join(sentences)


@pytest.mark.parametrize("language,expected", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_reader_s_sentences_in_eight_languages(language, expected):
    text = joined(language, expected)
    assert sentence_texts(text, language) == expected
    assert "".join(split_sentences(text, language)) == text          # pieces join back to the text


@pytest.mark.parametrize("language,expected", [c for c in CASES if c[0] in ("de", "ru", "zh", "ja")])
def test_without_a_language_the_text_s_own_rules_apply(language, expected):
    assert sentence_texts(joined(language, expected)) == expected


def test_numbered_headings_stay_with_their_title_issue_51():
    """Issue 51, point 3: "1. Source Code." was spoken as "1." and then "Source Code."."""
    text = "1. Source Code. The source code for a work means the preferred form. 2.1. Scope. It is. Done. 3. End."
    assert sentence_texts(text, "en") == ["1. Source Code.", "The source code for a work means the preferred form.",
                                          "2.1. Scope.", "It is.", "Done.", "3. End."]
    assert sentence_texts("Gut. 1. Einleitung. Weiter.", "de") == ["Gut.", "1. Einleitung.", "Weiter."]
    # a number that ends a sentence is not a heading
    assert sentence_texts("He was born in 1990. Then he moved.", "en") == ["He was born in 1990.", "Then he moved."]


def test_tags_white_space_and_empty_text():
    assert split_sentences("[laughter] Hi there. [sigh] Bye.", "en") == ["[laughter] Hi there. ", "[sigh] Bye."]
    assert split_sentences("One.\n\nTwo.  ", "en") == ["One.\n\n", "Two.  "]
    assert split_sentences("", "en") == [""] and sentence_texts("  ", "en") == [""]
    assert sentence_texts("no end", "en") == ["no end"]


def test_a_stream_decides_a_cut_only_once_a_whole_word_has_come_after_it():
    assert decided_end("Prof.", "en") == 0
    assert decided_end("Prof. Smith arrived.", "en") == 0
    assert decided_end("Prof. Smith arrived. He", "en") == 0          # "He" may still be "He." or "Hello"
    assert decided_end("Prof. Smith arrived. He left", "en") == len("Prof. Smith arrived. ")
    assert decided_end("Wir kommen am 5. Juni an", "de") == 0          # not cut after the ordinal
    assert decided_end("你好。再", "zh") == len("你好。")                 # a script without spaces: a character is a word


# --- every front cuts by the one function -------------------------------------------------------------------------

def fake_boundaries(language, text):
    """A segmenter that cuts after "#" and ";" only (never after a full stop), which no front's own rule did."""
    ends = [i + 1 for i, ch in enumerate(text) if ch in "#;"] + [len(text)]
    return [{"end_index": end} for end in ends]


@pytest.fixture
def fake_segmenter(monkeypatch):
    from omnivoice_demo.text import language_id, text_language

    monkeypatch.setattr(sentences_module.sentencex, "get_sentence_boundaries", fake_boundaries)
    text_language.detect_language.cache_clear()
    language_id.guess_language.cache_clear()
    yield
    text_language.detect_language.cache_clear()
    language_id.guess_language.cache_clear()


def test_subtitles_cut_where_the_splitter_does(fake_segmenter):
    from omnivoice_demo.asr.alignment import WordTiming
    from omnivoice_demo.batch.subtitles import cues_for_chunks, cues_for_words

    cues = cues_for_chunks([{"text": "alpha # beta. gamma", "start": 0.0, "end": 3.0}], "en")
    assert [cue.text for cue in cues] == ["alpha #", "beta. gamma"]
    words = [WordTiming(w, 0.3 * i, 0.3 * i + 0.2, 0.9) for i, w in enumerate("alpha # beta. gamma".split())]
    assert [cue.text for cue in cues_for_words(words, language="en")] == ["alpha #", "beta. gamma"]


def test_books_cut_where_the_splitter_does(fake_segmenter):
    from omnivoice_demo.book.project import BookSettings, plan_book
    from omnivoice_demo.book.contents import Book, Chapter
    from omnivoice_demo.book.voices import Voicing
    from omnivoice_demo.settings.generation import GenerationConfig

    book = Book("B", None, "en", (Chapter("One", ("alpha # beta. gamma",)),))
    plan = plan_book(book, BookSettings(config=GenerationConfig(), narrator=Voicing("narrator")))
    assert [s.text for s in plan.sentences][-2:] == ["alpha #", "beta. gamma"]


def test_sentence_streaming_and_the_app_cut_where_the_splitter_does(fake_segmenter, monkeypatch):
    from omnivoice_demo.engine.duration import estimate_target_frames
    from omnivoice_demo.engine.streaming import first_chunk_end
    from omnivoice_demo.text.normalize import normalize_sentences
    from omnivoice_demo.ui.speed_controls import more_than_one_sentence

    first = "The first clause is long enough here;"
    text = f"{first} and so on. It ends here after a while, with a few more words to say to you."
    # long enough to be a first chunk, and short enough with the next clause that only a sentence end there cuts
    assert 50 <= estimate_target_frames(first) and estimate_target_frames(text[:text.index(".") + 1]) <= 75
    assert first_chunk_end(text, language="en") == (len(first), True)
    assert more_than_one_sentence("one; two") and not more_than_one_sentence("one. two.")
    import omnivoice_demo.text.normalize as normalize

    seen = []
    monkeypatch.setattr(normalize, "read_as_words", lambda piece, language=None: (seen.append(piece) or piece, 0))
    assert normalize_sentences("alpha # beta. gamma", "en") == "alpha # beta. gamma"
    assert seen == ["alpha # ", "beta. gamma"]


def test_the_wyoming_stream_cuts_where_the_splitter_does(fake_segmenter):
    from omnivoice_demo.wyoming.text_stream import TextStream

    stream = TextStream("en")
    assert stream.add("alpha. beta; gam") == ""               # "gam" may go on
    assert stream.add("ma delta ") == ""                      # the splitter reads 30 bytes past a cut
    assert stream.add("epsilon zeta eta theta ") == "alpha. beta;"
    assert stream.finish() == "gamma delta epsilon zeta eta theta"


def test_language_detection_classifies_the_splitter_s_sentences(fake_segmenter):
    from omnivoice_demo.text import text_language

    if not text_language.available():
        pytest.skip("py3langid is not installed")
    text = ("Das ist ein ziemlich langer deutscher Satz über das Wetter heute # "
            "this is a rather long English sentence about the weather today")
    assert set(text_language.detect_language(text).languages) == {"de", "en"}


# --- the Wyoming stream with the real segmenter ---------------------------------------------------------------------

def test_wyoming_never_speaks_a_title_alone():
    from omnivoice_demo.wyoming.text_stream import TextStream

    stream = TextStream("en")
    given = [stream.add(part) for part in ["Prof.", " Smith arrived.", " He", " left at 5 p.m. today, as he",
                                           " had said he would. Then", " rain fell on the roofs all night."]]
    assert given == ["", "", "", "", "Prof. Smith arrived.", "He left at 5 p.m. today, as he had said he would."]
    assert stream.finish() == "Then rain fell on the roofs all night."
    german = TextStream("de")
    assert german.add("Wir kommen am 5.") == "" and german.add(" Juni an. Bis") == ""
    assert german.add(" dann, und grüß bitte alle von mir!") == "Wir kommen am 5. Juni an."
