"""The model bar above the tabs and the Model tab: load (in the background), choose the active model, unload."""

from __future__ import annotations

import html
import re
from typing import Optional, Sequence

import gradio as gr

from ...hub import DEFAULT_REPO, PRECISIONS
from ...hub.weights import DEFAULT_WEIGHTS_REPO
from ..display import idle_progress
from ..error_mapping import ui_errors
from ...studio.models import ModelNotReady, available_providers
from ...studio import Studio
from . import benchmark as benchmark_tab


#: the bar's way to the Model tab: a button that opens it (the bar's script, ``layout.MODEL_BAR_JS``), and where
#: it is when the tabs do not fit (a phone: under "More tabs", the ⋯ at the tabs' right)
MODEL_TAB_LINK = ('<button type="button" class="ov-tab-link" data-ov-tab="Model">Model tab</button> '
                  '(on a narrow screen: under ⋯, More tabs, at the right of the tabs)')


def model_bar(studio: Studio) -> str:
    """HTML: the active model, or what is loading (with progress), or what went wrong and what to do."""
    manager = studio.models
    status = manager.status
    parts = []

    def shown(text) -> str:  # redacted before it is escaped, so "<server>" shows (as a tag it would vanish)
        return _code_spans(html.escape(studio.message(str(text))))

    try:
        active = manager.get() if manager.active else None
    except ModelNotReady:
        active = None
    if active is not None:
        eng = active.engine
        parts.append(f'<span class="ov-badge ov-ready">ready</span> <b>{html.escape(active.label)}</b> · profile '
                     f'<code>{html.escape(eng.profile)}</code> · provider <code>{html.escape(active.provider)}</code>'
                     f' · <span class="ov-dim">{shown(active.folder)}</span>')
        if active.repaired:
            parts.append('<span class="ov-notice">Repaired: the published backbone attended causally; a '
                         'bidirectional copy is used (see the Model tab).</span>')
    if status.state == "loading":
        fraction = status.fraction
        bar = (f'<div class="ov-progress-track"><div class="ov-progress-fill" style="width:{fraction * 100:.1f}%">'
               f'</div></div>') if fraction is not None else ""
        parts.append(f'<span class="ov-badge ov-loading">loading</span> {shown(status.request)} · '
                     f'<b>{html.escape(status.stage)}</b>: {shown(status.message)}{bar}')
    elif status.state == "error":
        parts.append(f'<span class="ov-badge ov-error">not loaded</span> {shown(status.request)}: '
                     f'{shown(status.message)}<br><span class="ov-dim">What to do: open the {MODEL_TAB_LINK} and '
                     f'give a local model folder there (or start with <code>--model DIR</code>), or connect this '
                     f'machine to the internet so the model can be downloaded from the Hugging Face Hub, then press Load.'
                     f'</span>')
    elif active is None:
        parts.append(f'<span class="ov-badge ov-error">no model</span> No model is loaded. Open the {MODEL_TAB_LINK}, '
                     'give a model folder or a Hub repo and press <b>Load</b>, or start the app with '
                     '<code>--model DIR</code>.')
    for notice in status.notices[-3:]:
        parts.append(f'<span class="ov-notice">{shown(notice)}</span>')
    return studio.message('<div class="ov-model-bar">' + "<br>".join(parts) + "</div>")


def _code_spans(escaped: str) -> str:
    """Markdown's `code` in messages (commands to type) as HTML code, not literal backticks."""
    return re.sub(r"`([^`<>]+)`", r"<code>\1</code>", escaped)


def backbone_compute(choice: dict) -> str:
    """How the backbone computes, what that costs in memory, its fidelity figures, and the measurement
    behind an ``auto`` choice."""
    text = choice["compute"]
    if choice.get("added_mb"):
        kind = "fp32" if choice.get("choice", "fp32") == "fp32" else "8-bit"
        text += f", {choice['added_mb']:.0f} MB of {kind} weights"
        if choice.get("rss_added_mb"):
            text += f" (memory grew by {choice['rss_added_mb']:.0f} MB at load)"
    fidelity = choice.get("fidelity")
    if fidelity:
        text += (f"; against fp32 on the planted-outlier check (the gate's table, measured once on random weights "
                 f"with planted outliers, not on yours): hidden-state cosine {fidelity['cosine']:.4f}, "
                 f"greedy codes agreement {fidelity['agreement']:.3f}")
    elif "fidelity" in choice:
        text += "; fidelity not measured"
    agreement = choice.get("agreement")
    if agreement:
        text += (f"; on these weights, against {agreement['against']}: hidden-state cosine "
                 f"{agreement['cosine']:.4f}, greedy codes agreement {agreement['agreement']:.3f}")
    probe = choice.get("probe")
    if probe and probe.get("seconds"):
        text += "; " + probe_summary(probe, remembered=bool(choice.get("remembered")))
    elif choice.get("probe_s"):
        timed = ", ".join(f"{label} {seconds:.2f} s" for label, seconds in choice["probe_s"].items())
        text += f" (one forward: {timed})"
    for key in ("recheck", "reprobe"):
        if choice.get(key):
            text += f"; {'checked against the generations' if key == 'recheck' else 'probe again'}: {choice[key]}"
    return text


