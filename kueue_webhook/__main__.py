"""``python -m kueue_webhook`` is the same as the ``kueue-webhook`` command."""

import sys

from kueue_webhook.cli import main

sys.exit(main())
