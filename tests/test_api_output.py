"""Issue 33, item 7: ``Agent(output_type=...)``. The model is told the JSON schema after the
task, the final answer is validated with pydantic and put on ``result.output``; an answer that
does not validate is sent back with pydantic's errors once; a repair that fails too raises
``OutputValidationError``. Real HTTP against the fake LLM server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from etcode import Agent, EventType, OutputValidationError, RetryConfig
from tests.fake_llm import FakeLLM, Reply, user_texts
from tests.project_support import ProjectSpec

PROJECT = ProjectSpec(
    config=False, files={".etcode/commands/city.md": "Name the largest city of $ARGUMENTS."}
)


class City(BaseModel):
    name: str
    population: int


def make_agent(llm: FakeLLM, project: Path) -> Agent[City]:
    return Agent(
        "openai/test-model",
        "k",
        llm.openai_base_url,
        retry=RetryConfig(max_retries=0),
        directory=project,
        store=False,
        builtin_tools=False,
        output_type=City,
    )


def test_the_answer_is_validated_into_output(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text='{"name": "Lyon", "population": 522000}'))
    result = make_agent(llm, project).run_sync("The third city of France?")
    assert result.output == City(name="Lyon", population=522000)
    assert result.text == '{"name": "Lyon", "population": 522000}'
    asked = user_texts(llm.requests[0].body)[-1]
    assert "The third city of France?" in asked
    assert json.dumps(City.model_json_schema(), ensure_ascii=False) in asked  # the model is told the schema


def test_json_in_a_fenced_block_among_prose_is_read(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text='Here it is:\n```json\n{"name": "Lyon", "population": 522000}\n```\nDone.'))
    assert make_agent(llm, project).run_sync("Lyon?").output == City(name="Lyon", population=522000)


@pytest.mark.parametrize(
    "answer",
    [
        '{"name":"Lyon","population":522000}\n\nSource: Wikipedia [1]',  # a citation after it
        'Among {"unknown"} cities [see below]: {"name": "Lyon", "population": 522000} [1]',
        '[{"name": "Paris", "population": "many"}] or rather {"name": "Lyon", "population": 522000}',
        '```json\n{"name": "Lyon", "population": 522000}\n```\nFrom {"the": "census"} [2].',
    ],
)
def test_the_json_value_is_found_among_brackets_of_the_prose(
    llm: FakeLLM, project: Path, answer: str
) -> None:
    """The first JSON value of the answer that validates, with no repair round."""
    llm.script(Reply(text=answer))
    assert make_agent(llm, project).run_sync("Lyon?").output == City(name="Lyon", population=522000)
    assert len(llm.requests) == 1


def test_an_answer_that_does_not_validate_is_repaired_once(llm: FakeLLM, project: Path) -> None:
    llm.script(
        Reply(text='{"name": "Lyon"}', usage=(100, 7)),
        Reply(text='{"name": "Lyon", "population": 522000}', usage=(150, 9)),
    )
    result = make_agent(llm, project).run_sync("Lyon?")
    assert result.output == City(name="Lyon", population=522000)
    assert len(llm.requests) == 2
    repair = user_texts(llm.requests[1].body)[-1]
    assert "population" in repair and "Field required" in repair  # pydantic's errors go back
    assert result.steps == 2
    assert [e.type for e in result.events].count(EventType.LOOP_START) == 2  # both runs' events
    assert result.usage.output_tokens == 7 + 9  # both runs' usage


def test_a_repair_that_fails_too_raises_output_validation_error(llm: FakeLLM, project: Path) -> None:
    llm.script(
        Reply(text="Lyon, about half a million people."), Reply(text='{"name": "Lyon", "population": "many"}')
    )
    agent = make_agent(llm, project)
    with pytest.raises(OutputValidationError) as caught:
        agent.run_sync("Lyon?")
    err = caught.value
    assert str(err) == (
        "the final answer is not a valid City, after one repair round: "
        "population: Input should be a valid integer, unable to parse string as an integer"
    )
    assert err.result.text == '{"name": "Lyon", "population": "many"}' and err.result.output is None
    assert "Invalid JSON" in user_texts(llm.requests[1].body)[-1]  # the first answer was not JSON


def test_a_commands_task_gets_the_schema_after_its_prompt(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text='{"name": "Paris", "population": 2100000}'))
    result = make_agent(llm, project).run_sync("/city France")
    assert result.output == City(name="Paris", population=2100000)
    asked = user_texts(llm.requests[0].body)[-1]
    assert "Name the largest city of France." in asked  # the schema is not in $ARGUMENTS
    assert asked.index("France.") < asked.index('"population"')
    start = next(e for e in result.events if e.type == EventType.LOOP_START)
    assert start.data["task"] == "/city France"