def probe_summary(probe: dict, remembered: bool = False) -> str:
    """The figures of ``auto``'s probe (``ProbeResult.as_record``) in one sentence."""
    base = probe["baseline"]
    timed = ", ".join(f"{label} {seconds:.2f} s" + ("" if label == base else
                      f" ({probe['ratios'][label]:.2f}x {base}, confidence {probe['confidence'][label]:.2f})")
                      for label, seconds in probe["seconds"].items())
    cond, uncond = probe["positions"]
    text = (f"probe {'remembered, ' if remembered else ''}measured {probe['measured']}: a step's two forwards "
            f"({cond} + {uncond} positions), median of {probe['rounds']} alternating rounds: {timed}")
    if probe.get("utilisation") is not None:
        text += f"; this process had {probe['utilisation']:.0%} of its threads' CPU time"
        if probe.get("others_cores") is not None:
            text += f", other processes used {probe['others_cores']:.1f} cores"
    if probe.get("contention"):
        text += f"; not remembered: {probe['contention']}"
    return text


def model_details(studio: Studio) -> str:
    """Markdown for the Model tab: every loaded model with its precision, files, repair and licence."""
    manager = studio.models
    if not manager.models:
        return "No model loaded yet."
    blocks = []
    for label, model in manager.models.items():
        info = model.engine.describe()
        precision = ", ".join(f"{k} {v}" for k, v in info["precision"].items() if v and not k.startswith("int4_"))
        lines = [f"### {'▶ ' if label == manager.active else ''}{label}",
                 f"- source: `{model.source}`", f"- folder: `{model.folder}`",
                 f"- profile `{info['profile']}`: {precision}",
                 f"- provider `{model.provider}`, threads {info['threads'] or 'default'}, backbone attention "
                 f"{info['backbone_attention']}, loaded in {model.load_seconds:.1f} s",
                 f"- backbone compute: {backbone_compute(info['backbone_compute'])}",
                 f"- backbone weights: {info['backbone_compute'].get('weights', 'as built')}"]
        if model.repaired or info.get("repairs"):
            lines.append("- **repaired**: the published `llm_decoder.onnx` attends causally, but OmniVoice's "
                         "backbone attends in both directions; a bidirectional copy was made (`make_bidirectional`)")
        for notice in model.notices:
            lines.append(f"- note: {notice}")
        lines.append(f"- licence of the weights: {model.licence}")
        blocks.append("\n".join(lines))
    return studio.message("\n\n".join(blocks))


def precision_choices(chosen: Optional[str] = None) -> list[str]:
    """The precisions this machine can run (the ``cuda`` folder only with a CUDA provider), and the one chosen."""
    usable = [p for p in PRECISIONS if p != "cuda" or "cuda" in available_providers()]
    return ["auto"] + list(dict.fromkeys(usable + ([chosen] if chosen and chosen != "auto" else [])))


