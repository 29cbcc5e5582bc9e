"""The engine's checks of a request before its model is loaded: ``TextPlanner``.

``OmniVoiceEngine.prepare`` checks every input and limit of a request and plans it with nothing but the text
tokenizer, the limits and the control tokens; the graphs (hundreds of MB, seconds to load) are needed only to
run the plan.  ``TextPlanner`` is the engine with only those: the same ``prepare``, ``prepare_turns`` and SSML
planning, so a command line refuses a text over a limit, or malformed SSML, before it loads the model (issue 58:
``synth`` refused a long text only after loading it).  The checks are the engine's own, not a copy; the engine
makes them again when it runs (a cloned voice, known only then, is held to them there).
"""

from __future__ import annotations

import pathlib
from typing import Optional, Union

from ..settings.generation import GenerationConfig
from ..settings.limits import Limits
from ..text.prompt import load_text_tokenizer, special_tokens
from .loop import OmniVoiceEngine


class TextPlanner(OmniVoiceEngine):
    """An engine without its graphs: it plans and checks (``prepare``), it cannot run a plan."""

    def __init__(self, model_dir: Union[str, pathlib.Path], limits: Optional[Limits] = None):   # noqa: D107
        # the engine's __init__ loads the graphs: only what planning reads is set here
        self.limits = limits or Limits()
        self.recognizer = None
        self.folder = pathlib.Path(model_dir)
        self.codec = None
        self.tokenizer = load_text_tokenizer(self.folder)
        self.control_tokens = special_tokens(self.tokenizer)

    def _require_for(self, config: GenerationConfig) -> None:
        """What the settings need installed (a recogniser, pyloudnorm) is the loaded engine's to check."""
