"""Batch synthesis: many items into a folder, resumable, with subtitles; here, in processes or on Ray.

* ``items``       the input file, every row checked before any work
* ``store``       the output folder: atomic files, sidecars, what a rerun may skip
* ``worker``      the item function (one engine, one item, its files and record)
* ``timeline``    where each chunk lies in the final audio
* ``subtitles``   SRT / WebVTT cues from those times
* ``book``        all items as one audio file with one subtitle file
* ``local``       this process, or N worker processes
* ``ray_backend`` Ray actors (optional extra ``[batch]``)
* ``plan``        a run, whole: the items, their job, the model and the workers (``BatchPlan``, ``Workers``)
* ``results``     what a run hands back: the summary and each item's outcome (``BatchResult``)
* ``runner``      a run: skip, check, dispatch, progress, summary
* ``cli``         ``omnivoice batch``
"""
