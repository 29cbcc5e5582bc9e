"""Pronunciations: a lexicon entry is the bracket syntax typed by hand (the same prompt tokens), files are checked."""

from __future__ import annotations

import json

import pytest

from omnivoice_demo.text import lexicon
from omnivoice_demo.text.prompt import build_condition_ids
from omnivoice_demo.errors import InvalidInput, ResourceLimitExceeded


def prompt_ids(engine, plan):
    return build_condition_ids(plan.chunks[0], engine.tokenizer, ref_text=None, language=plan.language,
                               instruct=plan.instruct, denoise=plan.config.denoise, has_reference=False).tolist()


def test_whole_words_in_the_case_asked_for():
    lex = lexicon.from_mapping([{"word": "bass", "say": "[B EY1 S]"},
                                {"word": "US", "say": "U S", "match_case": True},
                                {"word": "Nginx", "say": "engine x"}])
    assert lex.apply("Bass, bass and BASS; bassoon and sea-bass.") == \
        "[B EY1 S], [B EY1 S] and [B EY1 S]; bassoon and sea-[B EY1 S]."
    assert lex.apply("US troops, us two, Us.") == "U S troops, us two, Us."
    assert lex.apply("nginx serves") == "engine x serves"
    assert lexicon.kind_of("[B EY1 S]") == "cmu" and lexicon.kind_of("NI3 HAO3") == "pinyin"
    assert lexicon.kind_of("engine x") == "respelling"


@pytest.mark.parametrize("normalize_text", [False, True])
def test_an_entry_gives_the_prompt_of_the_bracket_syntax_typed_by_hand(engine, normalize_text):
    by_hand = engine.prepare("The [B EY1 S] costs $5.", language="en", seed=1, normalize_text=normalize_text)
    looked_up = engine.prepare("The bass costs $5.", language="en", seed=1, normalize_text=normalize_text,
                               pronunciations={"bass": "[B EY1 S]"})
    plain = engine.prepare("The bass costs $5.", language="en", seed=1, normalize_text=normalize_text)
    assert looked_up.text == by_hand.text and looked_up.target_frames == by_hand.target_frames
    assert prompt_ids(engine, looked_up) == prompt_ids(engine, by_hand) != prompt_ids(engine, plain)
    assert "[B EY1 S]" in looked_up.text


def test_files_tsv_and_json_are_the_same_lexicon(tmp_path):
    tsv = tmp_path / "words.tsv"
    tsv.write_text("# word\tsay\tmatch_case\nbass\t[B EY1 S]\nUS\tU S\ttrue\n\n", encoding="utf-8")
    js = tmp_path / "words.json"
    js.write_text(json.dumps([{"word": "bass", "say": "[B EY1 S]"}, {"word": "US", "say": "U S", "match_case": True}]))
    assert lexicon.load(tsv) == lexicon.load(js)
    assert lexicon.load(tsv).apply("bass US") == "[B EY1 S] U S"


@pytest.mark.parametrize("content, message", [
    (b"\0\1\2binary" * 10, "not text"),
    ("bass\n".encode(), "line 1: expected word<TAB>say"),
    ("bass\t[B EY1 S\n".encode(), "not a CMU override"),
    ("big word\tthing\n".encode(), "not one word"),
    ("a\tb c\nb\ta d\n".encode(), r"circle \(a -> b -> a\)"),
    ("\xff\xfe".encode("latin-1"), "not UTF-8"),
])
def test_bad_lexicon_files_are_refused_with_the_reason(tmp_path, content, message):
    path = tmp_path / "bad.tsv"
    path.write_bytes(content)
    with pytest.raises(InvalidInput, match=message):
        lexicon.load(path)


