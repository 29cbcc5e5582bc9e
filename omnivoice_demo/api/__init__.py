"""The OpenAI-compatible HTTP API (``/v1/audio/speech`` and friends) and the Gradio API's endpoints.

``routes`` (the FastAPI routes and errors), ``speech`` (request -> plan -> bytes),
``encoding`` (WAV/FLAC/MP3/Opus/PCM through libsndfile), ``voices`` (saved voices
and named designs), ``server`` (mounting on the app, ``omnivoice serve``).
"""
