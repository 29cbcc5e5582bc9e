"""Streamed text (Wyoming's ``synthesize-chunk``s) is cut exactly where ``split_sentences`` cuts the whole text,
however it is chunked (issue 58, point 5).

Home Assistant streams a language model's answer as many small ``synthesize-chunk`` events; the stream gave out
a sentence as soon as the text so far had a cut with a word after it, so 'It is late. "Are you coming?" she
asked.' was spoken as 'It is late. "', 'Are you coming?"' and 'she asked.' (the whole text's split keeps the
quoted question in its sentence).  A property test over random chunkings (seeded: the same every run) of texts in
six languages (quotes the sentence goes on from, abbreviations, ordinals, decimals, full-width ends, paragraphs);
the same text streamed through the real Wyoming server: tests/test_wyoming.py.
"""

from __future__ import annotations

import random

import pytest

from omnivoice_demo.text.sentences import sentence_texts, split_sentences
from omnivoice_demo.wyoming.text_stream import PAIRS, TextStream, released_sentences

SENTENCES = {
    "en": ['He asked "Are you coming?" and left.', "It is late.", '"Are you coming?" she asked from the door.',
           "Dr. Smith arrived at 5 p.m. today.", "Bring fruit, e.g. apples or pears, and bread.",
           "The bill came to 3.5 pounds.", 'She said "I went to the market. It was shut. So I came home." and sat.',
           "The plan (made last year. It took ages.) worked well.", "Mr. Jones isn't here yet.", "Why?", "Wow!",
           "Turn on the kitchen lights, please.", "It's the students' day off.", "2. Terms and Conditions.",
           "[laughter] That was funny.", "See section 4.2 for details."],
    "de": ["Wir kommen am 3. Mai an.", "Er fragte: „Kommst du mit?“ und ging.", "Das gilt z. B. für Frau Dr. Weber.",
           "Der Zug kommt um 9.45 Uhr an.", "Es regnet.", "Am 14. März ist das Treffen in Köln.",
           "Sie rief: „Ich komme morgen. Warte auf mich!“ und legte auf.", "3. Ergebnisse."],
    "fr": ["Il a dit « Pourquoi ? » et il est parti.", "M. Dupont est arrivé à 3,5 km.", "« Tu viens ? » demanda-t-elle.",
           "Il fait beau aujourd'hui.", "Elle a dit : « Je suis partie tôt. Il pleuvait. » Puis elle a ri."],
    "es": ["¿Vienes mañana?", "Sí.", "¡Vamos!", "El Sr. García llegó a las 5.", "Dijo «¿Por qué?» y se fue.",
           "La Dra. Ruiz midió 4.2 litros al día.", "«¿Vienes mañana?», preguntó su hermano."],
    "zh": ["你好。", "今天天气很好！", "你去哪里？", "他说：“你来吗？”然后走了。", "价格是3.5元。", "我们明天见。"],
    "ja": ["こんにちは。", "今日はいい天気ですね！", "どこへ行きますか？", "彼は「来ますか？」と聞いた。", "会議は3.5時間かかった。"],
}
QUOTED = 'It is late. "Are you coming?" she asked from the door. Nobody answered her for a long while.'


#: random texts the property tests draw (seeded: the same ones every run, in any order of the tests)
SEED = 58


def streamed_texts(count: int, seed: int = SEED) -> list[tuple[str, str, list[str]]]:
    """``count`` (language, text, chunks): a few of a language's sentences, joined as a reader or a model writes
    them (a space or two, a line break, a blank line; nothing or a space in Chinese and Japanese), cut into chunks
    anywhere (one character to a dozen, in a pattern that repeats)."""
    draw, cases = random.Random(seed), []
    for _ in range(count):
        language = draw.choice(sorted(SENTENCES))
        sentences = [draw.choice(SENTENCES[language]) for _ in range(draw.randint(1, 6))]
        spaces = ["", " "] if language in ("zh", "ja") else [" ", "  ", "\n", "\n\n"]
        text = sentences[0]
        for sentence in sentences[1:]:
            text += draw.choice(spaces) + sentence
        text += draw.choice(["", " ", "\n"])
        sizes = [draw.randint(1, 12) for _ in range(draw.randint(1, 12))]
        cases.append((language, text, chunked(text, sizes)))
    return cases


