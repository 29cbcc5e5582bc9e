"""The generation loop and what it is made of, read next to ``omnivoice/models/omnivoice.py``.

``loop`` (``OmniVoiceEngine``: plan, prompt, 32 unmasking steps, decode) over ``onnx_model`` (the
forward pass), ``sampling`` (one step), ``duration`` (frames), ``streaming`` (sentence chunks),
``segments`` and ``turns`` (SSML segments and a script's turns generated and joined in order),
``guard`` (the sentence check), ``estimate`` (time) and ``events`` (what a run reports).  What people
write becomes what the model reads one floor down, in ``omnivoice_demo.text``; the settings and limits
live in ``omnivoice_demo.settings``; a voice and its file in ``omnivoice_demo.storage.voice_file``.
The public names are re-exported by the package root (``from omnivoice_demo import OmniVoiceEngine``)."""
