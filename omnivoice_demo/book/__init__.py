"""Books: an EPUB, Markdown or text file in, an audiobook out (``omnivoice book``, the app's Book tab).

* ``reading``     the book: bounds first, chapters from its table of contents, metadata, what is skipped
* ``voices``      who speaks each part: narrator, dialogue voice, the cast and its attribution rules
* ``project``     the sentences as batch items (reused when unchanged), chapters joined and levelled, the report
* ``containers``  M4B with chapters, title, author, cover; MP3 / Opus chapters (PyAV)
* ``overlay``     the read-along EPUB 3 (media overlays, SMIL)
* ``cli``         ``omnivoice book``

It stands on the batch floor (a book's sentences are batch items: the same store, resume and Ray) and under
the front ends.
"""
