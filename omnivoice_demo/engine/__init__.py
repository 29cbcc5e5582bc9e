"""The engine: ``OmniVoiceEngine`` (``loop``), the model class a library user meets, and what it is made of.

``loop`` (``OmniVoiceEngine``: its public methods, and the run of a plan: prompt, unmasking steps, decode) uses
modules of one job: ``planner`` (a request checked and planned before any compute: ``Planner``, ``TextPlanner``),
``opening`` (the model folder checked, a wrong backbone refused), ``voices`` (cloning and the codec), ``steps``
(the step loop of ``_generate_iterative``) over ``onnx_model`` (the forward pass) and ``sampling`` (one step's
scoring), ``duration`` (frames), ``streaming`` (sentence chunks), ``segments`` and ``turns`` (SSML segments and a
script's turns), ``guard`` (the sentence check), ``join`` (the chunks joined and post-processed), ``render_key``
(what decides the audio), ``estimate`` and ``work`` (time) and ``events`` (what a run reports).  What people
write becomes what the model reads one floor down, in ``omnivoice_demo.text``; the settings and limits live in
``omnivoice_demo.settings``; a voice and its file in ``omnivoice_demo.storage.voice_file``.  The public names are
re-exported by the package root (``from omnivoice_demo import OmniVoiceEngine``)."""
