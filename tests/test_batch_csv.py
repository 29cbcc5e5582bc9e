"""``omnivoice batch --input items.csv``: a header row (id, text and the JSONL keys), quoted cells with commas and
line breaks, JSON cells, bad rows named by their line; a file of another kind or a CSV without a ``text`` column
is refused with a message that names the formats."""

from __future__ import annotations

import pytest

from omnivoice_demo.batch.items import BatchInputError, read_items
from omnivoice_demo.settings.generation import GenerationConfig
from omnivoice_demo.errors import InvalidInput

CSV = '''id,text,voice,instruct,language,speed,seed,script,pronunciations,speakers
intro,"Hello, and welcome.",alloy,,English,1.2,7,,,
design,A deep voice.,,"male, low pitch",,,,,,
talk,"Anna: The bass is loud.
Ben: Turn it down!",,,,,,true,"{""bass"": ""[B EY1 S]""}","{""Anna"": ""alloy"", ""Ben"": ""echo""}"
,"No id, so the line names it.",,,,,,,,
'''


def test_a_csv_with_a_header_row_gives_the_same_items_as_jsonl(tmp_path):
    source = tmp_path / "items.csv"
    source.write_text(CSV)
    items = read_items(source, base=GenerationConfig(num_step=8))
    assert [i.id for i in items] == ["intro", "design", "talk", "000006"]
    intro, design, talk, unnamed = items
    assert intro.text == "Hello, and welcome." and intro.language == "English"
    assert (intro.config.speed, intro.config.seed, intro.config.num_step) == (1.2, 7, 8)
    assert design.instruct == "male, low pitch" and design.voice is None
    assert [t.speaker for t in talk.turns] == ["Anna", "Ben"] and talk.pronunciations is not None
    assert unnamed.text == "No id, so the line names it."
    jsonl = tmp_path / "items.jsonl"
    jsonl.write_text('{"id": "intro", "text": "Hello, and welcome.", "voice": "alloy", "language": "English", '
                     '"speed": 1.2, "seed": 7}\n')
    import dataclasses

    assert dataclasses.replace(read_items(jsonl, base=GenerationConfig(num_step=8))[0], line=2) == intro


def test_bad_csv_rows_are_named_by_their_line(tmp_path):
    source = tmp_path / "items.csv"
    source.write_text('id,text,speed\nok,Fine.,1.0\nbad,Too fast.,9\nextra,Hi.,1.0,surplus\nempty,,1.0\n')
    with pytest.raises(BatchInputError) as caught:
        read_items(source)
    messages = dict(caught.value.problems)
    assert sorted(messages) == [3, 4, 5]
    assert "speed" in messages[3] and "4 cells" in messages[4] and "text" in messages[5]


@pytest.mark.parametrize("name, content, words", [
    ("items.csv", "words,voice\nHello.,alloy\n", 'needs a header row naming its columns, with at least "text"'),
    ("items.xlsx", "not a batch", "a .csv file with a header row (text, id, voice"),
])
def test_a_file_that_is_no_batch_input_names_the_formats(tmp_path, name, content, words):
    source = tmp_path / name
    source.write_text(content)
    with pytest.raises(InvalidInput) as caught:
        read_items(source)
    assert words in str(caught.value) and "id" in str(caught.value) and "voice" in str(caught.value)
