"""The engine a library user meets (issue 60): ``OmniVoiceEngine``'s public surface is what docs/engine.md
documents, its planning is the ``Planner``'s (the same plans with the tokenizer alone), and the names it moved
still answer, with a warning saying where they went."""

from __future__ import annotations

import pathlib
import re
import warnings

import pytest

from omnivoice_demo import OmniVoiceEngine
from omnivoice_demo.engine.planner import Planner, TextPlanner

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "engine.md"


def documented_surface() -> set[str]:
    """The names in the first column of docs/engine.md's "The engine's methods" table."""
    section = DOC.read_text(encoding="utf-8").split("## The engine's methods", 1)[1].split("\n## ", 1)[0]
    names = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            names.update(re.findall(r"`(\w+)", row.split("|")[1]))
    return names


def public_surface(cls) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_the_classes_public_surface_is_the_documented_one():
    documented = documented_surface()
    assert {"generate", "stream", "clone_voice", "prepare"} <= documented   # the section is found and read
    assert public_surface(OmniVoiceEngine) == documented


def test_a_public_method_left_out_of_the_docs_is_caught():
    class Grown(OmniVoiceEngine):
        def plan_everything(self):   # a method the docs do not list
            return None

    assert public_surface(Grown) - documented_surface() == {"plan_everything"}


def test_the_engine_plans_as_the_planner_of_its_tokenizer_alone(engine, tiny_fp32_folder):
    assert isinstance(engine.planner, Planner)
    planner = TextPlanner(tiny_fp32_folder, limits=engine.limits)
    text = "Plans are made before any compute. A second sentence, 42 words of it."
    for options in ({}, {"sentence_streaming": True, "normalize_text": True}, {"num_step": 8, "speed": 1.2}):
        ours, theirs = engine.prepare(text, seed=5, **options), planner.prepare(text, seed=5, **options)
        assert (ours.chunks, ours.target_frames, ours.config, ours.instruct) == \
               (theirs.chunks, theirs.target_frames, theirs.config, theirs.instruct)


def test_limits_set_on_the_engine_are_the_planners(limited):
    engine = limited(max_text_chars=10)
    assert engine.planner.limits.max_text_chars == 10
    with pytest.raises(Exception, match="max_text_chars|characters"):
        engine.prepare("A text of more than ten characters.")


def test_moved_names_answer_with_a_warning_naming_their_place(engine):
    plan = engine.prepare("Where did it go?", seed=1)
    with pytest.warns(DeprecationWarning, match=r"engine\.planner\.prompt_tokens"):
        tokens = engine.prompt_tokens(plan)
    assert tokens == engine.planner.prompt_tokens(plan)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine.planner.prompt_tokens(plan)   # the new place warns of nothing
    with pytest.raises(AttributeError, match="no attribute 'plan_everything'"):
        engine.plan_everything  # noqa: B018 - an unknown name stays an AttributeError
