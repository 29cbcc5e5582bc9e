"""OmniVoice ONNX Studio: ``python app.py`` (also the ``app_file`` of a Hugging Face Space).

The app itself is ``omnivoice_demo.app`` (installed as the ``omnivoice-studio``
command); ``python app.py --help`` lists its options.
"""

import sys

from omnivoice_demo.app import main

if __name__ == "__main__":
    sys.exit(main())
