"""The OpenAI-compatible HTTP API (``/v1/audio/speech`` and friends) over the studio core.

``routes/`` (one module per resource: speech, voices, variants, models, health),
``schemas`` (the pydantic request models), ``openai_route`` (the route class: key, body
caps, OpenAI's errors), ``context``, ``auth``, ``bodies``, ``openai_errors``, ``speech``
(request -> plan -> bytes), ``encoding`` (WAV/FLAC/MP3/Opus/PCM through libsndfile),
``cors``, ``server`` (mounting on the app, ``omnivoice serve``).  The voices and presets it accepts are the studio's
vocabulary (``omnivoice_demo.studio.vocabulary``); it never imports the UI.
"""
