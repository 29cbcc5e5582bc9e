"""What people write, turned into what the model reads: the text front end, below the engine.

* ``prompt``: the conditional row's text tokens, punctuation and sentence chunking (ports of the reference's
  ``omnivoice/utils/text.py``)
* ``normalize``: numbers, dates, currency and units read as words (the reference's ``normalize_text``)
* ``ssml``: SSML read into segments; ``lexicon``: pronunciations, applied before normalisation
* ``script``: dialogue scripts (``Name: text`` lines) -> ``Turn``s, each name a voice; ``voice_names``: how
  voices' names are written and compared (one rule for the disk, browsers and every front end)
* ``languages``: the model's languages and their resolution; ``voice_design``: the instruct items the model
  knows; ``descriptions``: a voice described in the user's own words -> those items

Nothing here runs a model: it stands on ``settings``, ``storage`` and the package root's ``errors`` and
``constants``; the engine and everything above it read text through it."""
