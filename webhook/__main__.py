"""``python -m webhook`` is the same as the ``kueue-webhook`` command."""

import sys

from webhook.cli import main

sys.exit(main())
