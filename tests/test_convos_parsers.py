"""Chat-export parsing (no palace, no model): each example fixture parses to exactly the
expected exchanges; detection by content; malformed input is refused with line or key;
long exchanges split at boundaries; topic rooms."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mempalace_cli.miners.convos import (
    SLACK_INDEX,
    Exchange,
    ParseError,
    Problem,
    detect,
    jsonstream,
    plan_drawers,
    read_exchanges,
)
from mempalace_cli.miners.convos.split import DRAWER_CHARS, split_exchange, split_text
from mempalace_cli.miners.convos.topics import classify

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "convos"
CLAUDE_CODE = (
    EXAMPLES / "claude-code/-home-dana-src-billing/0b7e4c1a-3f5d-4d8e-9a61-2c9f5e7d1b42.jsonl"
)
CODEX_NEW = (
    EXAMPLES
    / "codex/2025/05/02/rollout-2025-05-02T10-00-00-01970a6c-2f1e-7c33-9d2a-4b5c6d7e8f90.jsonl"
)
CODEX_OLD = EXAMPLES / "codex/2025/03/14/rollout-2025-03-14T16-20-00-5f2b8a90.jsonl"


def exchanges(path: Path) -> list[Exchange]:
    found = detect(path)
    assert found.format, found.reason
    items = list(read_exchanges(path, found.format))
    assert not [i for i in items if isinstance(i, Problem)]
    return [i for i in items if isinstance(i, Exchange)]


def summary(exs: list[Exchange]) -> list[tuple]:
    return [(e.user_speaker, e.user, e.reply_speaker, e.reply, e.timestamp) for e in exs]


def test_claude_code_session() -> None:
    exs = exchanges(CLAUDE_CODE)
    assert {e.format for e in exs} == {"claude_code"}
    assert {e.conversation_id for e in exs} == {"0b7e4c1a-3f5d-4d8e-9a61-2c9f5e7d1b42"}
    assert {e.title for e in exs} == {"Flaky retry test in the invoice charger"}
    assert summary(exs) == [
        (
            "user",
            "The test test_charge_retries_on_timeout fails about one run in five on CI. "
            "Can you find out why?",
            "assistant",
            "Let me read the test and the retry helper.\n\n"
            "[tool: Read /home/dana/src/billing/tests/test_charger.py]\n\n"
            "Found it. The test asserts the whole retry loop finishes within 0.5 s, but the "
            "backoff sleeps 0.2 s and then 0.4 s with random jitter of up to 30%. On a slow CI "
            "runner the two sleeps alone can exceed the budget.\n\nThe fix is to inject the "
            "clock: pass a fake `sleep` into `charge_with_retry` so the test checks the backoff "
            "schedule without real waiting.",
            "2025-06-03T09:14:05+00:00",
        ),
        (
            "user",
            "/model opus\n\nYes, inject the sleep function and make the jitter seeded.",
            "assistant",
            "[tool: Bash pytest tests/test_charger.py -q]\n\nDone: `charge_with_retry` now takes "
            "`sleep` and `rng` arguments, the test passes a recording fake sleep and "
            "`random.Random(7)`, and all 4 charger tests pass in 0.08 s.",
            "2025-06-03T09:16:40+00:00",
        ),
    ]
    text = " ".join(e.user + e.reply for e in exs)
    # Injected context, tool output, the caveat and private thinking are gone.
    for noise in (
        "system-reminder",
        "pytest.\n",
        "4 passed",
        "Caveat",
        "timing issue",
        "Set model to opus",
        "<command-",
    ):
        assert noise not in text


def test_claude_ai_export() -> None:
    exs = exchanges(EXAMPLES / "claude-ai/conversations.json")
    assert [(e.conversation_id[-4:], e.title, e.index) for e in exs] == [
        ("1111", "Sourdough starter smells like nail polish", 0),
        ("1111", "Sourdough starter smells like nail polish", 1),
        # No name: the first line of the first question stands in.
        ("2222", "For the book club app, should we store data in SQLite or Postgres?", 0),
    ]
    assert summary(exs)[1] == (
        "human",
        "Should I use rye flour for the feedings?\n\n[attachment: starter-photo-notes.txt]",
        "assistant",
        "Rye helps: it carries more wild yeast and enzymes than white flour. Swapping a quarter "
        "of the flour for rye usually revives a sluggish starter within a day.",
        "2025-02-11T18:08:02+00:00",
    )
    assert exs[0].reply.startswith("Not dead, just hungry.")  # from content blocks
    assert exs[2].reply.startswith("Go with SQLite.")


def test_chatgpt_export_follows_the_active_branch() -> None:
    exs = exchanges(EXAMPLES / "chatgpt/conversations.json")
    assert summary(exs) == [
        (
            "user",
            "I want to run my first marathon in October. How many weeks of training do I need?",
            "assistant",
            "Plan on 18 weeks. Start from your current 30 km a week, add no more than 10% per "
            "week, and put one long run on the weekend that grows to 32 km three weeks before "
            "race day.",
            "2024-05-01T08:01:00+00:00",
        ),
        (
            "user",
            "What pace should the long runs be, and should I taper?",
            "assistant",
            "Run long runs 60 to 90 seconds per kilometre slower than goal pace. Yes, taper: cut "
            "weekly distance by about 40% over the last three weeks while keeping a little speed "
            "work.\n\n[tool: browser]",
            "2024-05-01T08:26:40+00:00",
        ),
        (
            "user",
            "Write a haiku about autumn rain on a tin roof.",
            "assistant",
            "Tin roof drums softly\nmaple leaves ride the gutter\nthe kettle answers",
            "2024-05-29T16:26:40+00:00",
        ),
    ]
    assert [e.title for e in exs] == ["Marathon training plan"] * 2 + ["Haiku about autumn rain"]
    text = " ".join(e.user + e.reply for e in exs)
    # The abandoned branch, hidden custom instructions and tool output are left out.
    for noise in ("About 60 to 90 seconds", "I run 30 km a week", "search results"):
        assert noise not in text


def test_codex_current_layout() -> None:
    exs = exchanges(CODEX_NEW)
    assert summary(exs) == [
        (
            "user",
            "Add cursor pagination to GET /products; offset pagination is timing out past "
            "page 400.",
            "assistant",
            "[tool: shell rg -n 'def list_products' app]\n\nI replaced OFFSET with a keyset "
            "cursor on (created_at, id): the response now carries next_cursor, and the query "
            "uses the composite index, so page 400 costs the same as page 1.",
            "2025-05-02T10:00:05+00:00",
        )
    ]
    assert exs[0].conversation_id == "01970a6c-2f1e-7c33-9d2a-4b5c6d7e8f90"
    assert "environment_context" not in exs[0].user


def test_codex_older_layout() -> None:
    exs = exchanges(CODEX_OLD)
    assert summary(exs) == [
        (
            "user",
            "Rename deploy.sh to ship.sh and update every reference in the Makefile.",
            "assistant",
            "[tool: shell git mv deploy.sh ship.sh]\n\nRenamed with git mv so history follows "
            "the file, and updated the two Makefile targets (release and hotfix) that called "
            "deploy.sh.",
            None,
        )
    ]
    assert exs[0].conversation_id == "5f2b8a90-1c3d-4e5f-8a9b-0c1d2e3f4a5b"


def test_slack_channel_day() -> None:
    exs = exchanges(EXAMPLES / "slack/eng-platform/2024-03-05.json")
    assert summary(exs) == [
        (
            "Alice Moreau",
            "Alice Moreau: Consumer lag on the orders topic is at 2 million messages again.\n"
            "Anyone touched the consumer group config?",
            "Bob Okafor",
            # Mentions resolved through users.json, HTML entities decoded.
            "Bob Okafor: @Alice Moreau yes, I lowered max.poll.records to 50 yesterday & that "
            "throttled it. Reverting to 500 now.",
            "2024-03-05T09:10:00+00:00",
        ),
        (
            "Alice Moreau",
            "Alice Moreau: Thanks! Lag is draining, down to 300k.",
            "",
            "",
            "2024-03-05T09:30:00+00:00",
        ),
    ]
    assert {(e.conversation_id, e.title) for e in exs} == {("slack:#eng-platform", "#eng-platform")}
    assert detect(EXAMPLES / "slack/users.json").format == SLACK_INDEX
    assert detect(EXAMPLES / "slack/channels.json").format == SLACK_INDEX


def test_plain_text_quote_convention() -> None:
    exs = exchanges(EXAMPLES / "transcripts/greenhouse-interview.txt")
    assert summary(exs) == [
        (
            "user",
            "Why do your tomatoes split right before they ripen?",
            "assistant",
            "Irregular watering. After a dry spell the plant drinks a lot at once, the fruit "
            "swells faster\nthan the skin can stretch, and it cracks. I water a little every "
            "morning now, and it stopped.",
            None,
        ),
        (
            "user",
            "Which variety holds up best in the greenhouse?",
            "assistant",
            "'Sungold' for cherries and 'Shirley' for the big ones: both shrug off the heat in "
            "July.",
            None,
        ),
    ]
    assert exs[0].title == "Notes from a call with my aunt about her greenhouse."


def test_plain_text_speaker_prefixes() -> None:
    exs = exchanges(EXAMPLES / "transcripts/pairing-session.md")
    assert [(e.user_speaker, e.reply_speaker) for e in exs] == [("User", "Assistant")] * 2
    assert exs[0].title == "Pairing on the CSV importer"
    assert exs[0].user.startswith("The importer chokes on files exported from Excel")
    assert exs[0].reply.startswith("That is the UTF-8 byte order mark.")
    assert exs[1].user == "Great, that fixed it. Should I also handle semicolon separators?"
    assert exs[1].reply.endswith("fall back to commas when it can't decide.")


def test_human_ai_prefixes_and_preamble(tmp_path: Path) -> None:
    f = tmp_path / "chat.log"
    f.write_text(
        "Exported chat, 2024\nfrom the old laptop, kept for reference.\n\n"
        "Human: hello there\nsecond line\nAI: Hi! How can I help?\n"
    )
    exs = exchanges(f)
    assert exs[0].title == "Exported chat, 2024"
    assert (exs[0].user, exs[0].reply, exs[0].reply_speaker) == (
        "",
        "from the old laptop, kept for reference.",
        "note",
    )
    assert (exs[1].user, exs[1].reply) == ("hello there\nsecond line", "Hi! How can I help?")
    assert (exs[1].user_speaker, exs[1].reply_speaker) == ("Human", "AI")


# -- detection and malformed input ----------------------------------------------------------


def test_detection_is_by_content_not_name(tmp_path: Path) -> None:
    disguised = tmp_path / "notes.txt"
    disguised.write_bytes((EXAMPLES / "chatgpt/conversations.json").read_bytes())
    assert detect(disguised).format == "chatgpt"
    code = tmp_path / "session.log"
    code.write_bytes(CLAUDE_CODE.read_bytes())
    assert detect(code).format == "claude_code"
    pkg = tmp_path / "package.json"
    pkg.write_text('{"name": "x", "version": "1.0.0"}')
    assert detect(pkg).format is None and "not a chat export" in detect(pkg).reason
    arr = tmp_path / "conversations.json"
    arr.write_text('[{"id": 1, "kind": "other"}]')
    reason = detect(arr).reason
    assert "not a chat export" in reason and "id, kind" in reason
    readme = tmp_path / "README.md"
    readme.write_text("# Exports\n\nThis folder holds my exports.\n")
    assert detect(readme).format is None
    assert detect(tmp_path / "x.png").reason.startswith("binary file type")


def test_malformed_json_array_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "conversations.json"
    good = json.loads((EXAMPLES / "chatgpt/conversations.json").read_text())
    text = json.dumps(good * 3, indent=1)
    cut = text[: len(text) * 2 // 3]  # a truncated download
    f.write_text(cut)
    assert detect(f).format == "chatgpt"
    with pytest.raises(ParseError) as err:
        list(read_exchanges(f, "chatgpt"))
    assert re.match(r"line \d+ column \d+", err.value.where)
    line = int(err.value.where.split()[1])
    assert line >= cut.count("\n") - 1


def test_missing_key_is_reported_and_the_rest_kept(tmp_path: Path) -> None:
    data = json.loads((EXAMPLES / "claude-ai/conversations.json").read_text())
    del data[0]["chat_messages"]
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps(data))
    items = list(read_exchanges(f, "claude_ai"))
    problems = [i for i in items if isinstance(i, Problem)]
    assert [(p.where, p.problem) for p in problems] == [
        ("conversation [0] key 'chat_messages'", "missing or not a list")
    ]
    assert [i.reply[:13] for i in items if isinstance(i, Exchange)] == ["Go with SQLite"[:13]]


def test_jsonl_broken_middle_line_vs_partial_last_line(tmp_path: Path) -> None:
    lines = CLAUDE_CODE.read_text().splitlines(keepends=True)
    partial = tmp_path / "partial.jsonl"
    partial.write_text("".join(lines) + lines[2][:40])  # a session still being written
    assert len(exchanges(partial)) == 2
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(lines[:4]) + "{not json}\n" + "".join(lines[4:]))
    with pytest.raises(ParseError) as err:
        list(read_exchanges(broken, "claude_code"))
    assert err.value.where.startswith("line 5 ")


def test_streaming_reader_across_buffer_boundaries(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(jsonstream, "READ_CHARS", 7)  # force many partial reads
    items = [{"n": i, "text": "é" * i, "nested": [1.5, {"k": "]"}]} for i in range(40)]
    f = tmp_path / "a.json"
    f.write_text("\n" + json.dumps(items, indent=2) + "\n")
    assert list(jsonstream.iter_json_array(f)) == items
    f.write_text("[1, 22, 333]")
    assert list(jsonstream.iter_json_array(f)) == [1, 22, 333]
    f.write_text('[{"a": 1},\n {"b": 2} {"c": 3}]')
    with pytest.raises(ParseError) as err:
        list(jsonstream.iter_json_array(f))
    assert err.value.where == "line 2 column 11"


# -- splitting, identity and rooms ----------------------------------------------------------


def test_long_exchange_splits_at_boundaries_keeping_the_question() -> None:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    sentences = [" ".join(words[i % 8 :] + words[: i % 8]).capitalize() + "." for i in range(60)]
    paragraphs = ["\n".join(sentences[i : i + 6]) for i in range(0, 60, 6)]
    reply = "\n\n".join(paragraphs) + "\n\n" + " ".join(sentences * 3)  # one huge paragraph
    question = "How do the Greek letters line up?"
    parts = split_exchange(question, reply)
    assert len(parts) > 3
    body = []
    for part in parts:
        assert part.startswith(f"> {question}\n\n")
        assert len(part) <= DRAWER_CHARS
        piece = part[len(question) + 4 :]
        body.append(piece)
    # Nothing lost or reordered, and every cut fell between words.
    assert " ".join(body).split() == reply.split()


def test_long_question_is_shortened_as_context() -> None:
    question = "Please review this log. " + "The worker restarted again after a timeout. " * 60
    parts = split_exchange(question, "It is the health check: raise its timeout to 30 s.")
    assert parts[-1].endswith("raise its timeout to 30 s.")
    context = parts[-1].split("\n\n")[0]
    assert context.startswith("> Please review this log.") and context.endswith("…")
    assert len(context) < 300
    assert all(len(p) <= DRAWER_CHARS for p in parts)


def test_a_giant_word_is_the_only_thing_cut() -> None:
    blob = "x" * 2500
    parts = split_text(f"see {blob} done", 1000)
    assert parts[0] == "see" and "".join(parts[1:-1]) == blob and parts[-1] == "done"


def test_same_words_same_keys_repeats_distinct() -> None:
    def ex(conv: str, user: str, reply: str, index: int) -> Exchange:
        return Exchange("plain_text", conv, "t", index, user, reply, "user", "assistant")

    a = list(plan_drawers([ex("c1", "continue", "Done.", 0), ex("c1", "continue", "Done.", 1)]))
    b = list(plan_drawers([ex("c2", "continue", "Done.", 0)]))
    assert a[0].key != a[1].key  # a repeat within one conversation is its own drawer
    assert a[0].key == b[0].key  # the same words elsewhere map to the same drawer


@pytest.mark.parametrize(
    ("text", "room"),
    [
        ("We decided to go with SQLite; the trade-off is a single writer.", "decisions"),
        ("The build fails with a traceback: TypeError in the parser. Any fix?", "problems"),
        (
            "How should the module layers and the plugin interface be structured? "
            "Draw the architecture.",
            "architecture",
        ),
        ("Let's plan the roadmap: the first milestone is the beta launch.", "planning"),
        ("Write a Python function that parses the JSON config.", "technical"),
        ("Write a haiku about autumn rain on a tin roof.", "general"),
    ],
)
def test_topic_rooms(text: str, room: str) -> None:
    assert classify(text) == room


def test_a_first_line_longer_than_the_sniffed_head(tmp_path: Path) -> None:
    lines = CLAUDE_CODE.read_text().splitlines()
    first = json.loads(lines[2])
    first["message"]["content"] = "Please read this log.\n" + "GET /health 200\n" * 20000
    f = tmp_path / "session.jsonl"
    f.write_text("\n".join([json.dumps(first), *lines[3:]]) + "\n")
    assert f.stat().st_size > 200_000
    assert detect(f).format == "claude_code"
    assert exchanges(f)[0].user.startswith("Please read this log.")
