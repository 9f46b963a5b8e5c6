"""A request's work, bounded: it ends when it is done, when its time is up (504), or when its client
hangs up; in the last two cases what it still waits for is cancelled (questions not yet in a
forward pass are dropped from the batcher's queue, so an abandoned request costs no more work)."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from starlette.exceptions import HTTPException

from .operator_log import tell_operator

DISCONNECT_POLL_S = 0.05  # how often a waiting request asks whether its client is still there


class ClientLeft(Exception):
    """The client hung up before its answer was ready."""


async def bounded(work: Awaitable[Any], timeout_s: float, disconnected: Callable[[], Awaitable[bool]]) -> Any:
    """``work``'s result; :class:`ClientLeft` once ``disconnected()`` says so, a 504 after ``timeout_s``
    seconds. Either way ``work`` is cancelled first."""
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    try:
        while True:
            left = deadline - loop.time()
            if left <= 0:
                tell_operator("request time", f"a request took longer than {timeout_s:g} s (--request-timeout-s): "
                                              "answered 504")
                raise HTTPException(504, f"the request took longer than {timeout_s:g} s; its questions not yet answered "
                                         "were dropped: send fewer or shorter ones")
            done, _ = await asyncio.wait({task}, timeout=min(DISCONNECT_POLL_S, left))
            if done:
                return task.result()
            if await disconnected():
                raise ClientLeft()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def gather_cancelling(*work: Awaitable[Any]) -> list[Any]:
    """Every ``work``'s result, in order; if one fails or this is cancelled, the others are cancelled too."""
    tasks = [asyncio.ensure_future(item) for item in work]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:
            task.cancel()
