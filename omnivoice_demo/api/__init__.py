"""The OpenAI-compatible HTTP API (``/v1/audio/speech`` and friends) over the studio core.

``routes`` (the FastAPI routes and errors), ``speech`` (request -> plan -> bytes),
``encoding`` (WAV/FLAC/MP3/Opus/PCM through libsndfile), ``server`` (mounting on
the app, ``omnivoice serve``).  The voices and presets it accepts are the studio's
vocabulary (``omnivoice_demo.studio.vocabulary``); it never imports the UI.
"""
