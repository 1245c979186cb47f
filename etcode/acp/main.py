"""Running the ACP agent on stdin/stdout until the client closes the connection."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys

from etcode.acp.server import AcpOptions, EtcodeAcpAgent

log = logging.getLogger("etcode.acp")


def protect_stdout() -> int:
    """Keep stdout for protocol messages: returns a duplicate of its descriptor for the
    transport and points descriptor 1 and ``sys.stdout`` at stderr, so a stray print (ours or
    a library's, or a child process inheriting descriptor 1) cannot corrupt the stream."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


async def serve(options: AcpOptions, stdin_fd: int, stdout_fd: int) -> int:
    """Serve one client; 0 when it closed the connection, 130 on a signal."""
    from acp import AgentSideConnection

    from etcode.acp.transport import open_stdio

    transport = await open_stdio(stdin_fd, stdout_fd)
    agent = EtcodeAcpAgent(options)
    conn = AgentSideConnection(agent, transport, listening=False)
    listening = asyncio.ensure_future(conn.listen())
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stopped.set)
    stopping = asyncio.ensure_future(stopped.wait())
    try:
        await asyncio.wait({listening, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        await agent.aclose()  # running turns stop; what they finished is saved
        listening.cancel()
        with contextlib.suppress(BaseException):
            await listening
        with contextlib.suppress(Exception):
            await conn.close()
    if listening.done() and not listening.cancelled() and listening.exception() is not None:
        log.error("acp: the connection failed: %s", listening.exception())
        return 1
    return 130 if stopped.is_set() else 0
