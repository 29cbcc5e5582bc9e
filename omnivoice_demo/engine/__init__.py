"""The generation loop and what it is made of, read next to ``omnivoice/models/omnivoice.py``.

``loop`` (``OmniVoiceEngine``: plan, prompt, 32 unmasking steps, decode) over ``onnx_model`` (the
forward pass), ``sampling`` (one step), ``duration`` and ``text`` (frames and tokens), ``voice`` and
``voice_design`` (the prompt's speaker), ``languages``, ``streaming`` (sentence chunks), ``estimate``
(time), ``events`` (what a run reports), ``config`` and ``presets`` (settings), ``quick_bench``.
The public names are re-exported by the package root (``from omnivoice_demo import OmniVoiceEngine``)."""
