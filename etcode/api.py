"""The public Python API: ``Agent`` and friends. The CLI and the TUI drive this same class.

from etcode import Agent, tool

@tool
def add(a: int, b: int) -> int:
    "Add two numbers."
    return a + b

agent = Agent("anthropic/claude-sonnet-4-20250514", tools=[add])
result = agent.run_sync("What is 2 + 3? Use the add tool.")
print(result.text)
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Unpack, cast

from etcode.contract.events import Event, SessionStart, StepStart
from etcode.contract.results import AgentResult, OutputT
from etcode.engine.limits import LoopLimits
from etcode.prompt.system import DEFAULT_NAME
from etcode.provider.reasoning import Reasoning, reasoning_setting
from etcode.provider.spec import CUSTOM_PROVIDER, RetryConfig
from etcode.provider.types import Message
from etcode.tools.base import Tool, ToolResult, tool
from etcode.tools.dict_tool import tools_from
from etcode.util.json_types import JsonObject, JsonValue
from etcode.util.sync_bridge import STOP_GRACE, iterate_blocking, loop_running, run_blocking

if TYPE_CHECKING:
    from etcode.config.schema import Config
    from etcode.contract.events import LoopEvent
    from etcode.conversation import Conversation
    from etcode.engine.interception import Interceptor
    from etcode.engine.run import Run
    from etcode.extensions.hook_interceptor import HookInterceptor
    from etcode.extensions.skills import Skill
    from etcode.permission.service import Asker
    from etcode.prompt.image_inputs import ImageInput
    from etcode.provider.base import Provider
    from etcode.provider.chat_client import BaseLLMClient
    from etcode.provider.types import ImagePart
    from etcode.session.snapshots import UndoReport
    from etcode.session.store import SessionStore, StoredMessage
    from etcode.tools.background import BackgroundProcesses
    from etcode.wiring.run_limits import LimitDefaults
    from etcode.wiring.runtime import Runtime
    from etcode.wiring.settings import ChildSettings
    from etcode.wiring.typed_output import TypedOutput

#: A tool as ``tools=`` takes it: a ``Tool``, a dict in the design's shape, a typed function, or
#: a tool class or an object of one (any object: its ``@tool`` methods, ``tools/class_tools.py``).
ToolInput = Tool | JsonObject | Callable[..., object] | object
#: A conversation to continue from: etcode Messages or OpenAI Chat message dicts.
HistoryInput = Sequence[Message] | Sequence[JsonObject]

__all__ = ["Agent", "AgentResult", "LoopLimits", "RetryConfig", "Tool", "ToolResult", "tool"]


def _check_keywords(llm_kwargs: JsonObject) -> None:
    """A misspelt ``Agent`` keyword would otherwise travel on as a model option."""
    import difflib

    for key in llm_kwargs:
        close = difflib.get_close_matches(key, _AGENT_KEYWORDS, n=1, cutoff=0.8)
        if close:
            raise TypeError(f"Agent got an unexpected keyword argument {key!r} (did you mean {close[0]!r}?)")


def _client_model(model: str | None, llm: BaseLLMClient) -> str:
    """``custom/<name>`` for a user's client: its ``model`` attribute names it when ``model``
    does not."""
    named = model or getattr(llm, "model", None)
    label = named if isinstance(named, str) and named else type(llm).__name__
    return label if "/" in label else f"{CUSTOM_PROVIDER}/{label}"


class Agent(Generic[OutputT]):
    """A coding agent: a model, a system prompt, tools and a conversation.

    ``Agent(model, api_key, base_url, llm, tools, system_prompt, name, limits, retry,
    temperature, **llm_kwargs)``, positionally or by keyword:

    - ``model``: ``"provider/model"``, or a bare id: with ``base_url`` any id of an
      OpenAI-compatible server, without it a known family (``gpt-…``/``o1``/``o3``/``o4`` →
      openai, ``claude-…`` → anthropic, ``gemini-…`` → gemini). When omitted it comes from
      ``etcode.json`` / ``ETCODE_MODEL`` / the environment's API keys.
    - ``llm``: your own client instead (:class:`~etcode.provider.chat_client.BaseLLMClient`:
      ``async chat(messages, tools=None, **kwargs) -> LLMResponse`` in OpenAI Chat format).
    - ``tools``: plain typed functions, ``Tool`` objects, dicts ``{"name", "description",
      "parameters", "function"}``, or tool classes (or objects of them) whose ``@tool`` methods
      become ``{tool_prefix or ClassName}_{method}``; built-in tools come too unless
      ``builtin_tools=False`` (``TodoWrite`` stays either way).
    - ``system_prompt`` and ``name``: your instructions (the system text's last section, as
      :func:`etcode.build_system_prompt` shows), and what the assistant calls itself (in every
      prompt, ``etcode`` by default).
    - ``temperature`` and ``**llm_kwargs`` (``top_p``, ``seed``, ``stop``…) go into every
      model request; one the provider does not accept is an error before any request.
    - ``skills``: skill folders of your own (each a ``SKILL.md`` folder or a folder of them;
      one path or a list; a relative one is taken from ``directory`` when given, else from the
      current folder), besides the project's and the user's (:func:`etcode.discover_skills`
      lists them all). ``skills_dir``: the agent-loop design's name for one more such folder.
    - ``commands``: a task ``/name args`` naming a custom command runs its prompt (as
      ``etcode run /name args``); ``False`` sends every task as it is.
    - ``reasoning``: how hard the model thinks (``"low"``/``"medium"``/``"high"``, a token
      budget, ``"off"``; None: the config's ``reasoning``), sent as the provider's own field
      (``etcode.provider.reasoning``); ``thinking_level`` is the design's name for it. The
      thinking comes back as ``REASONING`` step events unless ``emit_reasoning_events=False``.
    - ``output_type``: a pydantic model (or dataclass…): ``run``/``arun``/``run_sync`` tell
      the model its JSON schema, validate the final answer and put the instance on
      ``result.output`` (one repair round; then :class:`~etcode.contract.errors.OutputValidationError`).
    - ``asker``: answers what the permission rules say to ask
      (:class:`~etcode.permission.service.Asker`); without one such calls are refused.

    Failures: a run whose model failed before answering anything raises the error
    (:class:`~etcode.provider.errors.ProviderError`…); once it answered, the result carries it
    (``stop_reason``, ``error``, ``exception``), with the work done so far.

    Successive runs continue the same conversation (``reset()`` starts over; ``conversation()``
    makes another, with a session of its own). ``run`` returns
    the result from ordinary code and an awaitable inside ``async`` code; ``run_sync``,
    ``arun``, ``stream`` (etcode's detailed events), ``arun_stream``/``run_stream``
    (step-level :class:`~etcode.contract.events.LoopEvent` s) are the other forms.
    Each takes ``images=[...]``: image files (paths, ``bytes`` or ``ImagePart`` s; one alone too) sent with
    the task (``agent.run("why is this red?", images=["shot.png"])``).

    Sessions. ``store`` decides where the conversation is kept:

    - ``None`` (the default): in memory only — nothing is written to disk — unless
      ``session_id``, ``continue_last`` or ``fork`` ask for a stored session, which opens the
      default store (``$XDG_DATA_HOME/etcode/etcode.db``);
    - ``True``: the default store (the ``etcode`` CLI and TUI use this);
    - a :class:`~etcode.session.store.SessionStore`: that store; ``False``: never a store.

    With a store, every finished step is saved. ``session_id`` resumes that session (or
    starts one with that id), ``continue_last`` resumes the project's newest session, and
    ``fork`` resumes a copy of it under a new id (``agent.session_id``). ``compact()``,
    ``clear()`` and ``undo()`` act on the session; ``on_event`` receives the events those
    produce outside ``stream()``.

    Project trust. As ``etcode run``: the risky settings of a project's ``etcode.json``
    (in the config you pass in ``config=`` or, without one, the files of ``directory``) —
    a ``baseURL`` that would receive your key, an MCP command, a plugin, instructions outside
    the project… (``etcode.trust.project``) — are refused with
    :class:`~etcode.config.trust.UntrustedConfigError` naming each setting, before anything
    is started or sent, unless the file's current version was approved. ``trust=True``
    approves them and remembers it until the file changes (``etcode run --trust``);
    ``trust=None`` skips the check (for a caller that asked the user itself).
    """

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        llm: BaseLLMClient | None = None,
        tools: Iterable[ToolInput] | None = None,
        system_prompt: str = "",
        name: str = DEFAULT_NAME,
        limits: LoopLimits | None = None,
        retry: RetryConfig | None = None,
        temperature: float | None = None,
        *,
        builtin_tools: bool = True,
        agent: str | None = None,
        max_tokens: int | None = None,
        directory: str | Path | None = None,
        config: Config | None = None,
        provider: Provider | None = None,
        asker: Asker | None = None,
        session_id: str | None = None,
        continue_last: bool = False,
        fork: bool = False,
        store: SessionStore | bool | None = None,
        on_event: Callable[[Event], None] | None = None,
        trust: bool | None = False,
        skills: str | Path | Iterable[str | Path] | None = None,
        commands: bool = True,
        reasoning: Reasoning = None,
        thinking_level: Reasoning = None,
        emit_reasoning_events: bool = True,
        output_type: type[OutputT] | None = None,
        skills_dir: str | Path | None = None,
        **llm_kwargs: JsonValue,
    ) -> None:
        _check_keywords(llm_kwargs)
        #: The thinking asked of the model (``"low"``/``"medium"``/``"high"``, a token budget,
        #: None: the config's ``reasoning``); ``thinking_level`` is the design's name for it.
        self.reasoning = reasoning_setting(reasoning, thinking_level)
        #: REASONING events in ``run_stream``/``arun_stream`` (and ``AgentResult.events``).
        self.emit_reasoning_events = emit_reasoning_events
        self.output_type = output_type
        self._typed_output: TypedOutput[OutputT] | None = None
        #: What ``arun`` adds after the task (``output_type``'s schema), once a command is expanded.
        self._task_note = ""
        if output_type is not None:
            from etcode.wiring.typed_output import TypedOutput

            self._typed_output = TypedOutput(output_type)
        if llm is not None:
            if provider is not None:
                raise TypeError("Agent: pass llm= or provider=, not both")
            from etcode.provider.chat_client import ChatClientProvider

            provider = ChatClientProvider(llm, retry)
            model = _client_model(model, llm)
        self.model = model
        self.api_key = api_key
        self.base_url = base_url
        self.llm = llm
        self.llm_kwargs = llm_kwargs
        self.custom_tools = tools_from(tools or ())
        self.skills = [*_skill_folders(skills, directory), *_skill_folders(skills_dir, directory)]
        self.builtin_tools = builtin_tools
        self.system_prompt = system_prompt
        self.name = name
        self.agent_name = agent
        self.limits = limits
        #: Whose defaults a run without ``limits`` takes where the config sets none: the
        #: design's (``"api"``) or the front ends' (``"cli"``: 50 steps, hard; see
        #: ``etcode.wiring.run_limits``).
        self.limit_defaults: LimitDefaults = "api"
        self.retry = retry
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.directory = Path(directory).resolve() if directory else None
        self.config = config
        self.provider = provider
        self.asker = asker
        from etcode.util.turns import Turn

        #: Held while ``asker`` is asked: the conversations made from this agent (and its
        #: Task subagents) share it, so their questions come one at a time.
        self.question_turn = Turn()
        self.trust = trust
        #: A task ``/name args`` naming a custom command runs the command's prompt (the front
        #: ends expand commands themselves, with their agent and model: they pass False).
        self.commands = commands
        self.on_event = on_event
        #: The agents of the conversations made from this one: ``aclose`` closes them too.
        self._conversations: weakref.WeakSet[Agent[OutputT]] = weakref.WeakSet()
        self._begin_session(store, session_id, continue_last=continue_last, fork=fork)

    def _begin_session(
        self,
        store: SessionStore | bool | None,
        session_id: str | None,
        *,
        continue_last: bool = False,
        fork: bool = False,
    ) -> None:
        """The state of one session: its store and id, history, tool state, runtime and
        hooks. Everything else an ``Agent`` holds is a setting, shared by the conversations
        made from it (:meth:`conversation`); a new per-session field belongs here."""
        self.history: list[Message] = []
        from etcode.wiring.agent_session import AgentSession

        self._session = AgentSession.resolve(
            store, session_id, continue_last=continue_last, fork=fork, directory=self.directory
        )
        self.session_id = self._session.session_id
        self._session_open = False
        self.state: dict[str, object] = {}
        self.last_result: AgentResult | None = None
        self._runtime: Runtime | None = None
        self._preparing: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._current: Run | None = None
        #: The stream of the run under way, until it ends (one left early is ended by the next).
        self._open_stream: _OpenStream | None = None
        self._stop_requested = False
        #: The session that started this one (set for ``Task`` subagents).
        self.parent_session_id: str | None = None
        #: The session's hooks (None: it has none) and what reading them warned of.
        self._hooks: HookInterceptor | None = None
        self._hook_warnings: list[str] = []
        #: The hooks' state of the agent this one goes on from (``carry_hooks``).
        self._hooks_carried: tuple[str | None, bool] | None = None

    def conversation(
        self, *, store: SessionStore | bool | None = None, session_id: str | None = None
    ) -> Conversation[OutputT]:
        """A new conversation with this agent's settings (model, tools, prompt, limits…) and
        a session of its own: its own history and todos, apart from this agent's ``run``s
        and from its other conversations. ``store``: as the agent's (``None``: where the
        agent keeps its own session, in memory when it has no store); ``session_id``
        resumes a stored session (one the CLI made too)."""
        from etcode.conversation import Conversation

        return Conversation(self._sibling(store, session_id))

    def _sibling(self, store: SessionStore | bool | None, session_id: str | None) -> Agent[OutputT]:
        """An agent with this one's settings and a new session (:meth:`_begin_session`)."""
        import copy

        sibling = copy.copy(self)
        sibling.custom_tools = list(self.custom_tools)
        sibling.skills = list(self.skills)
        sibling.llm_kwargs = dict(self.llm_kwargs)
        sibling._begin_session(self._session.store if store is None else store, session_id)
        sibling._conversations = weakref.WeakSet()
        self._conversations.add(sibling)
        return sibling

    # ---- running -----------------------------------------------------------------
    def stream(
        self, task: str, images: ImageInput | Iterable[ImageInput] | None = None
    ) -> AsyncIterator[Event]:
        """Run one task, yielding every event; the last is ``DoneEvent``. ``images`` go with
        the task in the user's message: paths (a relative one from ``directory``), whole
        image files as ``bytes`` or :class:`~etcode.provider.types.ImagePart` s; PNG, JPEG,
        GIF or WebP, downscaled to the providers' limits. One that cannot be read raises
        :class:`~etcode.provider.images.ImageError` naming it before anything runs."""
        handle = _OpenStream()
        events = handle.events = self._stream(task, images, handle)
        return events

    async def _stream(
        self, task: str, images: ImageInput | Iterable[ImageInput] | None, handle: _OpenStream
    ) -> AsyncGenerator[Event, None]:
        handle.loop = asyncio.get_running_loop()
        left, self._open_stream = self._open_stream, handle
        if left is not None:
            await self._end_left(left)
        try:
            async for event in self._run_events(task, images):
                yield event
        finally:
            if self._open_stream is handle:
                self._open_stream = None

    async def _end_left(self, left: _OpenStream) -> None:
        """A stream its caller left early (``break``) is still open, its run paused at an
        event: the run is stopped and drained (at most ``STOP_GRACE`` seconds), so its steps
        are in the conversation before the next run starts."""
        events = left.events
        if events is None or getattr(events, "ag_running", False) is True:
            return  # iterated elsewhere: two runs of one agent at once (the caller's doing)
        if left.loop is not asyncio.get_running_loop():
            return  # its loop's own end closes it (a closed loop: it is gone with it)
        self.interrupt()
        # Whatever ends the old run (its own failure included) is its result, not this run's.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(STOP_GRACE):
                async for _ in events:
                    pass
        with contextlib.suppress(Exception):
            await events.aclose()

    async def _run_events(
        self, task: str, images: ImageInput | Iterable[ImageInput] | None
    ) -> AsyncIterator[Event]:
        """The events of one run (:meth:`stream`)."""
        from etcode.wiring.runs import WORKFLOW_AGENT, start_run

        self._stop_requested = False
        parts = await _images(images, self.directory)
        runtime = await self._prepare()
        command_warnings: list[Event] = []
        if self.commands and task.lstrip().startswith("/"):  # only then are command files read
            task, command_warnings, command_images = await self._command_task(task, runtime)
            parts = [*command_images, *parts]
        if self._task_note:
            task, self._task_note = f"{task}\n\n{self._task_note}", ""
        if parts and runtime.agent_name == WORKFLOW_AGENT:
            from etcode.contract.events import WarningEvent

            command_warnings.append(
                WarningEvent("images not sent: the workflow agent's turns take text only")
            )
        session = self._session
        session.parent_id = self.parent_session_id
        interceptors = self._interceptors()
        # A prompt that hooks may refuse reaches the title model only once it passed them.
        title_later = self._hooks is not None and self.parent_session_id is None
        self.history = await session.begin_turn(task, runtime, self.history, title=not title_later)
        from etcode.wiring.server_window import apply_server_facts

        told = await apply_server_facts(runtime, session.window)  # the server's window, at most 0.3 s
        if parts and runtime.images is not None and runtime.images.takes_images is False:
            from etcode.contract.events import WarningEvent

            told = [
                *told,
                WarningEvent(f"images not sent: model {runtime.images.model} does not take images"),
            ]
        loop = start_run(
            runtime,
            self,
            self.history,
            task,
            recorder=session.recorder,
            window=session.window,
            interceptors=interceptors,
            images=parts,
        )
        self._current = loop
        if self._stop_requested:  # interrupted while the run was being set up
            loop.interrupt()
        try:
            yield SessionStart(
                self.session_id, runtime.spec.full_id, runtime.agent_name, str(runtime.directory)
            )
            for warning in [
                *runtime.take_warnings(),
                *session.take_warnings(),
                *told,
                *self._take_hook_warnings(),
                *command_warnings,
            ]:
                yield warning
            async for event in loop.events():
                if title_later and isinstance(event, StepStart):
                    title_later = False
                    await session.title_turn(task, runtime)
                yield event
            await session.end_turn()
        finally:
            self._current = None
            if self._hooks is not None:
                self._hooks.attach(None)
            if loop.result is not None:
                self.history = list(loop.result.messages)
                await session.save(self.history)
            self.last_result = loop.result

    async def arun_stream(
        self,
        task: str,
        messages: HistoryInput | None = None,
        *,
        images: ImageInput | Iterable[ImageInput] | None = None,
    ) -> AsyncIterator[LoopEvent]:
        """Run one task, yielding step-level events in the agent-loop design's shape
        (``loop_start``, ``thought``, ``action``, ``observation``, ``todo_update``, ``error``,
        ``loop_end``); ``messages`` replaces the conversation so far (Message objects or
        OpenAI Chat dicts, e.g. an earlier result's ``messages``)."""
        from etcode.contract.events import EventType
        from etcode.engine.step_events import loop_events
        from etcode.provider.chat_client import messages_to_openai

        self._adopt(messages)
        async for event in loop_events(self.stream(task, images), task, reasoning=self.emit_reasoning_events):
            if event.type == EventType.LOOP_END and self._current is not None:
                finished = self._current.result
                if finished is not None:  # the conversation in OpenAI Chat format, as the design has it
                    event.data["messages"] = messages_to_openai(finished.messages)
            yield event

    def run_stream(
        self,
        task: str,
        messages: HistoryInput | None = None,
        *,
        images: ImageInput | Iterable[ImageInput] | None = None,
    ) -> Iterator[LoopEvent]:
        """:meth:`arun_stream` for code that is not async: events arrive as they happen (the
        run goes on a worker thread; leaving the loop early interrupts it)."""

        async def events() -> AsyncIterator[LoopEvent]:
            try:
                async for event in self.arun_stream(task, messages, images=images):
                    yield event
            finally:
                await self.aclose()

        return iterate_blocking(events, self.interrupt)

    async def arun(
        self,
        task: str,
        messages: HistoryInput | None = None,
        *,
        images: ImageInput | Iterable[ImageInput] | None = None,
    ) -> AgentResult[OutputT]:
        """Run one task to the end and return its result (with its step-level ``events``).
        A model that failed before answering anything raises its error; a failure after that
        is carried in the result (``exception``). With ``output_type``: ``result.output``."""
        started = time.monotonic()
        typed = self._typed_output
        self._task_note = typed.instructions() if typed is not None else ""
        try:
            result = await self._collect(self.arun_stream(task, messages, images=images))
        finally:
            self._task_note = ""
        if typed is not None and result.stop_reason == "end_turn":
            result = await self._typed(result, typed)
        from etcode.engine.limits import limit_exceeded

        limits = self._runtime.limits if self._runtime is not None else self.limits or LoopLimits()
        result.exception = result.exception or limit_exceeded(result, limits, time.monotonic() - started)
        if result.stop_reason == "error" and result.exception is not None and not _answered(result.events):
            raise result.exception  # nothing to return: the partial result is agent.last_result
        return cast("AgentResult[OutputT]", result)

    async def _collect(self, events: AsyncIterator[LoopEvent]) -> AgentResult:
        """The result of one run, with the step-level events ``events`` yielded."""
        collected = [event async for event in events]
        if self.last_result is None:  # pragma: no cover - the loop always sets it
            raise RuntimeError("the run ended without a result")
        self.last_result.events = collected
        return self.last_result

    async def _typed(self, result: AgentResult, typed: TypedOutput[OutputT]) -> AgentResult:
        """``result`` with its answer validated as ``output_type``, after one repair round
        (its events, steps and usage added) when needed; raises ``OutputValidationError``
        when the repaired answer does not validate either."""
        output, errors = typed.validate(result.text)
        if errors is None:
            result.output = output
            return result
        from etcode.provider.types import Usage

        repaired = await self._collect(self.arun_stream(typed.repair(str(errors))))
        usage = Usage()
        usage.add(result.usage)
        usage.add(repaired.usage)
        repaired.usage = usage
        repaired.events = [*result.events, *repaired.events]
        repaired.steps += result.steps
        repaired.compactions += result.compactions
        if repaired.stop_reason != "end_turn":
            return repaired  # the repair run itself stopped early: its result says why
        output, errors = typed.validate(repaired.text)
        if errors is None:
            repaired.output = output
            return repaired
        from etcode.contract.errors import OutputValidationError
        from etcode.wiring.typed_output import summary

        raise OutputValidationError(
            f"the final answer is not a valid {typed.name}, after one repair round: {summary(errors)}",
            str(errors),
            repaired,
        )

    def run(
        self,
        task: str,
        messages: HistoryInput | None = None,
        *,
        images: ImageInput | Iterable[ImageInput] | None = None,
    ) -> AgentResult[OutputT] | Awaitable[AgentResult[OutputT]]:
        """Run one task to the end. From ordinary code this returns the :class:`AgentResult`
        (as :meth:`run_sync`); inside ``async`` code it returns an awaitable
        (``await agent.run(task)``, as :meth:`arun`). ``images`` go with the task (paths,
        ``bytes`` or ``ImagePart`` s: :meth:`stream`)."""
        if loop_running():
            return self.arun(task, messages, images=images)
        return self.run_sync(task, messages, images=images)

    def run_sync(
        self,
        task: str,
        messages: HistoryInput | None = None,
        *,
        images: ImageInput | Iterable[ImageInput] | None = None,
    ) -> AgentResult[OutputT]:
        """``run`` for code that is not async (each call has its own event loop, so the
        HTTP client is closed at the end; the conversation is kept). Works inside a running
        loop too (a notebook): the run then goes on a worker thread."""

        async def once() -> AgentResult[OutputT]:
            try:
                return await self.arun(task, messages, images=images)
            finally:
                await self.aclose()

        return run_blocking(once)

    def _adopt(self, messages: HistoryInput | None) -> None:
        """Continue from ``messages`` instead of the conversation so far."""
        if messages is None:
            return
        items = list(messages)
        if all(isinstance(item, Message) for item in items):
            self.history = cast("list[Message]", items)
        elif all(isinstance(item, dict) for item in items):
            from etcode.provider.chat_client import messages_from_openai

            self.history = messages_from_openai(cast("list[JsonObject]", items))
        else:
            raise TypeError("messages must be etcode Messages or OpenAI Chat message dicts, not a mix")

    def interrupt(self) -> None:
        """Stop the running task as soon as possible (the result says ``interrupted``)."""
        self._stop_requested = True  # seen by a run still being set up
        if self._current is not None:
            self._current.interrupt()

    def reset(self) -> None:
        """Forget the conversation and the todos (tools and settings stay): a new batch."""
        self._hooks_cleared()
        self.history = self._session.clear(self.history, keep_system=False)
        kept = ("background", "background_limit")  # running processes outlive a /clear
        self.state = {key: self.state[key] for key in kept if key in self.state}
        self._session.install(self.state)

    # ---- the session -------------------------------------------------------------
    async def compact(self, on_event: Callable[[Event], None] | None = None) -> None:
        """Summarise the older history now (``/compact``). Emits ``CompactionEvent``s and a
        ``UsageUpdate`` to ``on_event`` (or the agent's ``on_event``)."""
        runtime = await self._prepare()
        sink = on_event or self.on_event or (lambda event: None)
        if self._hooks is not None:  # PreCompact (manual); the next turn: SessionStart (compact)
            self._hooks.attach(sink)
            try:
                await self._hooks.before_compact("manual")
            finally:
                self._hooks.attach(None)
        self.history = await self._session.compact(self.history, runtime, sink)

    def clear(self, keep_system: bool = True) -> None:
        """Start a new batch with no history (``/clear``). The system prompt and tools are
        sent with every request anyway; ``keep_system`` keeps the announcements of tools
        added during the session, so the model still knows them."""
        self._hooks_cleared()
        self.history = self._session.clear(self.history, keep_system)

    async def undo(self, *, force: bool = False) -> list[str]:
        """Restore the files the last turn's WriteFile/Edit calls changed (deleting files it
        created); returns their paths. Repeat to go further back. The model is told at the
        next turn. Files changed since etcode wrote them make it raise ``UndoRefused``
        (nothing undone) unless ``force``; see :meth:`undo_report`."""
        report = await self.undo_report(force=force)
        return report.paths if report is not None else []

    async def undo_report(self, *, force: bool = False) -> UndoReport | None:
        """Like :meth:`undo`, returning what happened to each file (None: nothing to undo)."""
        await self._prepare()
        report, self.history = await self._session.undo(self.history, force=force)
        return report

    async def transcript(self) -> list[StoredMessage]:
        """Every stored message of the session, all batches, in order
        (:class:`~etcode.session.store.StoredMessage`: with its batch and kind); [] without
        a store or before the first save."""
        store = self._session.store
        if store is None:
            return []
        return list(await store.call(store.transcript, self.session_id))

    def usage_now(self) -> Event | None:
        """A ``UsageUpdate`` with the context size and cost as last known (a resumed
        session's stored totals); None before :meth:`prepare`."""
        window = self._session.window
        return window.update() if window is not None else None

    def add_tools(self, tools: Iterable[ToolInput]) -> None:
        """Offer more tools from now on. Once the session has started they are announced to
        the model in an ordinary message at the next turn; the initial tools are unchanged."""
        items = tools_from(tools, self.custom_tools)
        self.custom_tools.extend(items)
        if self._runtime is not None:
            for item in items:
                self._runtime.tools.add(item)
            self._session.announce(items)

    async def available_skills(self) -> list[Skill]:
        """This agent's skills (the project's, the user's, the config's and ``skills=``; none
        when its agent turns the ``Skill`` tool off). Those whose front matter says
        ``disable-model-invocation: true`` are not offered to the model: ``/skills NAME`` only."""
        runtime = await self._prepare()
        return list(runtime.skills.skills) if runtime.skills is not None else []

    @property
    def cost(self) -> float | None:
        """What this session's model calls cost so far (None when the price is unknown)."""
        meter = getattr(self._session.window, "meter", None)
        if meter is None or meter.price is None or not meter.price.known:
            return None
        return float(meter.cost)

    @property
    def background(self) -> BackgroundProcesses:
        """This session's background processes (``Bash`` with ``run_in_background``),
        made on first use; :meth:`aclose` ends them."""
        from etcode.tools.background import of_state

        return of_state(self.state)

    async def make_child(self, parent: Runtime, **settings: Unpack[ChildSettings]) -> Agent:
        """A ready Task subagent of this agent (a :class:`~etcode.wiring.runtime.ChildFactory`):
        built from ``settings`` with its runtime from ``parent``'s, recorded as this session's
        child and stored where this session is (in memory when this one is)."""
        from etcode.wiring.runs import build_runtime

        store = self._session.store
        llm_kwargs = settings.pop("llm_kwargs", {})
        child = Agent(store=store if store is not None else False, **settings, **llm_kwargs)
        child.parent_session_id = self.session_id
        child.limit_defaults = self.limit_defaults
        child.question_turn = self.question_turn
        # Its background processes are this session's: listed, polled, limited and ended with it.
        child.state["background"] = self.background
        child._runtime = await build_runtime(child, parent=parent, make_child=child.make_child)
        return child

    async def aclose(self, *, end_session: bool = True) -> None:
        """Close the session and the runtime, after ``SessionEnd`` (``end_session=False``:
        the session goes on in another agent, see :meth:`carry_hooks`), and the
        conversations made from this agent that are open on this event loop (the sync forms
        close theirs after each send)."""
        try:
            await self._close_own(end_session)
        finally:
            loop = asyncio.get_running_loop()
            for conversation in list(self._conversations):
                preparing = conversation._preparing
                if preparing is not None and preparing[0] is loop:
                    await conversation.close_left_open()

    async def close_left_open(self) -> None:
        """:meth:`aclose`, unless nothing is open (called as the event loop ends, for an
        agent the program never closed: ``etcode/wiring/loop_end.py``)."""
        if self._runtime is not None or any(c._runtime is not None for c in list(self._conversations)):
            await self.aclose()

    async def _close_own(self, end_session: bool) -> None:
        try:
            if self._hooks is not None:  # SessionEnd (the session's own, not a Task child's)
                self._hooks.attach(self.on_event)
                try:
                    if self.parent_session_id is None and end_session:
                        await self._hooks.session_end("other")
                    else:
                        from etcode.extensions.hook_interceptor import SESSION_END_SECONDS

                        await self._hooks.drain(SESSION_END_SECONDS)
                finally:
                    self._hooks.attach(None)
        finally:  # a SessionEnd that failed or was cancelled still closes the session and runtime
            try:
                if end_session:  # else they go on with the session (carry_hooks)
                    await self._close_background()
            finally:
                try:
                    await self._session.aclose()
                finally:
                    if self._runtime is not None:
                        runtime, self._runtime = self._runtime, None
                        await runtime.aclose()

    def _background_limit(self, limit: int) -> None:
        """``shell.maxBackground``: for the registry made later, or the one made already."""
        self.state["background_limit"] = limit
        if self.state.get("background") is not None:
            self.background.max_running = limit

    async def _close_background(self) -> None:
        """End the session's background processes (nothing to import when none started)."""
        if self.state.get("background") is None or self.parent_session_id is not None:
            return  # none started, or a Task child's: they are its parent session's
        from etcode.tools.background import existing

        background = existing(self.state)
        if background is None:
            return
        running = [info for info in background.list() if info.status == "running"]
        await background.close()
        if running and self.on_event is not None:  # `etcode run` says so on stderr
            from etcode.contract.events import WarningEvent

            names = ", ".join(f"{info.id} ({info.command.strip()[:60]})" for info in running)
            count = "1 background process" if len(running) == 1 else f"{len(running)} background processes"
            self.on_event(WarningEvent(f"stopped {count} with the session: {names}"))

    async def prepare(self) -> None:
        """Build the runtime (config, model, tools, prompt, MCP servers) and load a stored
        session's history now, instead of at the first ``run`` (the TUI warms up with it)."""
        await self._prepare()

    async def _prepare(self) -> Runtime:
        """Build the runtime and open the session once, even when a turn starts while the
        chat's warm-up is still doing it (both wait for the same work)."""
        loop = asyncio.get_running_loop()
        if self._preparing is None or self._preparing[0] is not loop:  # run_sync: a loop per call
            self._preparing = (loop, asyncio.Lock())
        async with self._preparing[1]:
            return await self._prepare_once()

    async def _prepare_once(self) -> Runtime:
        if self._runtime is None:
            from etcode.security.hardening import harden_process
            from etcode.wiring.runs import build_runtime

            harden_process()  # its tools cannot read this process's keys (/proc/PID/environ)

            runtime = await build_runtime(self, make_child=self.make_child)
            try:  # the session's lock again after a close (the sync forms close each time)
                self._session.hold_store()
            except BaseException:  # busy: this agent stays closed, as before the attempt
                await runtime.aclose()
                raise
            self._runtime = runtime
            self._background_limit(runtime.config.shell.max_background)
            from etcode.wiring.loop_end import close_at_loop_end

            await close_at_loop_end(self)  # a program that never closes it exits cleanly
        if not self._session_open:
            self._session_open = True
            loaded = await self._session.open(self._runtime, self)
            if loaded or self._session.info is not None:
                self.history = loaded
            await self._load_hooks(self._runtime, resumed=bool(loaded))
        return self._runtime

    # ---- hooks (etcode/extensions): nothing of them is imported when there are none ------
    async def _load_hooks(self, runtime: Runtime, *, resumed: bool) -> None:
        config = runtime.config
        if not (config.hook_layers or config.hooks or any(f.kind == "settings" for f in config.files)):
            return  # no hooks anywhere: nothing to import, no thread to wait for
        from etcode.extensions.hook_set import load_hooks

        instance = runtime.instance
        hooks, self._hook_warnings = await asyncio.to_thread(
            load_hooks, runtime.config, instance.directory, instance.worktree
        )
        if not hooks:
            return
        from etcode.extensions.hook_interceptor import HookInterceptor, NotifyingAsker
        from etcode.util.paths import data_dir
        from etcode.wiring.runs import hook_env

        self._hooks = HookInterceptor(
            hooks,
            session_id=self.session_id,
            directory=instance.directory,
            worktree=instance.worktree,
            shell_env=hook_env(runtime),
            source="resume" if resumed else "startup",
            state=lambda: self.state,
            permission_mode=self._permission_mode,
            transcript=self._transcript,
            transcript_path=data_dir() / "transcripts" / f"{self.session_id}.jsonl",
        )
        if self._hooks_carried is not None:
            self._hooks.source, self._hooks.started = self._hooks_carried
        hooks.alias = self._claude_alias
        from etcode.permission.service import AllowAsker, DenyAsker

        asker = runtime.permission.asker
        if not isinstance(asker, AllowAsker | DenyAsker):  # those answer at once: nobody waits
            runtime.permission.asker = NotifyingAsker(asker, self._hooks)

    def _interceptors(self) -> tuple[Interceptor, ...]:
        """The run's interceptors: the session's hooks (a Task child's: its tool calls only)."""
        if self._hooks is None:
            return ()
        if self.parent_session_id is None:
            return (self._hooks,)
        from etcode.engine.interception import tool_calls_only

        return tool_calls_only((self._hooks,))

    async def _command_task(self, task: str, runtime: Runtime) -> tuple[str, list[Event], list[ImagePart]]:
        """``task`` as a custom command's prompt when it names one (``/name args``), with a
        warning per file left out or setting not followed and the images its mentions
        attach; else ``task`` as it is."""
        from etcode.contract.events import WarningEvent
        from etcode.wiring.command_task import command_task

        found = await command_task(
            task,
            runtime.instance.directory,
            runtime.instance.worktree,
            trusted=runtime.config.trusted,
            agent=runtime.agent_name,
            model=runtime.spec.full_id,
        )
        if found is None:
            return task, [], []
        return found.prompt, [WarningEvent(warning) for warning in found.warnings], found.images

    def _take_hook_warnings(self) -> list[Event]:
        if not self._hook_warnings:
            return []
        from etcode.contract.events import WarningEvent

        warnings, self._hook_warnings = self._hook_warnings, []
        return [WarningEvent(text) for text in warnings]

    def _hooks_cleared(self) -> None:
        if self._hooks is not None:  # SessionEnd (clear) now, SessionStart (clear) with the next turn
            self._hooks.cleared()

    def carry_hooks(self, other: Agent) -> None:
        """This agent goes on with ``other``'s session (the chat's switch of model or agent,
        ``other`` closed with ``end_session=False``): its hooks neither end nor start it, and
        its background processes go on as this agent's."""
        if other._hooks is not None:
            self._hooks_carried = (other._hooks.source, other._hooks.started)
        background = other.state.get("background")
        if background is not None:
            self.state["background"] = background

    def _permission_mode(self) -> str:
        """Claude Code's ``permission_mode`` for hooks: ``plan`` for the plan agent,
        ``bypassPermissions`` with ``--yes``, else ``default``."""
        runtime = self._runtime
        if runtime is None:
            return "default"
        if runtime.agent_name == "plan":
            return "plan"
        from etcode.permission.service import AllowAsker

        asker = runtime.permission.asker
        asker = getattr(asker, "inner", asker)
        return "bypassPermissions" if isinstance(asker, AllowAsker) else "default"

    def _transcript(self) -> list[Message]:
        """The session's messages so far (the running turn's, during a run)."""
        running = getattr(self._current, "messages", None)
        return list(running) if isinstance(running, list) else list(self.history)

    def _claude_alias(self, name: str) -> str | None:
        """Claude Code's name of an MCP tool (``mcp__<server>__<tool>``), else None."""
        runtime = self._runtime
        tool = runtime.tools.get(name) if runtime is not None else None
        if tool is None or type(tool).__name__ != "McpTool":
            return None
        from etcode.mcp.tool import McpTool

        return f"mcp__{tool.server.name}__{tool.remote_name}" if isinstance(tool, McpTool) else None


def _answered(events: Sequence[LoopEvent]) -> bool:
    """Whether the model answered at all in a run (some text, a tool call)."""
    from etcode.contract.events import EventType

    return any(event.type in (EventType.THOUGHT, EventType.ACTION) for event in events)


class _OpenStream:
    """The generator of one :meth:`Agent.stream`, known to the agent once it started."""

    events: AsyncGenerator[Event, None] | None = None
    #: The loop it runs on (one left open on another loop is not resumed from this one).
    loop: asyncio.AbstractEventLoop | None = None


_AGENT_KEYWORDS = [
    name for name in inspect.signature(Agent.__init__).parameters if name not in ("self", "llm_kwargs")
]


async def _images(
    images: ImageInput | Iterable[ImageInput] | None, directory: Path | None
) -> list[ImagePart]:
    """``Agent.stream``'s ``images`` read (none: no import of the image modules)."""
    if not images:
        return []
    from etcode.prompt.image_inputs import load_images

    return await load_images(images, directory)


def _skill_folders(
    skills: str | Path | Iterable[str | Path] | None, directory: str | Path | None
) -> list[Path]:
    """``Agent(skills=...)`` as absolute folders: one path or many (a string is one path, not
    its letters); a relative one from ``directory`` when given."""
    if skills is None:
        return []
    entries: Iterable[str | Path] = [skills] if isinstance(skills, str | Path) else skills
    base = Path(directory).expanduser() if directory else Path.cwd()
    return [(base / Path(p).expanduser()).resolve() for p in entries]


def discover_skills(
    directory: str | Path = ".",
    *,
    skills: str | Path | Iterable[str | Path] = (),
    config: Config | None = None,
    trust: bool = False,
    on_warning: Callable[[str], None] | None = None,
) -> list[Skill]:
    """The skills an agent started in ``directory`` would have (``skills``: more folders, as
    ``Agent(skills=...)``). ``config``: the configuration to use as given; without one the
    project's is loaded, and a project file's ``skills.paths`` outside the project is left
    out with a warning unless ``trust`` (as ``Agent(trust=True)`` approves it). Each broken
    skill is one warning, passed to ``on_warning`` (else logged)."""
    import logging

    from etcode.extensions.skills import find_skills
    from etcode.instance import describe

    warnings: list[str] = []
    info = describe(Path(directory).expanduser().resolve())
    if config is None:
        from etcode.config.loader import load_config
        from etcode.trust.project import exclusions, untrusted

        config = load_config(info.directory, info.worktree)
        if trust:
            config.mark_trusted()
        else:
            outside = [f for f in untrusted(config) if f.key.startswith("skills.paths")]
            if outside:
                warnings.extend(
                    f"left out {f.key} of {f.file}: it {f.reason} (pass trust=True)" for f in outside
                )
                config = load_config(info.directory, info.worktree, without=exclusions(outside))
    found = find_skills(info.directory, info.worktree, config=config, extra=_skill_folders(skills, directory))
    for message in [*warnings, *found.warnings]:
        if on_warning is not None:
            on_warning(message)
        else:
            logging.getLogger("etcode.extensions").warning("%s", message)
    return found.skills
