"""Typed provider failures. ``str(err)`` is one line a user can act on."""

from __future__ import annotations

from etcode.util.errors import EtcodeError


class LLMError(EtcodeError):
    """A model call failed (the agent-loop design's name; every :class:`ProviderError` is
    one). ``original_error``: the exception behind it, when there was one."""

    def __init__(self, message: str, original_error: BaseException | None = None) -> None:
        super().__init__(message)
        self._original_error = original_error

    @property
    def original_error(self) -> BaseException | None:
        """The exception given, else the one this error was raised from (``__cause__``)."""
        return self._original_error if self._original_error is not None else self.__cause__


class ProviderError(LLMError):
    """A model call failed for good (retries, if any, exhausted).

    ``kind`` is one of: ``auth``, ``permission``, ``bad_request``, ``not_found``,
    ``rate_limit``, ``quota``, ``overloaded``, ``server``, ``timeout``, ``connection``,
    ``stream`` (bad or cut stream), ``context_overflow``.
    """

    exit_code = 1

    def __init__(
        self,
        message: str,
        *,
        kind: str = "server",
        status: int | None = None,
        retryable: bool = False,
        provider: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retryable = retryable
        self.provider = provider
        #: Seconds the server asked us to wait (``retry-after-ms``/``retry-after``), if any.
        self.retry_after = retry_after


class ContextOverflowError(ProviderError):
    """The request did not fit the model's context window (compaction may help)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider: str | None = None,
        window: int | None = None,
    ) -> None:
        super().__init__(message, kind="context_overflow", status=status, retryable=False, provider=provider)
        #: The context window the server stated (llama.cpp's ``n_ctx``), when it did.
        self.window = window


class StreamParseError(ProviderError):
    """The stream held something that is not valid SSE / JSON for its wire format."""

    def __init__(self, message: str, *, provider: str | None = None) -> None:
        super().__init__(message, kind="stream", retryable=False, provider=provider)


class ImagesRefusedError(ProviderError):
    """The server said the model takes no image input (llama.cpp answers 500 "image input is
    not supported"): never retried as it is; the loop may send it again without the images."""

    def __init__(self, message: str, *, status: int | None = None, provider: str | None = None) -> None:
        super().__init__(message, kind="bad_request", status=status, retryable=False, provider=provider)
