"""The Gradio app over the studio core: ``layout.build_app(Studio(...))`` assembles the tabs (``tabs/``).

The state it works on (models, voices, sharing, the queue) is ``omnivoice_demo.studio``'s;
the UI never imports the HTTP API (``omnivoice_demo.api``).
"""
