"""`mempalace hook` (Claude Code and Codex), `mcp-config --hooks`, `rules`, `split` and `audit`.

The hook is run as the clients run it: a real `mempalace hook run` process fed, on standard
input (or as its last argument, as Codex's notify program does), the JSON their documentation
gives: Claude Code's `{"session_id", "transcript_path", "cwd", "permission_mode",
"hook_event_name", ...}` with each event's own keys (`stop_hook_active`; `trigger` and
`custom_instructions`; `reason`), Codex hooks' same keys plus `turn_id` and `model`, and Codex
notify's `{"type": "agent-turn-complete", "thread-id", ...}`. A client reads anything on stdout
(and exit status 2) as an instruction, so every run must print nothing and exit 0.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mempalace_cli.cli import app
from mempalace_cli.cli.hooks import RULES_END, RULES_START
from mempalace_cli.common.config import resolve_settings
from mempalace_cli.service import Palace
from tests.conftest import NOTES, REPO
from tests.secret_samples import github_token
from tests.test_watch_support import cli_env, mempalace_command, wait_until

CLAUDE_SESSION = "0b7e4c1a-3f5d-4d8e-9a61-2c9f5e7d1b42"
CLAUDE_EXAMPLE = (
    REPO / "examples/convos/claude-code/-home-dana-src-billing" / f"{CLAUDE_SESSION}.jsonl"
)
CODEX_THREAD = "01970a6c-2f1e-7c33-9d2a-4b5c6d7e8f90"
CODEX_EXAMPLE = (
    REPO / "examples/convos/codex/2025/05/02" / f"rollout-2025-05-02T10-00-00-{CODEX_THREAD}.jsonl"
)


# -- what the clients send ----------------------------------------------------------------------
def claude_event(event: str, transcript: Path, **extra: Any) -> str:
    """Claude Code's hook input (its hooks reference: the common fields and the event's own)."""
    return json.dumps(
        {
            "session_id": CLAUDE_SESSION,
            "transcript_path": str(transcript),
            "cwd": "/home/dana/src/billing",
            "permission_mode": "default",
            "hook_event_name": event,
            **extra,
        }
    )


def codex_stop(transcript: Path) -> str:
    """Codex's Stop hook input (its stop.command.input schema)."""
    return json.dumps(
        {
            "session_id": CODEX_THREAD,
            "turn_id": "turn-7",
            "transcript_path": str(transcript),
            "cwd": "/home/dana/src/shop",
            "hook_event_name": "Stop",
            "model": "gpt-5-codex",
            "permission_mode": "default",
            "stop_hook_active": False,
            "last_assistant_message": "Pagination is in; the tests pass.",
        }
    )


def codex_notify() -> str:
    """What Codex's notify program gets as its last argument (no transcript path)."""
    return json.dumps(
        {
            "type": "agent-turn-complete",
            "thread-id": CODEX_THREAD,
            "turn-id": "turn-7",
            "cwd": "/home/dana/src/shop",
            "client": "codex-tui",
            "input-messages": ["Add cursor pagination to GET /products"],
            "last-assistant-message": "Pagination is in; the tests pass.",
        }
    )


# -- running the hook ---------------------------------------------------------------------------
def hook_command(palace: Path, *args: str) -> list[str]:
    return [*mempalace_command(), "--palace", str(palace), "hook", "run", *args]


