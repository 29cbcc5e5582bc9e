"""The page's structure (built, not served): every child of the tab bar is a tab.

A component made directly inside ``gr.Tabs`` (not inside a ``gr.Tab``) becomes a tab button of its own
in the browser: issue 19's second "Model" button came from a ``gr.Timer`` made there."""

from __future__ import annotations

import gradio as gr

from omnivoice_demo.studio import ModelManager, Studio, VoiceLibrary
from omnivoice_demo.ui.layout import build_app


def tab_bars(block):
    if isinstance(block, gr.Tabs):
        yield block
    for child in getattr(block, "children", []) or []:
        yield from tab_bars(child)


def test_every_child_of_the_tab_bar_is_a_tab(tmp_path):
    studio = Studio(models=ModelManager(), voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out")
    demo = build_app(studio)
    bars = list(tab_bars(demo))
    assert bars
    for bar in bars:
        strays = [type(child).__name__ for child in bar.children if not isinstance(child, gr.Tab)]
        assert strays == [], strays
    labels = [child.label for child in bars[0].children]
    assert labels == ["Speak", "Clone", "Codec", "Book", "Benchmark", "Model"]
