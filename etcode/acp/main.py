"""Running the ACP agent on stdin/stdout until the client closes the connection."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from etcode.acp.server import AcpOptions, EtcodeAcpAgent
from etcode.acp.startup import Start
from etcode.util.json_types import JsonObject

log = logging.getLogger("etcode.acp")


async def _initialized(agent: EtcodeAcpAgent, params: JsonObject) -> None:
    """The agent takes the ``initialize`` answered at the start (the client's capabilities),
    validated by the SDK's model as a request it routed would be."""
    from acp.schema import InitializeRequest
    from pydantic import ValidationError

    try:
        request = InitializeRequest.model_validate(params)
    except ValidationError as err:
        log.warning("acp: the client's initialize params do not validate: %s", err)
        return
    await agent.initialize(
        protocol_version=request.protocol_version,
        client_capabilities=request.client_capabilities,
        client_info=request.client_info,
    )


async def serve(options: AcpOptions, stdin_fd: int, stdout_fd: int, start: Start | None = None) -> int:
    """Serve one client; 0 when it closed the connection, 130 on a signal. ``start``: what
    ``startup.answer_initialize`` read and answered before the SDK was loaded."""
    from acp import AgentSideConnection

    from etcode.acp.transport import open_stdio

    start = start or Start()
    transport = await open_stdio(stdin_fd, stdout_fd, start.pending)
    agent = EtcodeAcpAgent(options)
    if start.initialize is not None:
        await _initialized(agent, start.initialize)
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