#: the pieces of the texts no reader writes: stray and unpaired quotes of every kind, brackets, headings' numbers
#: and ordinals before a paragraph break, abbreviations run together (where the cuts that need look-ahead hide)
TOKENS = {
    "en": ["Dr.", "Mr.", "e.g.", "3.", "5", "p.m.", "It", "is", "late.", "Why?", "Wow!", '"', "“", "”", "‘", "’", "(",
           ")", "[laugh]", "[", "]", "she", "asked", "He", "The", "end.", "\n\n", "\n", "1.", "Source.", "it's", "'",
           "x", "...", "?!", "»", "«", "``", "''", "`", "john.smith@example.com", "A.", "B.", "\n2.", "\n- ", "1)",
           "(a)", "•"],
    "de": ["Am", "3.", "Mai", "März", "z.", "B.", "Dr.", "„", "“", "Kommst", "du?", "und", "ging.", "Es", "regnet.",
           "\n\n", "14.", "Juni", "an.", "Bis", "dann!", "«", "»", "Er", "sagte:"],
    "fr": ["«", "»", "Pourquoi", "?", "M.", "Dupont", "est", "là.", "Il", "a", "dit", ":", "et", "parti.", "3,5", "km.",
           "\n\n"],
    "zh": ["你好。", "他说：", "“", "”", "你来吗？", "然后", "走了。", "价格是3.5元。", "「", "」", "《", "》", "！", "好", "\n\n"],
}


def token_soups(count: int, seed: int = SEED) -> list[tuple[str, str, list[str]]]:
    """``count`` (language, text, chunks) of up to 40 of a language's ``TOKENS`` in any order, with or without a
    space between them, cut into chunks anywhere."""
    draw, cases = random.Random(seed), []
    for _ in range(count):
        language = draw.choice(sorted(TOKENS))
        space = "" if language == "zh" else " "
        text = "".join(draw.choice(TOKENS[language]) + draw.choice([space, space, "", " "])
                       for _ in range(draw.randint(1, 40)))
        sizes = [draw.randint(1, 15) for _ in range(draw.randint(1, 8))]
        cases.append((language, text, chunked(text, sizes)))
    return cases


def chunked(text: str, sizes: list[int]) -> list[str]:
    """``text`` in chunks of ``sizes`` (over and over)."""
    chunks, start, turn = [], 0, 0
    while start < len(text):
        chunks.append(text[start:start + sizes[turn % len(sizes)]])
        start += sizes[turn % len(sizes)]
        turn += 1
    return chunks


def streamed(chunks: list[str], language: str) -> list[str]:
    """The sentences ``released_sentences`` gives out as the chunks arrive, then at the stream's stop."""
    given_out, held, done = [], "", ""
    for chunk in chunks:
        ready, held = released_sentences(held + chunk, language, done=done)
        given_out += ready
        done += "".join(ready)
    return given_out + released_sentences(held, language, done=done, final=True)[0]


