"""`mempalace mine DIR --mode convos` end to end: real Chroma, real model, the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.service import open_palace

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "convos"
SESSION = "claude-code/-home-dana-src-billing/0b7e4c1a-3f5d-4d8e-9a61-2c9f5e7d1b42.jsonl"


@pytest.fixture
def exports(tmp_path: Path) -> Path:
    dest = tmp_path / "my-chats"
    shutil.copytree(EXAMPLES, dest)
    return dest


def mine(cli_json: Any, folder: Path, *extra: str) -> dict[str, Any]:
    return cli_json("mine", folder, "--mode", "convos", *extra)


def top(query: str, **filters: Any) -> dict[str, Any]:
    palace = open_palace()
    try:
        return palace.search(query, limit=1, **filters)["results"][0]
    finally:
        palace.close()


def drawers() -> list[Any]:
    palace = open_palace()
    try:
        return list(palace.catalog.iter_drawers())
    finally:
        palace.close()


def test_one_folder_with_all_six_formats(cli_json: Any, cli: Any, exports: Path) -> None:
    report = mine(cli_json, exports)
    assert report["mode"] == "convos" and report["wing"] == "my_chats"
    assert report["files"] == {"mined": 9, "unchanged": 0, "removed": 0, "skipped": 2}
    assert {s["file"] for s in report["skipped"]} == {"slack/users.json", "slack/channels.json"}
    assert report["drawers"] == {"added": 17, "replaced": 0, "removed": 0, "unchanged": 0}

    expected = {
        "claude_code": (
            "why does the retry test fail on CI timing jitter",
            "Flaky retry test in the invoice charger",
            "user, assistant",
        ),
        "claude_ai": (
            "sourdough starter smells like acetone",
            "Sourdough starter smells like nail polish",
            "human, assistant",
        ),
        "chatgpt": (
            "how many weeks to train for a marathon",
            "Marathon training plan",
            "user, assistant",
        ),
        "codex": ("cursor pagination for products endpoint", None, "user, assistant"),
        "slack": (
            "kafka consumer lag max.poll.records",
            "#eng-platform",
            "Alice Moreau, Bob Okafor",
        ),
        "plain_text": (
            "why do tomatoes split before ripening",
            "Notes from a call with my aunt about her greenhouse.",
            "user, assistant",
        ),
    }
    for fmt, (query, title, speakers) in expected.items():
        hit = top(query)
        meta = hit["metadata"]
        assert meta["source_format"] == fmt, (query, hit["text"])
        assert meta["ingest_mode"] == "convos" and meta["extract_mode"] == "exchange"
        assert meta["speakers"] == speakers
        if title:
            assert meta["conversation_title"] == title
        assert Path(hit["source_file"]).is_relative_to(exports)

    hit = top("kafka consumer lag max.poll.records")
    assert hit["metadata"]["timestamp"] == "2024-03-05T09:10:00+00:00"
    assert hit["metadata"]["conversation_id"] == "slack:#eng-platform"
    assert hit["text"].startswith("> Alice Moreau: Consumer lag on the orders topic")
    # The search table names the conversation and who spoke.
    out = cli("search", "kafka consumer lag max.poll.records", "-n", "1").stdout
    assert "#eng-platform" in out and "Okafor" in out, out


def test_remining_adds_nothing_and_grown_conversations_add_only_new(
    cli_json: Any, exports: Path
) -> None:
    first = mine(cli_json, exports, "--wing", "chats")
    again = mine(cli_json, exports, "--wing", "chats")
    assert again["drawers"] == {"added": 0, "replaced": 0, "removed": 0, "unchanged": 17}
    assert again["files"]["unchanged"] == 9

    # The Claude Code session goes on: one more exchange appended to the same file.
    session = exports / SESSION
    lines = session.read_text().splitlines()
    base = json.loads(lines[-1])
    ask = {
        **base,
        "type": "user",
        "uuid": "b1",
        "timestamp": "2025-06-03T09:20:00.000Z",
        "message": {"role": "user", "content": "Also add a changelog entry for the fix."},
    }
    answer = {
        **base,
        "uuid": "b2",
        "timestamp": "2025-06-03T09:20:09.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "Added under Fixed: flaky retry test."}],
        },
    }
    session.write_text("\n".join(lines + [json.dumps(ask), json.dumps(answer)]) + "\n")

    # A later ChatGPT export: the two old conversations (one of them continued) and a new one.
    old = json.loads((exports / "chatgpt/conversations.json").read_text())
    later = json.loads(json.dumps(old))
    haiku = later[1]
    haiku["mapping"]["a"]["children"] = ["q2"]
    haiku["mapping"]["q2"] = {
        "id": "q2",
        "parent": "a",
        "children": ["a2"],
        "message": {
            "id": "q2",
            "author": {"role": "user"},
            "create_time": 1717000200.0,
            "content": {"content_type": "text", "parts": ["Now one about snow."]},
        },
    }
    haiku["mapping"]["a2"] = {
        "id": "a2",
        "parent": "q2",
        "children": [],
        "message": {
            "id": "a2",
            "author": {"role": "assistant"},
            "create_time": 1717000210.0,
            "content": {"content_type": "text", "parts": ["Snow on the woodpile\nthe axe rests"]},
        },
    }
    haiku["current_node"] = "a2"
    later.append(
        {
            "title": "Sharpening a kitchen knife",
            "conversation_id": "new-1",
            "current_node": "n2",
            "mapping": {
                "n1": {
                    "id": "n1",
                    "parent": None,
                    "children": ["n2"],
                    "message": {
                        "author": {"role": "user"},
                        "create_time": 1720000000,
                        "content": {
                            "content_type": "text",
                            "parts": ["What angle for a whetstone?"],
                        },
                    },
                },
                "n2": {
                    "id": "n2",
                    "parent": "n1",
                    "children": [],
                    "message": {
                        "author": {"role": "assistant"},
                        "create_time": 1720000005,
                        "content": {
                            "content_type": "text",
                            "parts": ["Hold it at 15 to 20 degrees."],
                        },
                    },
                },
            },
        }
    )
    (exports / "chatgpt/conversations-2024-07.json").write_text(json.dumps(later))

    grown = mine(cli_json, exports, "--wing", "chats")
    assert sorted(grown["mined_files"]) == ["chatgpt/conversations-2024-07.json", SESSION]
    # changelog, snow, whetstone
    assert grown["drawers"] == {"added": 3, "replaced": 0, "removed": 0, "unchanged": 17}
    total = first["drawers"]["added"] + 3
    assert len(drawers()) == total
    assert top("changelog entry for the fix")["metadata"]["timestamp"] == (
        "2025-06-03T09:20:00+00:00"
    )
    assert mine(cli_json, exports, "--wing", "chats")["drawers"] == {
        "added": 0,
        "replaced": 0,
        "removed": 0,
        "unchanged": total,
    }


def test_malformed_files_are_skipped_with_reasons(cli_json: Any, exports: Path) -> None:
    lines = (exports / SESSION).read_text().splitlines(keepends=True)
    (exports / "claude-code/broken.jsonl").write_text("".join(lines[:3]) + "{oops\n" + lines[3])
    text = (exports / "claude-ai/conversations.json").read_text()
    (exports / "claude-ai/truncated.json").write_text("[" + text[1 : len(text) // 2])
    (exports / "README.md").write_text("# My exports\n\nDownloaded in June.\n")
    (exports / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0")
    data = json.loads(text)
    data[1].pop("chat_messages")
    (exports / "claude-ai/partly.json").write_text(json.dumps(data))

    report = mine(cli_json, exports)
    reasons = {s["file"]: s["reason"] for s in report["skipped"]}
    assert reasons["claude-code/broken.jsonl"].startswith("line 4 column 2: invalid JSON")
    assert reasons["claude-ai/truncated.json"].startswith("line ")
    assert "not a chat export" in reasons["README.md"]
    assert reasons["photo.png"] == "binary file type (.png)"
    assert reasons["claude-ai/partly.json"] == (
        "conversation [1] key 'chat_messages': missing or not a list (left out; the rest of "
        "the file was mined)"
    )
    assert report["files"]["mined"] == 10  # the nine examples and partly.json
    # partly.json repeats the sourdough conversation: already filed, nothing new.
    assert report["drawers"]["added"] == 17


def test_deleting_an_export_keeps_exchanges_another_export_holds(
    cli_json: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "june.json").write_bytes((EXAMPLES / "chatgpt/conversations.json").read_bytes())
    first = mine(cli_json, folder)
    assert first["drawers"]["added"] == 3
    # A later export that repeats all of June's conversations.
    shutil.copy(folder / "june.json", folder / "july.json")
    unchanged = {"added": 0, "replaced": 0, "removed": 0, "unchanged": 3}
    assert mine(cli_json, folder)["drawers"] == unchanged
    assert {d.source_file for d in drawers()} == {str(folder / "june.json")}

    (folder / "june.json").unlink()
    report = mine(cli_json, folder)
    assert report["files"]["removed"] == 1
    assert report["drawers"] == unchanged
    rows = drawers()
    assert len(rows) == 3
    assert {d.source_file for d in rows} == {str(folder / "july.json")}  # re-pointed
    assert top("marathon weeks of training")["source_file"] == str(folder / "july.json")

    (folder / "july.json").unlink()
    gone = {"added": 0, "replaced": 0, "removed": 3, "unchanged": 0}
    assert mine(cli_json, folder)["drawers"] == gone
    assert drawers() == []


def test_dry_run_and_long_exchanges(cli_json: Any, tmp_path: Path) -> None:
    folder = tmp_path / "talks"
    folder.mkdir()
    paragraphs = [
        f"Step {i}: check the pump seal, then the pressure valve, then log the reading." * 4
        for i in range(12)
    ]
    (folder / "maintenance.txt").write_text(
        "> How do I service the irrigation pump?\n" + "\n\n".join(paragraphs) + "\n"
    )
    dry = mine(cli_json, folder, "--dry-run")
    assert dry["dry_run"] and dry["drawers"]["added"] > 3
    assert not open_palace().exists()  # a dry run creates nothing
    report = mine(cli_json, folder)
    assert report["drawers"]["added"] == dry["drawers"]["added"]
    rows = sorted(drawers(), key=lambda d: d.metadata["part"])
    assert [d.metadata["part"] for d in rows] == list(range(1, len(rows) + 1))
    assert {d.metadata["parts"] for d in rows} == {len(rows)}
    for d in rows:
        assert d.text.startswith("> How do I service the irrigation pump?\n\n")
        assert len(d.text) <= 1000
        assert d.text.rstrip().endswith("reading.")  # cut between sentences
