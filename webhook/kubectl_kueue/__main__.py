"""``python -m webhook.kubectl_kueue``: the same as the ``kubectl-kueue`` console script."""

import sys

from webhook.kubectl_kueue import main

sys.exit(main())