#: cases a random draw may miss: the issue's text a character at a time, a quote closed in a chunk of its own, an
#: ordinal date cut after its full stop, a paragraph's last sentence, a question in Spanish quotes; and three that
#: an earlier version of the stream got wrong: a quote opened after a cut ("'" that '' later pairs), a heading's
#: number after a paragraph break (kept with what follows it, or with the paragraph before), a numbered line that
#: makes the paragraph a list (sentencex then cuts an item only at the next marker), a stray quote
CHOSEN = [("en", QUOTED, list(QUOTED)),
          ("en", 'He asked "Are you coming?" and left.', ['He asked "Are', " you coming?", '" and left.']),
          ("de", "Wir kommen am 3. Mai an. Es regnet.", ["Wir kommen am 3.", " Mai an. Es", " regnet."]),
          ("en", "It is late.\n\nWhy?", ["It is late.\n", "\n", "W", "hy?"]),
          ("es", "«¿Vienes mañana?», preguntó su hermano. Sí.", ["«¿Vienes mañana?", "»", ", preguntó", " su hermano. Sí."]),
          ("en", "end. ' 3. See[ Mr.)\nIt ”’ Dr. 5 ` 3. ' )yes See `?! 'A. « e.g.' e.g. Wow! end.",
           ["end. ' 3. See[ ", "Mr.)\nIt ”’ Dr. ", "5 ` 3. ' )yes S", "ee `?! 'A. « e.", "g.' e.g. Wow! end."]),
          ("de", "Juniund Kommst 14.\n\n 3. Mai B. \n\n du? Er und",
           ["Juniun", "d Kommst 14.\n\n", " 3.", " Mai B", ". \n\n du? Er u", "nd"]),
          ("de", "3. \n\n 3.AmB.Mai « undMärz 3. Er Bis » Mai Juni ging. 14. 14. Mai Bis 3.Kommst Es» „du?",
           ["3. \n\n 3.AmB", ".Mai ", "«", " undMärz 3.", " Er B", "i", "s » Mai Jun", "i gin", "g", ". 14. 14. M",
            "ai Bi", "s", " 3.Kommst E", "s» „d", "u", "?"]),
          ("en", "2. Terms and Conditions.\nDr. Smith arrived at 5 p.m. today. He left.\n2. Terms and Conditions.\n",
           ["2. ", "Terms", " and C", "onditi", "ons.\nDr.", " Sm", "ith a", "rrived", " at 5 ", "p.m. tod", "ay.",
            " He l", "eft.\n2", ". Term", "s and Co", "ndi", "tions", ".\n"]),
          ("en", "'?!' \" john.smith@example.com end. late. « ... The 1. ` “ ''",
           ["'?!' \" john.s", "mith@example.", "com end. late", ". « ... The 1", ". ` “ ''"]),
          ("en", "Why?'' A. Why? 3.( ) It?! ] see john.smith@example.com Why? p.m. '' ) `` ",
           ["Why?'' ", "A. Why? 3.( )", " It?! ] ", "see john.smith@", "exam", "ple.com W", "hy? p.m.", " '' )", " `` "])]


CASES = CHOSEN + streamed_texts(250) + token_soups(250)


@pytest.mark.parametrize("language, text, chunks", CASES, ids=[f"{case[0]}-{n}" for n, case in enumerate(CASES)])
def test_streamed_text_is_cut_where_the_whole_text_is(language, text, chunks):
    assert streamed(chunks, language) == split_sentences(text, language)


def test_the_stream_of_a_request_gives_out_the_whole_text_s_sentences():
    """Through ``TextStream`` (what the handler feeds): each chunk gives out whole sentences of the whole text, by
    the request's language or, with none, by the language the text is written in."""
    for language, text, chunks in streamed_texts(60, seed=SEED + 1):
        for stream_language in (language, None):
            stream, given_out = TextStream(stream_language), []
            for chunk in chunks:
                given_out += stream.sentences(chunk)
            given_out += stream.finish_sentences()
            assert given_out == split_sentences(text, stream_language), (stream_language, text, chunks)
            assert stream.total == len(text)


def test_a_quoted_question_stays_in_its_sentence_as_the_text_arrives():
    """The issue's case, word by word: nothing is given out while the quote is open, and the question is never
    spoken apart from the words that go on from it."""
    stream, given_out = TextStream("en"), []
    for word in QUOTED.split(" "):
        given_out.append(stream.add(word + " "))
    given_out.append(stream.finish())
    assert [text for text in given_out if text] == sentence_texts(QUOTED, "en") == [
        "It is late.", '"Are you coming?" she asked from the door.', "Nobody answered her for a long while."]


def test_a_sentence_is_held_while_an_opened_quote_may_still_close_around_it():
    quote = "She said “I went to the market this morning. It was closed for the holiday. So I came home"
    ready, rest = released_sentences(quote + " again and then", "en")
    assert ready == [] and rest == quote + " again and then"          # '.” and sat.' would make it one sentence
    ready, rest = released_sentences(quote + " again.” Then she sat down by the fire, tired and cold", "en")
    assert ready == [quote + " again.” "] and rest.startswith("Then")


def test_a_quote_of_sentences_in_straight_quotes_is_held_to_its_paragraph_s_end():
    """The splitter reads a quote in straight quotes that holds a sentence break by the number of straight quotes
    in its whole paragraph (an odd one later splits it), so it is given out when its paragraph ends."""
    quote = 'She said "I went to the market. It was closed. So I came home again." Then she sat down by the fire'
    assert released_sentences(quote + ", tired and cold", "en")[0] == []
    assert split_sentences(quote + '. Her "friend left.', "en")[0] == 'She said "I went to the market. '
    ready, rest = released_sentences(quote + ".\n\nLater that evening it rained and rained for hours", "en")
    assert ready == ['She said "I went to the market. It was closed. So I came home again." ',
                     "Then she sat down by the fire.\n\n"]


