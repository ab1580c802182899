"""kro.testing.crds: install kro's own CRDs into a test cluster and wait until they serve.

What every harness that runs the controller against a fresh control plane does first (the
e2e harness, the crash-storm drill, `make run`); the controller itself expects them installed,
as the Helm chart does.
"""

from __future__ import annotations

import contextlib

from kro.api.crds import kro_crds
from kro.controllers.crd import CRDS, wait_established
from kro.runtime.client import Client
from kro.runtime.errors import AlreadyExists


async def install_crds(client: Client) -> None:
    """Create each of kro's CRDs (an existing one is kept) and wait until it is Established."""
    for crd in kro_crds():
        with contextlib.suppress(AlreadyExists):
            await client.create(CRDS, crd)
        await wait_established(client, crd["metadata"]["name"])
