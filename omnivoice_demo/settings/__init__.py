"""Settings in one typed place: ``generation`` (``GenerationConfig``: every setting of one generation,
its range, help and widget; the command line's flags), ``presets`` (named sets of those values) and
``limits`` (``Limits``: what one request may cost, ``--limits public|local``).

It stands on the package root's ``errors`` and ``constants`` only, so every floor above reads the same
settings: the text front end, the engine, the studio core and every front end."""