def test_a_10_mb_lexicon_and_bad_json_are_refused(tmp_path):
    big = tmp_path / "big.tsv"
    big.write_bytes(b"word\tsay\n" * (10 * 1024 * 1024 // 9))
    with pytest.raises(InvalidInput, match="MB; at most 1024 KB"):
        lexicon.load(big)
    broken = tmp_path / "broken.json"
    broken.write_text('{"bass": "[B EY1 S]",\n  oops}')
    with pytest.raises(InvalidInput, match="not valid JSON: .* line 2, column 3"):
        lexicon.load(broken)
    with pytest.raises(InvalidInput, match="at most 5000"):
        lexicon.from_mapping({f"w{i}": "x" for i in range(5001)})
    with pytest.raises(InvalidInput, match="pronunciations must be an object"):
        lexicon.from_mapping("bass=base")


def test_a_long_chain_is_checked_without_recursion():
    chain = {f"w{i}": f"w{i + 1}" for i in range(4000)}
    lexicon.from_mapping(chain)   # no cycle, no RecursionError
    with pytest.raises(InvalidInput, match="circle"):
        lexicon.from_mapping(dict(chain, w4000="w0"))


def test_expansion_past_the_text_limit_is_refused_before_work(limited):
    engine = limited(max_text_chars=100)
    with pytest.raises(ResourceLimitExceeded, match="with its pronunciations"):
        engine.prepare("ab " * 30, pronunciations={"ab": "[EY1 B IY1 EY1 B IY1]"})


# --- where a lexicon comes in: the OpenAI route's extension and the command line ----------------------

def test_openai_route_takes_pronunciations(engine):
    from omnivoice_demo.api import speech

    parsed = speech.parse({"input": "The bass is loud.", "pronunciations": {"bass": "[B EY1 S]"},
                           "normalize_text": False})
    plan = speech.plan_for(engine, parsed, None, None)
    assert plan.text == "The [B EY1 S] is loud."
    with pytest.raises(InvalidInput) as caught:
        speech.parse({"input": "x", "pronunciations": {"a": "b a"}})
    assert caught.value.param == "lexicon" and "circle" in str(caught.value)


def test_cli_lexicon_is_used_and_a_bad_one_is_one_line(tiny_fp32_folder, tmp_path):
    from tests.test_cli import run_cli

    good, bad = tmp_path / "good.tsv", tmp_path / "bad.bin"
    good.write_text("bass\t[B EY1 S]\n")
    bad.write_bytes(b"\0\xff" * 100)
    done = run_cli("synth", "--model", str(tiny_fp32_folder), "--text", "The bass.", "--lexicon", str(good),
                   "--steps", "2", "--output", str(tmp_path / "ok.wav"))
    assert done.returncode == 0, done.stderr
    done = run_cli("synth", "--model", str(tiny_fp32_folder), "--text", "The bass.", "--lexicon", str(bad),
                   "--output", str(tmp_path / "x.wav"))
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and "error: argument --lexicon: The lexicon bad.bin is not text" in last
    assert "Traceback" not in done.stderr and not (tmp_path / "x.wav").exists()


def test_server_lexicon_sits_under_the_requests_own(engine, tmp_path):
    import argparse
    import types

    from omnivoice_demo.api import routes, server, speech

    path = tmp_path / "server.tsv"
    path.write_text("bass\t[B AE1 S]\nNginx\tengine x\n")
    parser = argparse.ArgumentParser()
    server.api_arguments(parser)
    args = parser.parse_args(["--lexicon", str(path)])
    args.shared = False
    context = server.make_context(args, models=None, voices=None, service=None)
    assert context.lexicon == lexicon.load(path)
    path.write_text("a\tb a\n")
    with pytest.raises(SystemExit):   # a bad one: argparse's one line, before anything loads
        parser.parse_args(["--lexicon", str(path)])
    parsed = speech.parse({"input": "Nginx and the bass.", "pronunciations": {"BASS": "[B EY1 S]"},
                           "normalize_text": False})
    plan, _ = routes._plan(context, types.SimpleNamespace(engine=engine), parsed, [])   # (plan, description)
    assert plan.text == "engine x and the [B EY1 S]."
