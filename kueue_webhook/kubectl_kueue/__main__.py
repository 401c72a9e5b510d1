"""``python -m kueue_webhook.kubectl_kueue``: the same as the ``kubectl-kueue`` console script."""

import sys

from kueue_webhook.kubectl_kueue import main

sys.exit(main())