class ModelTab:
    """The Model tab's widgets and events; ``view()`` refreshes the bar, the details and every model list."""

    def __init__(self, studio: Studio, bar: gr.HTML, bench_models: gr.CheckboxGroup, model_spec: Optional[str],
                 precision: Optional[str], provider: str, follow: Sequence[tuple[gr.Button, gr.HTML]] = ()):
        """``follow``: (a generate button, its progress) pairs that say whether a model is ready: the button
        is active only with a model, and an idle progress says "Ready." only then."""
        self.studio = studio
        self.follow = list(follow)
        self.follow_inputs = [progress for _, progress in self.follow]
        editable = not studio.shared
        with gr.Tab("Model", id="model"):
            # inside the tab: a Timer made directly in gr.Tabs became a second "Model" tab button on each click
            self.timer = gr.Timer(1.0, active=False)
            if studio.shared:
                gr.Markdown("This is a shared server: its operator chooses the models (with `--model`), so they "
                            "cannot be changed here. Run the app on your own machine to choose another model.")
            gr.Markdown("Choose the ONNX model: a local folder, or a Hub repo (`owner/name[@revision]`; "
                        f"default `{DEFAULT_REPO}`). Loading downloads it when needed (with resumption), "
                        "repairs the published backbone's causal attention, or builds it from the PyTorch "
                        "checkpoint (needs the convert extras). \"Build from the original weights\" loads it with "
                        "its backbone's 8-bit choices made from the original checkpoint's weights instead (no torch).")
            with gr.Row():
                spec = gr.Textbox(value=model_spec or DEFAULT_REPO, label="Model folder or Hub repo", scale=3,
                                  interactive=editable, elem_id="model-spec")
                precision_choice = gr.Radio(precision_choices(precision), value=precision or "auto", label="Precision",
                                            info="auto: a model folder's own, else int4 from the Hub; int8: "
                                                 "int4 plus the original weights (k2-fsa/OmniVoice, a 2.4 GB "
                                                 "download) to build the backbone from: far closer to the model",
                                            interactive=editable, elem_id="model-precision")
                provider_choice = gr.Radio(list(dict.fromkeys(available_providers() + [provider])), value=provider, label="Provider", interactive=editable, elem_id="model-provider",
                                           info=f"available here: {', '.join(available_providers())}")
            with gr.Row():
                offline = gr.Checkbox(False, label="Offline (use the cache only)", interactive=editable, elem_id="model-offline")
                build = gr.Checkbox(False, label="Build from the PyTorch checkpoint", interactive=editable, elem_id="model-build")
                load = gr.Button("Load", variant="primary", interactive=editable, elem_id="model-load")
            with gr.Row():
                weights = gr.Textbox(value=DEFAULT_WEIGHTS_REPO, label="Original weights (checkpoint folder or Hub repo)",
                                     scale=3, interactive=editable, elem_id="model-weights",
                                     info="the backbone's 8-bit choices built from these weights instead of the "
                                          "folder's (far closer to the model than int4; k2-fsa/OmniVoice is a 2.4 GB "
                                          "download, kept in the Hugging Face cache; the build takes a minute or two "
                                          "once, then comes from our cache)")
                build_weights = gr.Button("Build from the original weights", scale=1, interactive=editable,
                                          elem_id="model-build-weights")
            with gr.Row():
                self.active = gr.Dropdown(studio.models.labels(), value=studio.models.active, scale=3,
                                          label="Active model (Speak, Clone, Codec)", interactive=editable, elem_id="model-active")
                unload = gr.Button("Unload", scale=1, interactive=editable, elem_id="model-unload")
            self.details = gr.Markdown(model_details(studio), elem_id="model-details")
        self.outputs = [bar, self.details, self.active, bench_models, self.timer] + [
            part for pair in self.follow for part in pair]
        follow = self.follow_inputs

        load.click(self._load, inputs=[spec, precision_choice, provider_choice, offline, build] + follow,
                   outputs=self.outputs, api_visibility="private", concurrency_id="model-load", concurrency_limit=1)
        build_weights.click(self._build_from_weights,
                            inputs=[spec, precision_choice, provider_choice, offline, weights] + follow,
                            outputs=self.outputs, api_visibility="private", concurrency_id="model-load",
                            concurrency_limit=1)
        self.timer.tick(self.view, inputs=follow, outputs=self.outputs, api_visibility="private",
                        show_progress="hidden", queue=False)
        self.active.input(self._set_active, inputs=[self.active] + follow, outputs=self.outputs,
                          api_visibility="private", queue=False)
        unload.click(self._unload, inputs=[self.active] + follow, outputs=self.outputs, api_visibility="private",
                     queue=False)

    def view(self, *progress) -> tuple:
        """New values for ``self.outputs``; ``progress``: the followed progress bars as the page shows them."""
        models = self.studio.models
        labels = models.labels()
        shown = (model_bar(self.studio), model_details(self.studio), gr.update(choices=labels, value=models.active),
                 gr.update(choices=labels, value=benchmark_tab.ticked(self.studio)), gr.Timer(active=models.loading))
        return shown + readiness(self.studio, len(self.follow), progress)

    def _load(self, spec, precision, provider, offline, build, *progress):
        # ModelManager refuses in shared mode, whatever the page shows: this event can be called by fn_index
        if not ui_errors(self.studio.models.start_load)((spec or "").strip() or None, precision, provider,
                                                        offline or None, build):
            gr.Warning("A model is loading already; wait for it to finish.")
        return self.view(*progress)

    def _build_from_weights(self, spec, precision, provider, offline, weights, *progress):
        """Load the model folder of ``spec`` with its backbone built from the original ``weights`` (refused in
        shared mode by ModelManager, as ``_load``)."""
        if not ui_errors(self.studio.models.start_load)((spec or "").strip() or None, precision, provider,
                                                        offline or None,
                                                        backbone_weights=(weights or "").strip() or DEFAULT_WEIGHTS_REPO):
            gr.Warning("A model is loading already; wait for it to finish.")
        return self.view(*progress)

    def _set_active(self, label, *progress):
        if label:
            ui_errors(self.studio.models.set_active)(label)
        return self.view(*progress)

    def _unload(self, label, *progress):
        if label:
            ui_errors(self.studio.models.unload)(label)
        return self.view(*progress)


#: what an idle progress bar says with no model (Speak would only fail)
NO_MODEL_PROGRESS = ("No model is loaded yet: see the bar at the top (the Model tab loads one; on a narrow screen "
                     "it is under ⋯, More tabs).")


def readiness(studio: Studio, count: int, progress: Sequence) -> tuple:
    """For each of ``count`` followed (button, progress) pairs: the button active only with a model ready, and
    an idle progress bar saying "Ready." or why not (a bar showing a run, its result or its error is kept)."""
    try:
        ready = studio.models.get() is not None
    except ModelNotReady:
        ready = False
    text = "Ready." if ready else NO_MODEL_PROGRESS
    out: list = []
    for index in range(count):
        current = progress[index] if index < len(progress) else None
        idle = current is None or 'ov-progress ov-idle"' in str(current)
        out += [gr.update(interactive=ready), idle_progress(text) if idle else gr.update()]
    return tuple(out)