def run_hook(
    home: Path, palace: Path, payload: str | None, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        hook_command(palace, *args),
        input=payload,
        stdin=None if payload is not None else subprocess.DEVNULL,
        env={**cli_env(home), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_quiet_success(proc: subprocess.CompletedProcess[str]) -> None:
    """What every client needs from a hook: status 0 and nothing on stdout."""
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "", proc.stdout


def hook_log(palace: Path) -> list[str]:
    path = palace / "hooks" / "hook.log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def drawers_of(home: Path, palace: Path, transcript: Path) -> dict[str, Any]:
    """The drawers filed from `transcript`, by id, read from the palace's catalogue."""
    catalog = Palace(resolve_settings(palace, home=home)).catalog
    try:
        ids = catalog.drawer_ids_for_source(str(transcript))
        return catalog.get(ids)
    finally:
        catalog.close()


def claude_line(n: int, parent: str, kind: str, text: str) -> str:
    """One more line of the Claude Code session file, as the client appends it."""
    message: dict[str, Any] = {"role": kind, "content": text}
    if kind == "assistant":
        message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    return json.dumps(
        {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dana/src/billing",
            "sessionId": CLAUDE_SESSION,
            "version": "1.0.31",
            "uuid": f"t{n}",
            "timestamp": f"2025-06-03T10:0{n}:00.000Z",
            "type": kind,
            "message": message,
        }
    )


def append(path: Path, *lines: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    folder = tmp_path / "claude-projects" / "-home-dana-src-billing"
    folder.mkdir(parents=True)
    return Path(shutil.copy(CLAUDE_EXAMPLE, folder / CLAUDE_EXAMPLE.name))


# -- the hook -----------------------------------------------------------------------------------
def test_stop_hook_from_mcp_config_files_the_session_once(
    home: Path, tmp_path: Path, session_file: Path
) -> None:
    palace = tmp_path / "palace"
    settings = tmp_path / "claude-settings.json"
    settings.write_text(json.dumps({"model": "opus"}), encoding="utf-8")
    setup = subprocess.run(
        [*mempalace_command(), "--palace", str(palace), "mcp-config", "--hooks", "claude-code"]
        + ["--write", "--file", str(settings), "--yes"],
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert setup.returncode == 0, setup.stderr
    written = json.loads(settings.read_text(encoding="utf-8"))
    assert written["model"] == "opus"  # the user's own settings stay
    assert set(written["hooks"]) == {"Stop", "PreCompact", "SessionEnd"}
    command = written["hooks"]["Stop"][0]["hooks"][0]["command"]

    # Run the configured command as Claude Code does: through a shell, the event on stdin.
    stop = claude_event("Stop", session_file, stop_hook_active=False)
    started = time.perf_counter()
    first = subprocess.run(
        command,
        shell=True,
        input=stop,
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    returned_after = time.perf_counter() - started
    assert_quiet_success(first)
    # Filing went to a background process: wait for the line it writes.
    wait_until(
        lambda: any(": filed " in line for line in hook_log(palace)), 180, "the background filing"
    )
    filed = drawers_of(home, palace, session_file)
    assert len(filed) == 2
    assert {d.wing for d in filed.values()} == {"billing"}  # the session's project folder
    assert {d.metadata["added_by"] for d in filed.values()} == {"claude-code"}
    assert any("invoice" in d.text or "retry" in d.text for d in filed.values())

    # The same Stop again (the client fires it after every turn): nothing new is filed, and
    # the check needs neither Chroma nor the model.
    probe = (
        "import sys\n"
        "from mempalace_cli.cli import main\n"
        f"sys.argv = ['mempalace', '--palace', {str(palace)!r}, 'hook', 'run']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print(code, 'chromadb' in sys.modules, 'onnxruntime' in sys.modules)\n"
    )
    second = subprocess.run(
        [sys.executable, "-c", probe],
        input=stop,
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.stdout.split() == ["0", "False", "False"], second.stdout + second.stderr
    log = hook_log(palace)
    assert sum(": filed " in line for line in log) == 1, log
    assert "unchanged since it was last filed" in log[-1]
    assert drawers_of(home, palace, session_file).keys() == filed.keys()
    print(f"hook run returned in {returned_after:.2f} s (background filing)")


def test_two_hooks_at_once_file_the_codex_session_once(home: Path, tmp_path: Path) -> None:
    palace = tmp_path / "palace"
    codex_home = tmp_path / "codex-home"
    rollout = codex_home / "sessions/2025/05/02" / CODEX_EXAMPLE.name
    rollout.parent.mkdir(parents=True)
    shutil.copy(CODEX_EXAMPLE, rollout)
    env = {**cli_env(home), "CODEX_HOME": str(codex_home)}
    # Codex launches matching hooks concurrently: its Stop hook (JSON on stdin) and the older
    # notify program (JSON as the last argument), for the same session, at the same moment.
    hook = subprocess.Popen(
        hook_command(palace, "--harness", "codex", "--wait"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    notify = subprocess.Popen(
        hook_command(palace, "--harness", "codex", "--wait", codex_notify()),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    out1, err1 = hook.communicate(codex_stop(rollout), timeout=300)
    out2, err2 = notify.communicate(timeout=300)
    for code, out, err in ((hook.returncode, out1, err1), (notify.returncode, out2, err2)):
        assert_quiet_success(subprocess.CompletedProcess([], code, out, err))
    log = hook_log(palace)
    assert sum(": filed 1 new drawer (1 in all)" in line for line in log) == 1, log
    assert sum("unchanged since it was last filed" in line for line in log) == 1, log
    filed = drawers_of(home, palace, rollout)
    assert len(filed) == 1
    (drawer,) = filed.values()
    assert drawer.wing == "shop" and drawer.metadata["source_format"] == "codex"
    assert "cursor pagination" in drawer.text


def test_precompact_files_a_session_and_a_longer_transcript_adds_only_its_new_part(
    home: Path, tmp_path: Path, session_file: Path
) -> None:
    palace = tmp_path / "palace"
    token = github_token()
    # Compaction starts while Claude is still answering: the last reply is half written.
    append(
        session_file,
        claude_line(1, "a10", "user", f"The CI token is {token}; why does the deploy job 403?"),
        claude_line(2, "t1", "assistant", "The job reads GITHUB_TOKEN, not your token."),
    )
    compact = claude_event("PreCompact", session_file, trigger="auto", custom_instructions="")
    assert_quiet_success(run_hook(home, palace, compact, "--harness", "claude-code", "--wait"))
    first = drawers_of(home, palace, session_file)
    assert len(first) == 3
    (partial,) = (d for d in first.values() if "GITHUB_TOKEN" in d.text)
    assert token not in partial.text and "[REDACTED" in partial.text  # the secrets rules

    # The reply is finished and one more exchange follows; then the session ends. Only what
    # changed is filed: the finished reply replaces the half one, the new exchange is added,
    # the two earlier exchanges are left as they were.
    append(
        session_file,
        claude_line(3, "t2", "assistant", "Give the job contents: write."),
        claude_line(4, "t3", "user", "Does the release job need it too?"),
        claude_line(5, "t4", "assistant", "No: it only reads the registry."),
    )
    end = claude_event("SessionEnd", session_file, reason="prompt_input_exit")
    assert_quiet_success(run_hook(home, palace, end, "--harness", "claude-code", "--wait"))
    second = drawers_of(home, palace, session_file)
    assert len(second) == 4
    kept = set(first) - {partial.id}
    assert kept < second.keys() and partial.id not in second
    assert all(second[i].filed_at == first[i].filed_at for i in kept)  # not filed again
    grown = next(d for d in second.values() if "GITHUB_TOKEN" in d.text)
    assert "contents: write" in grown.text and token not in grown.text
    assert any("release job" in d.text for d in second.values())
    assert "filed 2 new drawers (4 in all, 1 replaced)" in hook_log(palace)[-1]


def test_bad_input_exits_zero_logs_and_stays_quiet(
    home: Path, tmp_path: Path, session_file: Path
) -> None:
    palace = tmp_path / "palace"
    broken = run_hook(home, palace, '{"session_id": "abc", "transcript_path": ', "--hook", "stop")
    assert_quiet_success(broken)
    assert "not JSON" in broken.stderr and len(broken.stderr.splitlines()) == 1
    assert "not JSON" in hook_log(palace)[-1]

    # An option this version does not know (a newer client's) is no usage error (status 2
    # would keep Claude working), and an event that files nothing is only logged.
    sub = claude_event("SubagentStop", session_file, stop_hook_active=False)
    assert_quiet_success(run_hook(home, palace, sub, "--hook", "stop", "--new-option", "x"))
    assert "nothing to file for this event" in hook_log(palace)[-1]

    # The same rules in-process (cheaper than a process each).
    runner = CliRunner()
    args = ["--palace", str(palace), "hook", "run", "--harness", "claude-code"]
    gone = claude_event("Stop", tmp_path / "missing.jsonl", stop_hook_active=False)
    for given, said in ((gone, "no transcript to file yet"), ("", "input was empty")):
        result = runner.invoke(app, args, input=given)
        assert result.exit_code == 0 and result.stdout == "", result.output
        assert said in hook_log(palace)[-1]
    assert not (palace / "chroma.sqlite3").exists()  # nothing was filed


# -- mcp-config --hooks -------------------------------------------------------------------------
def test_mcp_config_hooks_shows_the_change_before_touching_a_settings_file(
    home: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    settings = tmp_path / "hooks.json"
    theirs = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}
    settings.write_text(json.dumps(theirs), encoding="utf-8")
    before = settings.read_bytes()
    args = ["--palace", str(tmp_path / "palace"), "mcp-config", "--hooks", "codex"]
    shown = runner.invoke(app, [*args, "--write", "--file", str(settings)])
    assert shown.exit_code == 0, shown.output
    assert "+" in shown.stdout and "hook run --harness codex" in shown.stdout
    assert "Nothing written" in shown.stdout and "--yes" in shown.stdout
    assert settings.read_bytes() == before

    done = runner.invoke(app, [*args, "--write", "--file", str(settings), "--yes", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["written"] is True
    merged = json.loads(settings.read_text(encoding="utf-8"))
    stop = [h["command"] for g in merged["hooks"]["Stop"] for h in g["hooks"]]
    assert stop[0] == "say done" and "hook run --harness codex" in stop[1]
    assert set(merged["hooks"]) == {"Stop", "PreCompact"}
    assert (tmp_path / "hooks.json.bak").read_bytes() == before

    again = runner.invoke(app, [*args, "--write", "--file", str(settings), "--yes"])
    assert again.exit_code == 0 and "nothing to change" in again.stdout
    assert json.loads(settings.read_text(encoding="utf-8")) == merged


# -- rules --------------------------------------------------------------------------------------
def test_rules_write_puts_the_protocol_in_once_and_replaces_it(tmp_path: Path) -> None:
    from mempalace_cli.memory.protocol import PROTOCOL

    runner = CliRunner()
    printed = runner.invoke(app, ["rules"])
    assert printed.exit_code == 0
    assert printed.stdout.startswith(RULES_START) and printed.stdout.rstrip().endswith(RULES_END)
    assert PROTOCOL.strip() in printed.stdout

    agents = tmp_path / "AGENTS.md"
    agents.write_text("# Shop\n\nRun `make test` before you commit.\n", encoding="utf-8")
    first = runner.invoke(app, ["rules", "--write", str(agents)])
    assert first.exit_code == 0 and "Added" in first.stdout
    once = agents.read_text(encoding="utf-8")
    assert once.startswith("# Shop\n\nRun `make test` before you commit.\n\n" + RULES_START)
    assert once.count(RULES_START) == 1 and PROTOCOL.strip() in once

    again = runner.invoke(app, ["rules", "--write", str(agents), "--json"])
    assert json.loads(again.stdout)["action"] == "unchanged"
    assert agents.read_text(encoding="utf-8") == once

    # The user writes after the block; a run with another block replaces it in place.
    agents.write_text(once + "\nDeploys happen on Tuesdays.\n", encoding="utf-8")
    replaced = runner.invoke(app, ["rules", "--write", str(agents), "--agent", "codex"])
    assert replaced.exit_code == 0 and "Replaced" in replaced.stdout
    text = agents.read_text(encoding="utf-8")
    assert text.count(RULES_START) == 1 and text.count(RULES_END) == 1
    assert "Your agent name in the palace (diary, added_by): codex." in text
    assert text.startswith("# Shop\n") and text.endswith("Deploys happen on Tuesdays.\n")

    broken = text.replace(RULES_END, "")
    agents.write_text(broken, encoding="utf-8")
    refused = runner.invoke(app, ["rules", "--write", str(agents)])
    assert refused.exit_code != 0 and "markers are broken" in refused.stderr
    assert agents.read_text(encoding="utf-8") == broken

    created = runner.invoke(app, ["rules", "--write", str(tmp_path / "new" / "GEMINI.md")])
    assert created.exit_code == 0 and "Created" in created.stdout


# -- split --------------------------------------------------------------------------------------
TERMINAL_DUMP = """\
 ✻ Welcome to Claude Code!   Claude Code v1.0.31
   cwd: /home/dana/src/billing
> Why does test_charge_retries_on_timeout fail one run in five?
⏺ The retry sleeps on the real clock; freeze it in the test.
 ✻ Welcome to Claude Code!   Claude Code v1.0.40
   cwd: /home/dana/src/billing  (2025-06-04)
> Write the release notes for 2.3
⏺ Here they are: faster invoices, fixed retries.
 ✻ Claude Code v1.0.40
  ⎿  Ctrl+E to show 12 previous messages
> Shorter, please.
⏺ Faster invoices; fixed retries.
"""


def another_session(text: str, session_id: str) -> str:
    """The same session filed again under another id (its own message uuids too), as a second
    session file run together with the first."""
    lines = []
    for line in text.splitlines():
        rec = json.loads(line)
        for key in ("uuid", "parentUuid", "leafUuid"):
            if isinstance(rec.get(key), str):
                rec[key] = "b-" + rec[key]
        if "sessionId" in rec:
            rec["sessionId"] = session_id
        lines.append(json.dumps(rec))
    return "\n".join(lines) + "\n"


def test_split_writes_one_file_per_session_and_never_changes_the_input(tmp_path: Path) -> None:
    runner = CliRunner()
    exports = tmp_path / "exports"
    exports.mkdir()
    second_id = "11111111-2222-3333-4444-555555555555"
    claude = CLAUDE_EXAMPLE.read_text(encoding="utf-8")
    both = claude + another_session(claude, second_id)
    (exports / "all.jsonl").write_text(both, encoding="utf-8")
    (exports / "terminal.txt").write_text(TERMINAL_DUMP, encoding="utf-8")
    shutil.copy(CLAUDE_EXAMPLE, exports / "single.jsonl")
    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in exports.iterdir()}

    plan = runner.invoke(app, ["split", str(exports), "--json"])
    assert plan.exit_code == 0, plan.output
    result = json.loads(plan.stdout)
    assert result["dry_run"] is True and result["files_written"] == 0
    by_file = {Path(f["file"]).name: f for f in result["files"]}
    assert by_file["all.jsonl"]["sessions"] == 2
    assert [p["session_id"] for p in by_file["all.jsonl"]["parts"]] == [CLAUDE_SESSION, second_id]
    assert by_file["terminal.txt"]["sessions"] == 2  # the restored view is no new session
    assert by_file["single.jsonl"]["action"] == "skip"
    assert sorted(p.name for p in exports.iterdir()) == sorted(digests)

    out = tmp_path / "sessions"
    done = runner.invoke(app, ["split", str(exports), "--output-dir", str(out)])
    assert done.exit_code == 0, done.output
    assert "Wrote 4 files" in done.stdout and f"mempalace mine {out} --mode convos" in done.stdout
    parts = sorted(out.glob("all.*.jsonl"))
    assert len(parts) == 2
    assert "".join(p.read_text(encoding="utf-8") for p in parts) == both
    for part in parts:
        ids = {json.loads(x).get("sessionId") for x in part.read_text().splitlines()}
        assert len(ids - {None}) == 1
    texts = sorted(out.glob("terminal.*.txt"))
    assert "Shorter, please." in texts[1].read_text() and "release notes" in texts[1].read_text()
    assert "Why does test_charge" in texts[0].read_text()
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in exports.iterdir()} == (
        digests
    )

    rerun = runner.invoke(app, ["split", str(exports), "--output-dir", str(out), "--json"])
    assert rerun.exit_code == 0
    skipped = [f for f in json.loads(rerun.stdout)["files"] if f["action"] == "skip"]
    assert any("nothing overwritten" in f["reason"] for f in skipped)


# -- audit --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def untidy_palace(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> dict[str, Path]:
    """examples/notes mined once for this module, with the flaws an audit should find: a copy
    of a decision filed twice, a folder of one file, a wing of loose files, notes deleted
    after mining, and a diary kept apart from any project."""
    base = tmp_path_factory.mktemp("audit")
    notes, scratch, palace = base / "notes", base / "scratch", base / "palace"
    # Not the meetings: fewer drawers to embed, the same kinds of flaws.
    shutil.copytree(NOTES, notes, ignore=shutil.ignore_patterns("mempalace.toml", "meetings"))
    shutil.copy(notes / "decisions/0006-auth0-to-clerk.md", notes / "project/auth-copy.md")
    (notes / "archive").mkdir()
    (notes / "archive/2019-retro.md").write_text(
        "Retro 2019: we shipped late because nobody owned the release checklist.\n"
    )
    scratch.mkdir()
    for n, topic in enumerate(
        "invoices refunds taxes coupons carts sessions webhooks exports imports "
        "search logs alerts".split()
    ):
        (scratch / f"todo-{n}.md").write_text(f"Look into {topic} before the {n}th of May.\n")
    runner = CliRunner()
    for folder in (notes, scratch):
        mined = runner.invoke(app, ["--palace", str(palace), "mine", str(folder), "--json"])
        assert mined.exit_code == 0, mined.output
    shutil.rmtree(notes / "people")  # notes deleted after they were mined
    wrote = runner.invoke(
        app, ["--palace", str(palace), "diary", "write", "claude", "Reviewed the audit."]
    )
    assert wrote.exit_code == 0, wrote.output
    return {"palace": palace, "notes": notes, "scratch": scratch}


def test_audit_scores_the_palace_and_its_fixes_raise_the_score(
    untidy_palace: dict[str, Path],
) -> None:
    runner = CliRunner()
    palace, notes, scratch = (untidy_palace[k] for k in ("palace", "notes", "scratch"))
    before = runner.invoke(app, ["--palace", str(palace), "audit", "--json"])
    assert before.exit_code == 0, before.output
    report = json.loads(before.stdout)
    assert 0 < report["score"] < 100
    checks = {c["check"]: c for c in report["checks"]}
    assert {"rooms", "sources", "duplicates", "naming", "diary"} <= set(checks)
    assert checks["naming"]["score"] == 100
    fixes = {(f["check"], f["fix"]) for f in report["findings"]}
    aimed = f"mempalace --palace {palace}"  # the advice acts on this palace, not the default
    assert ("sources", f"{aimed} mine {notes}") in fixes
    assert ("rooms", f"{aimed} init {scratch} && {aimed} mine {scratch}") in fixes
    single = next(f for f in report["findings"] if "a single drawer" in f["text"])
    assert "notes / archive" in single["examples"]
    copies = next(f for f in report["findings"] if "same words" in f["text"])
    assert copies["fix"].startswith(f"{aimed} forget --drawer ") and copies["count"] >= 1
    diary = next(f for f in report["findings"] if f["check"] == "diary")
    assert diary["fix"] == f"{aimed} diary read claude"

    text = runner.invoke(app, ["--palace", str(palace), "audit"])
    assert text.exit_code == 0
    assert f"Fix: {aimed} mine" in text.stdout and "/100" in text.stdout

    # The fix the audit names for the deleted notes works: the next audit no longer asks for it.
    fixed = runner.invoke(app, ["--palace", str(palace), "mine", str(notes), "--json"])
    assert fixed.exit_code == 0, fixed.output
    after = json.loads(runner.invoke(app, ["--palace", str(palace), "audit", "--json"]).stdout)
    assert not [f for f in after["findings"] if f["check"] == "sources"]
    assert after["score"] > report["score"]
