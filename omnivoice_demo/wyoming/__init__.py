"""The Wyoming protocol server: Home Assistant's speech services talk to the studio's engine and queue.

    omnivoice wyoming --uri tcp://0.0.0.0:10200 --model DIR [--zeroconf]
    omnivoice serve ... --wyoming-uri tcp://0.0.0.0:10200      (beside the HTTP API, one queue)
    omnivoice-studio ... --wyoming-uri tcp://0.0.0.0:10200     (beside the app, one queue)

* ``info``: ``describe`` -> one TTS program, its voices (saved voices, named designs, ``default``)
  and the languages Home Assistant shows (ISO 639-1 codes).
* ``requests``: what a ``synthesize`` event asks for (voice, language, seed: the documented extension).
* ``text_stream``: streamed text (``synthesize-chunk``) cut into the sentences that are complete.
* ``handler``: one connection: ``synthesize`` and the streaming-text events -> audio, errors as
  ``error`` events, a disconnect cancels the generation.
* ``server``: the command, the flags of the app and ``serve``, running beside them, zeroconf.

The front end takes the studio core's models, voices and queue (``EngineService``) as the HTTP API does.
"""
