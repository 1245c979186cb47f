"""What a model server says about itself, applied to a session: the window it runs with
(when the catalog does not know it), the lean prompt for a small window, and one warning
when its chat template cannot use tools; once per session, a warning when Ollama runs the
model with less than it was trained for (no ``num_ctx``), and one when the server does not
list the model.

The probe starts while the runtime is built (concurrently with the prompt assembly); each
turn, before the first request, :func:`apply_server_facts` waits for it at most
``discovery.GRACE`` seconds from its start. A later answer is used between the steps of the
run (:func:`apply_late_facts`, with its warnings), and by the next run from the disk cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from etcode.contract.events import Event, WarningEvent
from etcode.provider.spec import ProviderSpec

if TYPE_CHECKING:
    from etcode.engine.window import ContextWindow
    from etcode.provider.discovery import ServerFacts
    from etcode.wiring.runtime import Runtime

#: Windows up to this size (tokens) get the lean prompt, unless ``"prompt": "full"``.
LEAN_WINDOW = 16_384


def wants_lean(prompt_mode: str | None, context: int | None) -> bool:
    """``"lean"`` always, ``"full"`` never, otherwise (``"auto"``) for a window ≤ 16k."""
    if prompt_mode == "lean":
        return True
    if prompt_mode == "full":
        return False
    return context is not None and context <= LEAN_WINDOW


async def apply_server_facts(runtime: Runtime, window: ContextWindow | None) -> list[Event]:
    """Bring ``runtime`` and ``window`` up to date with what the server said so far (waiting
    for it at most the probe's grace): the window size (and a ``UsageUpdate`` so the status
    bar shows it), the counts calibrated to its tokenizer, the tools (not offered when the
    server's chat template drops them, with a warning once), and the prompt mode. Returns
    the events to show."""
    probe = runtime.probe
    facts = await probe.settle() if probe is not None else None
    if window is not None:
        window.on_learn = runtime.remember_window
        _calibrate_counts(runtime, window, facts)
    return _apply_facts(runtime, window, facts)


def apply_late_facts(runtime: Runtime, window: ContextWindow | None) -> list[Event]:
    """Between the steps of a run (never waits): a discovery answer that came after the turn
    began, and the prompt mode for the window known now — also one an overflow error
    taught. Returns the events to show."""
    return _apply_facts(runtime, window, runtime.probe.ready() if runtime.probe is not None else None)


def _apply_facts(runtime: Runtime, window: ContextWindow | None, facts: ServerFacts | None) -> list[Event]:
    """What :func:`apply_server_facts` and :func:`apply_late_facts` share: ``facts``'
    window, warnings, image support and tools, then the prompt mode for the window."""
    events: list[Event] = []
    if (
        window is not None
        and facts is not None
        and facts.context
        and window.learn_window(facts.context, "server")
    ):
        events.append(window.update())
    events.extend(_fact_warnings(runtime, window, facts))
    images = runtime.images
    if facts is not None and images is not None and facts.images is not None and images.takes_images is None:
        images.takes_images = facts.images  # the server says (llama.cpp /props, Ollama /api/show)
    if window is not None:
        window.count_images(images)  # a text-only model's images count as its notices
    if facts is not None and facts.tools is False and runtime.tools.offered and len(runtime.tools):
        runtime.tools.offered = False
        events.append(WarningEvent(_no_tools_warning(runtime.spec, facts)))
    context = window.budget.context if window is not None else None
    runtime.use_lean(wants_lean(runtime.config.prompt, context))
    return events


def _fact_warnings(runtime: Runtime, window: ContextWindow | None, facts: ServerFacts | None) -> list[Event]:
    """The once-a-session warnings about ``facts``, whenever they came (at the start of a
    turn or between its steps): Ollama runs the model with less than it was trained for
    (while that window is the one in force), and the server does not list the model."""
    probe = runtime.probe
    if facts is None or probe is None:
        return []
    events: list[Event] = []
    in_force = window is not None and window.source == "server" and window.budget.context == facts.context
    if facts.trained and in_force and _once(probe.shown, "window"):
        events.append(WarningEvent(_default_window_warning(runtime.spec, facts)))
    if facts.listed is not None and _once(probe.shown, "listed"):
        events.append(WarningEvent(_unlisted_warning(runtime.spec, facts)))
    return events


def _once(shown: set[str], notice: str) -> bool:
    """True the first time ``notice`` is asked for in a session (a probe's ``shown``)."""
    if notice in shown:
        return False
    shown.add(notice)
    return True


def _default_window_warning(spec: ProviderSpec, facts: ServerFacts) -> str:
    """Ollama runs the model with less than it was trained for, because nothing set
    ``num_ctx``: what etcode assumes, and the two ways to raise it (Ollama's OpenAI-compatible
    endpoint takes no ``num_ctx`` per request, so etcode cannot ask for more itself)."""
    context, trained = facts.context or 0, facts.trained or 0
    larger = min(trained, 32_768)
    how = "its default window" if facts.source != "/api/ps" else "the window it loaded"
    return (
        f"Ollama runs {spec.model} with {how} of {context:,} tokens (no num_ctx set), not the "
        f"{trained:,} it was trained for, and silently drops the start of longer prompts: etcode "
        f"keeps within {context:,}. To raise it, start Ollama with "
        f"`OLLAMA_CONTEXT_LENGTH={larger} ollama serve`, or create a model with "
        f"`PARAMETER num_ctx {larger}` in its Modelfile (`ollama create`); a window set so that "
        f'etcode cannot see it goes in etcode.json as "limit": {{"context": N}} of the model'
    )


def _unlisted_warning(spec: ProviderSpec, facts: ServerFacts) -> str:
    listed = facts.listed or ()
    names = ", ".join(listed[:10]) + (f" and {len(listed) - 10} more" if len(listed) > 10 else "")
    said = f"it lists {names}" if names else "it lists no model"
    return (
        f'the server of provider "{spec.id}" ({spec.base_url}) does not list model "{spec.model}" '
        f"({facts.source or 'its model list'}: {said}); a one-model server answers with the model "
        f"it runs whatever the name, others refuse it: set the model to a name it lists"
    )


def _calibrate_counts(runtime: Runtime, window: ContextWindow, facts: ServerFacts | None) -> None:
    """Counts scaled to a local or self-hosted server's tokenizer (``engine.calibration``):
    from the ratio an earlier run kept with its facts, then from each request's usage, kept
    for the next run. Only a server that described itself (llama.cpp, vLLM, Ollama, LM
    Studio: ``facts``) is calibrated, from the turn its answer is known: an endpoint that
    says nothing may be a proxy whose usage is not the prompt's. Hosted providers are not:
    OpenAI's counts are tiktoken's, the others' windows are large and the meter follows
    their reported usage. The ratio is kept off the event loop (``Runtime.keep_later``)."""
    from etcode.provider import discovery

    spec = runtime.spec
    if facts is None or discovery.server_kind(spec) is None:
        return
    calibration = window.calibration
    calibration.enabled = True
    calibration.on_learn = lambda ratio: runtime.keep_later(lambda: discovery.calibrate(spec, ratio))
    if facts.token_ratio:
        calibration.use(facts.token_ratio)


def _no_tools_warning(spec: ProviderSpec, facts: ServerFacts) -> str:
    """llama.cpp's /props names the template (and, in current builds, jinja is on by default
    and /props does not say otherwise): the template is what lacks tools, so that is named,
    not a ``--jinja`` the user may well have given."""
    template = f"its chat template ({facts.template})" if facts.template else "its chat template"
    hint = (
        "start llama-server with a tool-capable template (--chat-template-file FILE)"
        if facts.server == "llama.cpp"
        else "pick a model that supports tools"
    )
    return (
        f"{facts.server or 'the server'} reports that {spec.model} cannot use tools ({template} has "
        f"no tool support), so etcode runs without them and the model can only answer in text; {hint}"
    )
