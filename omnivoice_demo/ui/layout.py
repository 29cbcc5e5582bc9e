"""The app's page: the model bar, the tabs (one module each under ``tabs/``), the history, the named API.

Generations share one concurrency group (``ENGINE_GROUP``, one at a time: a CPU
model is not sped up by running two), the queue is bounded, and every API
endpoint (/speak, /clone, /codec, /decode, /benchmark) has every parameter but
its main input defaulted.
"""

from __future__ import annotations

from typing import Optional

import gradio as gr

from .gradio_api import add_listing_endpoints
from .assets import css
from .controls import NO_VOICE
from .generation_panel import SessionHistory
from ..studio.sharing import browser_secret
from ..studio import Studio, session_of
from . import lexicon_editor
from .tabs import benchmark, book, clone, codec, model, speak

TITLE = "OmniVoice ONNX Studio"
INTRO = ("Zero-shot text-to-speech in 600+ languages with [OmniVoice](https://github.com/k2-fsa/OmniVoice), "
         "run on ONNX Runtime. Watch the 8 × T code grid fill in step by step while it speaks.")

__all__ = ["TITLE", "build_app", "css"]

#: the model bar's buttons that open a tab (``tabs.model.MODEL_TAB_LINK``): the tab's own button, or, where the tabs
#: do not fit (a phone), the same name under "More tabs"; then the tabs are scrolled into sight
MODEL_BAR_JS = """
element.addEventListener("click", (event) => {
  const link = event.target.closest("[data-ov-tab]");
  if (!link || !element.contains(link)) return;
  const name = link.dataset.ovTab;
  const named = (selector) => Array.from(document.querySelectorAll(selector)).find((b) => b.innerText.trim() === name);
  const tab = named('button[role="tab"]') || named(".overflow-menu .overflow-dropdown button");
  if (!tab) return;
  tab.click();
  requestAnimationFrame(() => (tab.closest(".tabs") || tab).scrollIntoView({block: "start"}));
});
"""


def build_app(studio: Studio, model_spec: Optional[str] = None, precision: Optional[str] = None,
              provider: str = "cpu", queue_size: int = 16) -> gr.Blocks:
    """The Blocks (queue configured).  Launch with ``launch(css=css(), max_file_size=...)``."""
    with gr.Blocks(title=TITLE, analytics_enabled=False, delete_cache=(3600, 6 * 3600)) as demo:
        gr.Markdown(f"# {TITLE}\n{INTRO}")
        bar = gr.HTML(model.model_bar(studio), elem_id="model-bar", js_on_load=MODEL_BAR_JS)
        history = SessionHistory()
        # shared mode: each visitor's saved voices live in their own browser (encrypted local storage)
        browser_voices = (gr.BrowserState({}, storage_key="omnivoice-voices",
                                          secret=browser_secret(studio.voices.root.parent))
                          if studio.shared else None)
        browser_lexicon = (gr.BrowserState([], storage_key="omnivoice-lexicon",
                                           secret=browser_secret(studio.voices.root.parent))
                           if studio.shared else None)
        stored = [browser_voices] if browser_voices is not None else []
        with gr.Tabs():
            speak_panel = speak.build(studio, history, browser_voices, browser_lexicon)
            clone.build(studio, history, speak_voice=speak_panel.controls["voice"], browser_voices=browser_voices,
                        lexicon=speak_panel.lexicon)
            codec.build(studio)
            book.build(studio)
            bench_models = benchmark.build(studio)
            model_tab = model.ModelTab(studio, bar, bench_models, model_spec, precision, provider,
                                       follow=[(speak_panel.go, speak_panel.outputs["progress"])])
        history.render()

        def on_page_load(progress, browser=None, request: gr.Request = None):
            names = speak.voice_names(studio, session_of(request), browser)
            return model_tab.view(progress) + (gr.update(choices=names, value=NO_VOICE),)

        demo.load(on_page_load, inputs=model_tab.follow_inputs + stored, outputs=model_tab.outputs + [speak_panel.controls["voice"]],
                  api_visibility="private", queue=False)
        lexicon = speak_panel.lexicon   # the owner's pronunciations: from their browser, or the studio's file
        demo.load(lambda *value: lexicon_editor.load_rows(studio, *value), inputs=lexicon.inputs(),
                  outputs=lexicon.table, api_visibility="private", queue=False)
        with gr.Column(visible=False):  # the named API: hidden components and buttons
            for tab in (speak, clone, codec, benchmark):
                tab.build_api(studio)
            add_listing_endpoints(studio)  # /voices, /models
    demo.queue(max_size=queue_size, default_concurrency_limit=1)
    return demo
