"""Files we keep and files we read from strangers: written whole or not at all (``atomic``), our cache
folder (``cache``), the model folder's manifest (``manifest``), ``.npz`` checks with bounded memory
(``npz_check``), the codes file (``codes_file``), the outputs folder (``outputs``), Hub specs (``specs``) and a saved voice's ``.npz`` (``voice_file``: ``Voice``).

It stands on the package root's ``errors`` and ``constants`` and imports nothing else of the package."""
