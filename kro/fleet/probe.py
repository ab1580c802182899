"""kro.fleet.probe: is a member cluster usable? `/version`, then discovery (M-06).

`/version` says the server answers and accepts the credentials (it is readable by every
authenticated user); discovery, read through the client's own RESTMapper, is what every later
request needs first and is refreshed by the same call, so a member whose CRDs changed is seen
as it is now. A probe is bounded by its own timeout: a member that does not answer must never
hold up its registry (M-05). What a failure says is the error's own text, which
kro.runtime.errors scrubs of credentials and never fills with headers or bodies; a member that
did not answer at all (nothing in time, or a connection that failed) is `unreachable`, which
owners report as `ClusterUnreachable`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kro.fleet.errors import ClusterUnreachable, no_answer, short_cause
from kro.runtime.client import Client
from kro.runtime.errors import KubeError, TransportError, Unauthorized


class ProbeFailed(Exception):
    """The member did not pass its probe; the message is the member's `reason`, `unreachable`
    whether it failed for want of any answer."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        self.unreachable = unreachable
        super().__init__(message)


async def probe(client: Client, *, timeout_s: float, discovery: bool = True) -> str:
    """The member's version (`gitVersion`), after reading its discovery when `discovery`.

    Raises ProbeFailed saying which step failed and why.
    """
    step = "version"
    try:
        async with asyncio.timeout(timeout_s):
            answer: Any = await client.request("GET", "/version")
            if discovery:
                step = "discovery"
                client.mapper.invalidate()
                await client.mapper.refresh()
    except ClusterUnreachable as error:  # a member's own client: the cause, not the name again
        raise ProbeFailed(f"{step}: {error.cause}", unreachable=True) from None
    except TimeoutError:
        raise ProbeFailed(f"{step}: no answer within {timeout_s:g}s", unreachable=True) from None
    except Unauthorized:
        raise ProbeFailed(f"{step}: the credentials were rejected (401 Unauthorized)") from None
    except TransportError as error:
        if no_answer(error):
            raise ProbeFailed(f"{step}: {short_cause(error)}", unreachable=True) from None
        raise ProbeFailed(f"{step}: {error}") from None
    except KubeError as error:
        raise ProbeFailed(f"{step}: {error}") from None
    version = answer.get("gitVersion") if isinstance(answer, dict) else None
    return str(version or "")