def test_a_cut_waits_for_what_the_splitter_reads_after_it():
    """The splitter reads up to 30 bytes past a full stop ("3." may be "3.5", "am 3." goes on with " Mai"); a word
    still arriving is not read at all ("it'" may become "it's")."""
    assert released_sentences("It costs 3. ", "en") == ([], "It costs 3. ")
    assert released_sentences("Wir kommen am 3. Mai an. Bis", "de") == ([], "Wir kommen am 3. Mai an. Bis")
    long_enough = "Wir kommen am 3. Mai an. Bis dann, und grüß bitte alle von mir"
    assert released_sentences(long_enough, "de")[0] == ["Wir kommen am 3. Mai an. "]
    assert released_sentences("你好。今天天气很好，我们一起去公园散步吧好", "zh")[0] == ["你好。"]   # 30 bytes: 10 characters


def test_a_paragraph_s_last_sentence_is_given_out_when_the_paragraph_ends():
    """Nothing past a paragraph break is read: its last sentence is given out once a word of the next has come,
    unless the next starts with a heading's number ("2."), which the splitter may keep with it."""
    assert released_sentences("It is late.\n\nWhy ", "en") == (["It is late.\n\n"], "Why ")
    assert released_sentences("It is late.\n\nWhy", "en") == ([], "It is late.\n\nWhy")   # more break may come
    assert released_sentences("Gut.\n\n2. Ergebnisse ", "de")[0] == []
    assert split_sentences("Gut.\n\n2. Ergebnisse und so weiter.", "de") == ["Gut.\n\n", "2. Ergebnisse und so weiter."]
    assert released_sentences("Gut.\n\n2. Ergebnisse und so weiter, wie gesagt ", "de")[0] == ["Gut.\n\n"]


def test_a_paragraph_that_may_become_a_list_is_held_to_its_end():
    """A second numbered line makes the paragraph a list whose items sentencex does not cut within."""
    text = "1. Buy the bread today. Ask for the dark one, it keeps well.\n"
    assert released_sentences(text + "And milk too ", "en")[0] == []
    assert split_sentences(text + "2. Milk. Eggs.", "en")[0] == text
    assert released_sentences(text + "2. Milk. Eggs.\n\nThen ", "en")[0] == [text, "2. Milk. Eggs.\n\n"]
    plain = "Buy the bread today. Ask for the dark one, it keeps well. And "
    assert released_sentences(plain, "en")[0] == ["Buy the bread today. "]


def test_the_quote_pairs_are_the_splitter_s():
    """``PAIRS`` holds every pair of quotes or brackets that keeps a sentence break inside it in the installed
    sentencex (a version that reads one more would let a cut out before its quote closes)."""
    candidates = ['"', "'", "`", "``", "''", "«", "»", "‘", "’", "‚", "“", "”", "„", "‛", "‟", "‹", "›", "《", "》",
                  "「", "」", "『", "』", "【", "】", "(", ")", "[", "]", "{", "}", "<", ">", "（", "）", "〈", "〉",
                  "＂", "＇", "〝", "〞"]
    for opener in candidates:
        for closer in candidates:
            head = f"He said {opener}Hi. "
            if split_sentences(f"{head}There{closer} and left. Yes.", "en")[0] != head:
                assert closer in PAIRS and set(opener) <= set(PAIRS[closer]), (opener, closer)


def test_ssml_is_held_whole_and_plain_text_after_it_by_the_same_rule():
    stream = TextStream("en")
    assert stream.add("<speak>Hello there. <break time=") == ""
    assert stream.add('"200ms"/>Second part.</speak> ') == '<speak>Hello there. <break time="200ms"/>Second part.</speak>'
    assert stream.add("Plain text. Then more") == ""
    assert stream.add(" words arrive, enough to decide the cut") == "Plain text."
    assert stream.finish() == "Then more words arrive, enough to decide the cut"


@pytest.mark.parametrize("chunk_size", [1, 7])
def test_the_stream_keeps_the_words_of_every_language(chunk_size):
    """Nothing is lost or doubled, whatever the characters (every sentence of the pools, one text per language)."""
    for language, sentences in SENTENCES.items():
        text = ("" if language in ("zh", "ja") else " ").join(sentences)
        got = streamed(chunked(text, [chunk_size]), language)
        assert "".join(got) == text and got == split_sentences(text, language), language
