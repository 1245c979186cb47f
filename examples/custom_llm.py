"""Your own model client: subclass BaseLLMClient and implement chat(). Messages arrive in
OpenAI Chat format, tools in OpenAI function format. This one needs no server at all.

    python examples/custom_llm.py
"""

import json
from typing import Any

from etcode import Agent, BaseLLMClient, LLMResponse, TokenUsage, ToolCall, tool


@tool
def word_count(text: str) -> int:
    """Count the words in text."""
    return len(text.split())


class RuleBasedLLM(BaseLLMClient):
    """Calls word_count on the user's text once, then reports the tool's answer."""

    model = "rule-based"

    async def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **kwargs: Any
    ) -> LLMResponse:
        usage = TokenUsage(prompt_tokens=len(json.dumps(messages)) // 4, completion_tokens=5, total_tokens=0)
        usage.total_tokens = usage.prompt_tokens + usage.completion_tokens
        last = messages[-1]
        if last["role"] == "tool":
            return LLMResponse(
                content=f"That text has {last['content']} words.", tool_calls=[], usage=usage, raw=None
            )
        # the first user message starts with etcode's <env> block (folder, date): skip it
        text = last["content"].rsplit("</env>\n\n", 1)[-1]
        call = ToolCall(id="call_1", name="word_count", arguments={"text": text})
        return LLMResponse(content=None, tool_calls=[call], usage=usage, raw=None)


def main() -> None:
    agent = Agent(llm=RuleBasedLLM(), tools=[word_count], builtin_tools=False)
    result = agent.run_sync("the quick brown fox jumps")
    print(result.content)
    print(f"steps: {result.steps}, tokens: {result.total_tokens.total_tokens}")


if __name__ == "__main__":
    main()
