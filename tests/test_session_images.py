"""Images in sessions: kept beside the database by hash (never in a row, shared by forks, swept
only when no session uses them), restored on load (a lost file becomes the image's label and a
warning), shown as ``[image: NAME W×H]`` in replay, and dropped first by compaction."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import pytest

from etcode.contract import events as ev
from etcode.engine.compaction import SUMMARY_HEADER
from etcode.provider.images import image_from_bytes
from etcode.provider.types import ImagePart, Message, TextPart, ToolCallPart, ToolResultPart
from etcode.session import image_files
from etcode.session.store import SessionStore
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import FakeLLM, Reply, image_parts
from tests.test_compaction import INSTRUCTION_MARK, body_text, configure, make_agent
from tests.test_fault_matrix import db_path, ok


def png(width: int, height: int, noise: bool = False) -> bytes:
    from PIL import Image

    if noise:  # incompressible: a real screenshot's weight
        image = Image.frombytes("RGB", (width, height), os.urandom(width * height * 3))
    else:
        image = Image.new("RGB", (width, height), (20, 120, 220))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def image(name: str, width: int = 64, height: int = 48, noise: bool = False) -> ImagePart:
    return image_from_bytes(png(width, height, noise), name)


@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    opened = SessionStore.open(tmp_path / "etcode.db")
    opened.create_session("ses_1", project_id="p", directory=str(tmp_path))
    yield opened
    opened.close()


def image_names(store: SessionStore) -> list[str]:
    folder = image_files.folder_of(store.path)
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def with_images(shot: ImagePart, read: ImagePart) -> list[Message]:
    return [
        Message("user", [TextPart("The page looks broken:"), shot]),
        Message("assistant", [ToolCallPart("c1", "ReadFile", '{"file_path": "diagram.png"}')]),
        Message("tool", [ToolResultPart("c1", "ReadFile", "diagram.png (PNG)", images=[read])]),
    ]


def test_images_live_beside_the_database_and_come_back_whole(store: SessionStore) -> None:
    shot, read = image("screenshot.png", 700, 500, noise=True), image("diagram.png", 32, 32)
    assert len(shot.data) > 1_000_000
    messages = with_images(shot, read)
    store.append_messages("ses_1", messages, turn=1)

    assert image_names(store) == sorted([f"{shot.sha256}.png", f"{read.sha256}.png"])
    assert (image_files.folder_of(store.path) / f"{shot.sha256}.png").read_bytes() == png_bytes(shot)
    database = sum(p.stat().st_size for p in store.path.parent.glob("etcode.db*"))
    assert database < 200_000  # the 1.3 MB of base64 is not in SQLite
    (row,) = store._query("SELECT parts FROM messages WHERE role = 'user'", ())
    stored = json.loads(row[0])[1]
    assert stored["type"] == "image" and stored["data"] == "" and stored["sha256"] == shot.sha256
    assert messages[0].images[0].data == shot.data  # the run's own message is not changed

    loaded = store.load_messages("ses_1")
    assert loaded[0].images == [shot]
    assert loaded[2].tool_results[0].images == [read]
    # a replay reads no image at all
    assert [i.data for m in store.transcript("ses_1", images=False) for i in m.message.images] == ["", ""]


def png_bytes(part: ImagePart) -> bytes:
    import base64

    return base64.b64decode(part.data)


def test_a_fork_shares_the_files_and_a_delete_keeps_what_another_session_uses(store: SessionStore) -> None:
    shot, read = image("screenshot.png"), image("diagram.png", 32, 32)
    store.append_messages("ses_1", with_images(shot, read), turn=1)
    store.create_session("ses_2", project_id="p", directory="/")
    store.append_messages("ses_2", [Message("user", [TextPart("same shot"), shot])], turn=1)
    store.fork_session("ses_1", "ses_3")
    assert len(image_names(store)) == 2  # the fork copied rows, not images
    assert store.load_messages("ses_3")[0].images == [shot]

    age_files(store)
    store.delete_session("ses_1")
    assert len(image_names(store)) == 2  # the fork still uses both
    store.delete_session("ses_3")
    assert image_names(store) == [f"{shot.sha256}.png"]  # ses_2 still shows the screenshot
    store.delete_session("ses_2")
    assert image_names(store) == []


def age_files(store: SessionStore) -> None:
    old = time.time() - image_files.SWEEP_GRACE - 60
    for path in image_files.folder_of(store.path).iterdir():
        os.utime(path, (old, old))


def test_a_file_written_moments_ago_is_never_swept(store: SessionStore) -> None:
    """Another process may have written an image whose row is not committed yet."""
    shot = image("screenshot.png")
    store.append_messages("ses_1", [Message("user", [TextPart("x"), shot])], turn=1)
    store.create_session("ses_2", project_id="p", directory="/")
    store.delete_session("ses_1")  # unreferenced, but young
    assert image_names(store) == [f"{shot.sha256}.png"]
    age_files(store)
    store.delete_session("ses_2")
    assert image_names(store) == []


def test_a_lost_image_becomes_its_label_and_a_warning(store: SessionStore) -> None:
    shot, read = image("screenshot.png", 1280, 720), image("diagram.png", 32, 32)
    store.append_messages("ses_1", with_images(shot, read), turn=1)
    for path in image_files.folder_of(store.path).iterdir():
        path.unlink()
    warnings: list[str] = []
    loaded = store.load_messages("ses_1", warnings=warnings)
    assert loaded[0].images == [] and "[image: screenshot.png 1280×720]" in loaded[0].text
    result = loaded[2].tool_results[0]
    assert result.images is None and result.output == "diagram.png (PNG)\n[image: diagram.png 32×32]"
    assert len(warnings) == 2 and "a stored image is gone" in warnings[0]
    assert "screenshot.png" in warnings[0]


def test_a_damaged_reference_never_reads_outside_the_folder(store: SessionStore, tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_bytes(b"not yours")
    store.append_messages("ses_1", [Message("user", [TextPart("x"), image("a.png")])], turn=1)
    with store._tx() as conn:
        conn.execute("UPDATE messages SET parts = replace(parts, ?, ?)", (image("a.png").sha256, "../secret"))
    warnings: list[str] = []
    (loaded,) = store.load_messages("ses_1", warnings=warnings)
    assert loaded.images == [] and "[image: a.png 64×48]" in loaded.text
    assert warnings and "damaged reference" in warnings[0]


# ---- through the real CLI and the Agent ----------------------------------------------------


def stored_session(project: Path, llm: FakeLLM) -> str:
    llm.script(Reply(text="Hello."))
    ok(etcode("run", "hello", cwd=project))
    store = SessionStore.open(db_path())
    try:
        (info,) = store.list_sessions(None)
        store.append_messages(
            info.id, with_images(image("screenshot.png", 1280, 720), image("diagram.png", 32, 32)), turn=2
        )
    finally:
        store.close()
    return info.id


def test_replay_shows_the_images_labels(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    sid = stored_session(project, llm)
    shown = etcode("sessions", "show", sid, cwd=project)
    ok(shown)
    lines = shown.stdout.splitlines()
    assert "> [image: screenshot.png 1280×720]" in lines
    assert "    [image: diagram.png 32×32]" in lines
    assert lines.index("> [image: screenshot.png 1280×720]") < lines.index("    [image: diagram.png 32×32]")

    # a resumed run whose image file went missing still runs, with a warning
    for path in image_files.folder_of(db_path()).iterdir():
        path.unlink()
    llm.script(Reply(text="Fine."))
    proc = etcode("run", "--format", "json", "-c", "again", cwd=project)
    ok(proc)
    warnings = [json.loads(line) for line in proc.stdout.splitlines() if '"warning"' in line]
    assert any("a stored image is gone" in w["message"] for w in warnings)
    assert "[image: screenshot.png 1280×720]" in llm.requests[-1].text


#: Images per stored turn: their cost dwarfs the system prompt's, whatever the formula.
PER_TURN = 6


def turn_with_images(name: str) -> list[Message]:
    shots: list[ImagePart] = [image(f"{name}-{i}.png", 1000, 1000) for i in range(PER_TURN)]
    return [Message("user", [TextPart(f"Look at {name}"), *shots]), Message("assistant", [TextPart("Seen.")])]


async def seed_images(tmp_path: Path, *names: str) -> str:
    """A stored session whose turns each hold images (no usage reported yet: the next request
    is estimated whole)."""
    store = SessionStore.open()
    try:
        store.create_session("ses_images", project_id="p", directory=str(tmp_path))
        for turn, name in enumerate(names, start=1):
            store.append_messages("ses_images", turn_with_images(name), turn=turn)
    finally:
        store.close()
    return "ses_images"


def window_for_one_drop() -> int:
    """A context window whose compaction limit is over the request with one turn's images
    dropped but under the one with both (a ~750-token system prompt and tools: the margins
    are hundreds of tokens either side)."""
    from etcode.engine.context import TokenEstimator

    estimator = TokenEstimator("test-model")
    with_images = turn_with_images("x")[0]
    cost = estimator.message(with_images) - estimator.message(Message.user(with_images.text))
    limit = 750 + 1.6 * cost
    return int(limit / 0.9) + 1000  # usable = context - the 1,000-token reserve; limit = 0.9 usable


async def test_compaction_drops_the_oldest_image_first(tmp_path: Path, llm: FakeLLM) -> None:
    configure(tmp_path, llm, context=window_for_one_drop(), output=1000)
    sid = await seed_images(tmp_path, "old", "new")
    llm.script(Reply(text="Done."))
    agent = make_agent(tmp_path, session_id=sid)
    events = [event async for event in agent.stream("What changed?")]
    await agent.aclose()
    assert len(llm.requests) == 1  # no summary request: dropping the oldest images was enough
    text = llm.requests[-1].text
    assert all(f"[image: old-{i}.png 1000×1000]" in text for i in range(PER_TURN))  # their labels
    assert "[image: new-" not in text  # the newer ones are still images
    assert INSTRUCTION_MARK not in text and SUMMARY_HEADER not in text
    done = [e for e in events if isinstance(e, ev.CompactionEvent) and e.phase == "done"]
    assert len(done) == 1 and done[0].pruned == PER_TURN and done[0].summarized == 0
    assert done[0].tokens_after < done[0].tokens_before
    # the session keeps the images of the older batch
    store = SessionStore.open()
    try:
        older = [m for m in store.transcript(sid, images=False) if m.batch == 0]
        assert sum(len(m.message.images) for m in older) == 2 * PER_TURN
    finally:
        store.close()


async def test_the_summary_request_never_carries_an_image(tmp_path: Path, llm: FakeLLM) -> None:
    configure(tmp_path, llm, context=window_for_one_drop(), output=1000)
    sid = await seed_images(tmp_path, "a", "b", "c")
    llm.script(Reply(text="## Goal\nSummary."), Reply(text="Done."))
    agent = make_agent(tmp_path, session_id=sid)
    await agent.compact()
    await agent.aclose()
    summary = llm.requests[-1]
    assert INSTRUCTION_MARK in body_text(summary)
    assert "[image: a-0.png 1000×1000]" in summary.text
    assert image_parts(summary.body) == 0


def replayed_history() -> list[Message]:
    return [
        *with_images(image("screenshot.png", 1280, 720), image("diagram.png", 32, 32)),
        Message("assistant", [TextPart("The header overlaps.")]),
    ]


async def test_the_chat_replays_an_image_as_its_label(project: Path, llm: FakeLLM) -> None:
    from tests.test_tui_replay import resumed, users

    write_config(project, llm)
    llm.script(Reply(text="Hello."))
    ok(etcode("run", "hello", cwd=project))
    store = SessionStore.open(db_path())
    try:
        (info,) = store.list_sessions(None)
        store.append_messages(info.id, replayed_history(), turn=2)
    finally:
        store.close()

    async def check(pilot, app) -> None:  # type: ignore[no-untyped-def]
        assert "[image: screenshot.png 1280×720]" in users(app)
        (read,) = [w for w in app.conversation.tools.values() if w.output.startswith("diagram.png")]
        assert read.output == "diagram.png (PNG)\n[image: diagram.png 32×32]"

    await resumed(project, check)


def test_an_editor_replays_an_image_as_its_label(tmp_path: Path) -> None:
    from etcode.acp.replay import replay_updates

    updates = [
        json.dumps(u.model_dump(mode="json", by_alias=True), ensure_ascii=False)
        for u in replay_updates(replayed_history(), tmp_path)
    ]
    assert any("[image: screenshot.png 1280×720]" in u and "user_message_chunk" in u for u in updates), (
        updates
    )
    assert any("[image: diagram.png 32×32]" in u for u in updates), updates
