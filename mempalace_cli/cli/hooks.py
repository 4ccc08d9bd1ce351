"""`mempalace hook`, `rules`, `split` and `audit`: what agent clients and their users run.

`hook run` is the command Claude Code and Codex call (set up by `mempalace mcp-config --hooks
claude-code|codex`). It must never disturb the client: it reads the event from standard input
(or, from Codex's `notify`, as its last argument), prints nothing on stdout, and exits 0 in
every case (a Claude Code Stop or PreCompact hook that exits 2 would keep Claude working or
cancel the compaction; Codex reads non-empty stdout as JSON). What happened goes to the hook
log (`mempalace hook log` prints it), problems to stderr as well. It is quick: an unchanged
transcript is seen from the catalogue alone; a changed one is filed by a background
`mempalace hook file` process, so the client never waits for the model (`--wait` files in the
foreground).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from mempalace_cli.cli import mcp_config  # each other's: import the module
from mempalace_cli.cli.env import CONTEXT_SETTINGS, Env, get_env, markup, print_json
from mempalace_cli.cli.options import argument, command_group, flag, json_option, option
from mempalace_cli.cli.secret_lines import say_redacted
from mempalace_cli.cli.words import cli_words
from mempalace_cli.common import config, errors
from mempalace_cli.common.config import resolve_settings
from mempalace_cli.memory.protocol import PROTOCOL
from mempalace_cli.service.sessions import MAX_INPUT_CHARS, codex_home, parse_hook_input

if TYPE_CHECKING:
    from mempalace_cli.service.sessions import HookEvent, Sessions

_COMMAND = re.compile(r"\bmempalace (?=[a-z])")


def for_palace(env: Env, text: str) -> str:
    """`text` with every `mempalace ...` command it suggests aimed at the palace this run used
    (its --palace or Chroma options; never a token), so following the advice does not act on
    the default palace."""
    flags: list[str] = []
    for name, value in (
        ("--palace", env.palace_option),
        ("--chroma-url", env.chroma_url),
        ("--chroma-database", env.chroma_database),
    ):
        if value:
            flags += [name, str(value)]
    if not flags:
        return text
    return _COMMAND.sub(lambda _: "mempalace " + shlex.join(flags) + " ", text)


hook_app = command_group(
    help="Claude Code and Codex hooks: file each session's transcript into the palace when it "
    "stops, ends or is about to be compacted, once however often they run.\n\n"
    "Set them up with: mempalace mcp-config --hooks claude-code --write (or --hooks codex)"
    "\n\nExample: mempalace hook log"
)

# `hook run` takes options it does not know (a newer client's, MemPalace's) without failing:
# a usage error would exit 2, which Claude Code reads as "keep going" on Stop.
_LENIENT = {**CONTEXT_SETTINGS, "ignore_unknown_options": True, "allow_extra_args": True}


# -- hook run ---------------------------------------------------------------------------------
@hook_app.command("run", context_settings=_LENIENT)
def hook_run(
    ctx: typer.Context,
    payload: str = argument(
        "JSON",
        "The event as an argument (Codex's notify program passes it so); default: read "
        "it from standard input.",
        default=None,
    ),
    hook: str = option(
        "--hook",
        "EVENT",
        "stop, precompact, session-end or session-start, for a client whose JSON does "
        "not name its event (the JSON's own hook_event_name wins).",
    ),
    harness: str = option(
        "--harness",
        "claude-code|codex",
        "Which client runs the hook (default: told from the JSON).",
    ),
    wing: str = option(
        "--wing",
        "WING",
        "File sessions in this wing (default: the wing a session was filed in before, "
        "else its project folder's name).",
    ),
    wait: bool = flag(
        "--wait",
        "File the transcript in this process and wait (default: a background process "
        "files it, so the client never waits).",
    ),
) -> None:
    """Run by Claude Code or Codex on Stop, SessionEnd and PreCompact: file the session's
    transcript into the palace as a conversation, once.

    Prints nothing and always exits 0, so the client carries on whatever happens; what
    happened is in the hook log (mempalace hook log). Same command line as MemPalace's.

    Example: mempalace hook run --harness claude-code < stop-event.json
    """
    env = get_env(ctx)
    sessions: Sessions | None = None
    started = time.perf_counter()
    tag = f"{harness or 'client'} {hook or 'event'}"
    try:
        raw, extras = _hook_input(payload, list(ctx.args))
        sessions = env.palace().sessions

        event = parse_hook_input(raw, harness, hook)
        tag = _tag(event)
        if extras:
            _note(sessions, f"{tag}: ignored unknown arguments {' '.join(extras)!r}")
        if not event.files:
            _note(sessions, f"{tag}: nothing to file for this event")
            return
        transcript = sessions.transcript_of(event)
        if transcript is None:
            where = event.transcript or f"no transcript for Codex session {event.session_id!r}"
            _note(sessions, f"{tag}: no transcript to file yet ({where})")
            return
        if sessions.state(transcript) == "unchanged":
            ms = round(1000 * (time.perf_counter() - started))
            _note(sessions, f"{tag}: unchanged since it was last filed ({transcript}; {ms} ms)")
            return
        if wait:
            result = sessions.file_transcript(
                transcript, event.session_id, wing, agent=event.harness, cwd=event.cwd
            )
            _note(sessions, f"{tag}: {_outcome(result)}")
            return
        pid = _file_in_background(env, sessions, transcript, event, wing)
        ms = round(1000 * (time.perf_counter() - started))
        _note(sessions, f"{tag}: filing {transcript} in the background (process {pid}; {ms} ms)")
    except Exception as exc:  # noqa: BLE001 - the client must never see a failure
        _problem(sessions, tag, exc)


def _hook_input(payload: str | None, extras: list[str]) -> tuple[str, list[str]]:
    """The event's JSON (the argument that holds it, else standard input) and the other
    arguments, which are ignored."""

    given = [a for a in [payload, *extras] if a is not None]
    json_args = [a for a in given if a.lstrip().startswith("{")]
    others = [a for a in given if not a.lstrip().startswith("{")]
    if json_args:
        return json_args[-1], others
    stdin = sys.stdin
    if stdin is None or stdin.closed or stdin.isatty():
        return "", others
    data = stdin.buffer.read(MAX_INPUT_CHARS + 1) if hasattr(stdin, "buffer") else b""
    if not data and not hasattr(stdin, "buffer"):
        return stdin.read(MAX_INPUT_CHARS + 1), others
    return data.decode("utf-8", errors="replace"), others


def _tag(event: HookEvent) -> str:
    detail = f" ({event.detail})" if event.detail else ""
    session = f" session {event.session_id}" if event.session_id else ""
    return f"{event.harness} {event.event}{detail}{session}"


def _note(sessions: Sessions, message: str) -> None:
    """One line in the hook log; on stderr instead when the log can't be written."""
    try:
        sessions.log(message)
    except OSError as exc:
        sys.stderr.write(f"mempalace hook: {message} (the hook log could not be written: {exc})\n")


def _problem(sessions: Sessions | None, tag: str, exc: BaseException) -> None:
    """A failure, said in the log and in one line on stderr; the hook still exits 0."""
    if isinstance(exc, errors.MemPalaceError):
        failure = errors.failure_of(exc)
        message = cli_words(failure.message) or ""
        if failure.hint:
            message += f" Next: {cli_words(failure.hint)}"
    else:
        message = f"{type(exc).__name__}: {exc}"
    line = f"{tag}: not filed: {message}"
    where = ""
    if sessions is not None:
        try:
            where = f" (log: {sessions.log(line)})"
        except OSError:
            where = ""
    sys.stderr.write(f"mempalace hook: {line}{where}\n")


def _outcome(result: dict[str, Any]) -> str:
    where = result.get("transcript", "")
    if result["status"] == "unchanged":
        return f"unchanged since it was last filed ({where})"
    if result["status"] == "skipped":
        return f"not filed: {result.get('reason')} ({where})"
    d = result["drawers"]
    if not d["added"] and not d["removed"]:
        return f"no new exchange ({d['total']} drawers in all, wing {result['wing']}): {where}"
    text = f"filed {d['added']} new drawer{'s' if d['added'] != 1 else ''} "
    text += f"({d['total']} in all"
    if d["removed"]:
        text += f", {d['removed']} replaced"
    text += f") into wing {result['wing']} from {where} in {result['elapsed_seconds']} s"
    if result.get("secrets_redacted"):
        text += f"; {result['secrets_redacted']} secret(s) redacted"
    return text


def _file_in_background(
    env: Env, sessions: Sessions, transcript: Path, event: HookEvent, wing: str | None
) -> int:
    """Start `mempalace hook file` for this transcript in a process of its own (its own
    session, so the client's exit does not end it), and return its process id."""

    command = [*mcp_config.server_command(), "hook", "file", str(transcript), "--from-hook"]
    command += ["--agent", event.harness]
    if event.session_id:
        command += ["--session-id", event.session_id]
    if wing:
        command += ["--wing", wing]
    if event.cwd:
        command += ["--cwd", event.cwd]
    settings = env.palace().settings
    child = dict(os.environ)
    child[config.PALACE_ENV] = str(settings.palace_path)
    child[config.HOME_ENV] = str(settings.home)
    # The server's settings go by environment, never on the command line (a token in `ps`).
    for name, value in (
        (config.CHROMA_URL_ENV, settings.chroma_url),
        (config.CHROMA_TOKEN_ENV, settings.chroma_token),
        (config.CHROMA_CA_ENV, settings.chroma_ca_file),
        (config.CHROMA_DATABASE_ENV, settings.chroma_database),
    ):
        if value:
            child[name] = str(value)
    sessions.hook_dir.mkdir(parents=True, exist_ok=True)
    detach: dict[str, Any] = {"start_new_session": True}
    if os.name == "nt":  # pragma: no cover - Windows
        detach = {
            "creationflags": getattr(subprocess, "DETACHED_PROCESS", 0)
            | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        }
    with sessions.log_path.open("ab") as log:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,  # a crash's traceback lands in the hook log
            env=child,
            close_fds=True,
            **detach,
        )
    return proc.pid


# -- hook file --------------------------------------------------------------------------------
@hook_app.command("file")
def hook_file(
    ctx: typer.Context,
    transcript: Path = argument("TRANSCRIPT", "A session file: Claude Code's or Codex's JSONL."),
    session_id: str = option("--session-id", "ID", "The session's id (default: from the file)."),
    wing: str = option(
        "--wing",
        "WING",
        "Wing (default: the one it was filed in before, else the --cwd folder's name, "
        "else the transcript's folder's name).",
    ),
    agent: str = option("--agent", "NAME", "Who filed it (added_by; default: mempalace-cli)."),
    cwd: str = option("--cwd", "DIR", "The session's project folder (names the wing)."),
    from_hook: bool = typer.Option(False, "--from-hook", hidden=True),
    json_output: bool = json_option(),
) -> None:
    """File one session transcript now, as `hook run` does: only what the palace does not
    hold yet, with secrets redacted; a drawer whose exchange changed is replaced.

    Example: mempalace hook file ~/.claude/projects/-src-app/3f1c9e0a.jsonl --wing app
    """
    env = get_env(ctx)
    if from_hook:  # the background half of `hook run`: log, never fail
        sessions = None
        tag = f"{agent or 'client'} session {session_id or transcript.stem}"
        try:
            sessions = env.palace().sessions
            result = sessions.file_transcript(transcript, session_id, wing, agent, cwd)
            _note(sessions, f"{tag}: {_outcome(result)}")
        except Exception as exc:  # noqa: BLE001
            _problem(sessions, tag, exc)
        return
    result = env.palace().sessions.file_transcript(transcript, session_id, wing, agent, cwd)
    if result["status"] == "skipped":
        raise errors.InvalidInputError(
            f"{result['transcript']} was not filed: {result['reason']}.",
            hint="Pass a Claude Code or Codex session file (or any chat export "
            "mempalace mine --mode convos reads).",
        )
    if json_output:
        print_json(result)
        return
    d = result["drawers"]
    if result["status"] == "unchanged":
        env.out.print(
            markup(
                "{} is filed already and unchanged since: {} drawers in wing {}.",
                result["transcript"],
                d["total"],
                result["wing"],
            ),
            highlight=False,
        )
        return
    title = f" ({result['title']})" if result.get("title") else ""
    replaced = f", {d['removed']} replaced" if d["removed"] else ""
    env.out.print(
        markup(
            "Filed {}{} into wing [cyan]{}[/]: {} new drawer(s), {} in all{}.",
            result["transcript"],
            title,
            result["wing"],
            d["added"],
            d["total"],
            replaced,
        ),
        highlight=False,
    )
    if result.get("secrets_redacted"):
        say_redacted(env, f"{result['secrets_redacted']} secret(s)")
    search = for_palace(env, f"mempalace search QUERY --wing {result['wing']}")
    env.out.print(markup("Search it: {}", search), highlight=False)


# -- hook log ---------------------------------------------------------------------------------
@hook_app.command("log")
def hook_log(
    ctx: typer.Context,
    lines: int = option("--lines", "N", "How many of the last lines.", "-n", default=20, min=1),
    json_output: bool = json_option(),
) -> None:
    """Show the last lines of the hook log: what each hook run did, or why it filed nothing.

    Example: mempalace hook log -n 50
    """
    env = get_env(ctx)
    sessions = env.palace().sessions
    path = sessions.log_path
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        text = ""
    tail = text.splitlines()[-lines:]
    if json_output:
        print_json({"log": str(path), "lines": tail})
        return
    if not tail:
        env.err.print(
            markup(
                "No hook has run for this palace yet ({} is empty). Set the hooks up with: "
                "mempalace mcp-config --hooks claude-code --write",
                path,
            ),
            highlight=False,
        )
        return
    for line in tail:
        typer.echo(line)


# -- hook settings for mcp-config --------------------------------------------------------------
HOOK_CLIENTS = {"claude-code": "claude-code", "claude": "claude-code", "codex": "codex"}
HOOK_EVENTS = {"claude-code": ("Stop", "PreCompact", "SessionEnd"), "codex": ("Stop", "PreCompact")}
HOOK_TIMEOUT = 30  # seconds; the hook itself returns in well under one


def hook_settings(client: str, command: list[str]) -> dict[str, Any]:
    """The client's settings document that runs `command` (`mempalace ... hook run`) on each
    event that files the session: Claude Code's settings.json `hooks`, Codex's hooks.json."""
    line = shlex.join([*command, "hook", "run", "--harness", client])
    handler = {"type": "command", "command": line, "timeout": HOOK_TIMEOUT}
    return {"hooks": {event: [{"hooks": [dict(handler)]}] for event in HOOK_EVENTS[client]}}


def default_settings_file(client: str) -> Path:
    if client == "codex":
        return codex_home() / "hooks.json"
    return Path.home() / ".claude" / "settings.json"


def _ours(handler: Any, client: str) -> bool:
    """A hook entry this command wrote before (or MemPalace's same command line)."""
    command = handler.get("command") if isinstance(handler, dict) else None
    return (
        isinstance(command, str)
        and "mempalace" in command
        and " hook run" in command
        and f"--harness {client}" in command
    )


def merge_hook_settings(existing: dict[str, Any], ours: dict[str, Any], client: str) -> dict:
    """`existing` with our hook entries put in (replacing ones an earlier run wrote); every
    other setting and hook kept as it was."""
    merged = json.loads(json.dumps(existing))
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise errors.InvalidInputError(
            "The settings file's 'hooks' is not an object, so the hooks can't be added to it.",
            hint="Fix the file by hand, or pass another one with --file.",
        )
    for event, groups in ours["hooks"].items():
        kept = []
        for group in hooks.get(event) or []:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                handlers = [h for h in group["hooks"] if not _ours(h, client)]
                if not handlers:
                    continue
                group = {**group, "hooks": handlers}
            kept.append(group)
        hooks[event] = kept + groups
    return merged


def hook_config(
    ctx: typer.Context,
    client: str | None,
    write: bool,
    settings_file: Path | None,
    yes: bool,
    json_output: bool,
) -> None:
    """`mempalace mcp-config --hooks CLIENT [--write [--file PATH] [--yes]]`."""

    env = get_env(ctx)
    if client is None or client.lower() not in HOOK_CLIENTS:
        raise errors.InvalidInputError(
            f"--hooks needs a client: claude-code or codex, not {client!r}.",
            hint="mempalace mcp-config --hooks claude-code --write",
        )
    client = HOOK_CLIENTS[client.lower()]
    settings = resolve_settings(env.palace_option, env.chroma_url)
    palace = str(Path(settings.palace_path).expanduser().resolve())
    command = [*mcp_config.server_command(), "--palace", palace]
    if settings.chroma_url:
        command += ["--chroma-url", settings.chroma_url]
    ours = hook_settings(client, command)
    target = (settings_file or default_settings_file(client)).expanduser()
    where = _hook_where(client, target)
    if not write:
        if json_output:
            print_json({"client": client, "file": str(target), "settings": ours, "where": where})
            return
        typer.echo(json.dumps(ours, indent=2, ensure_ascii=False))
        env.err.print(where, highlight=False, soft_wrap=True, markup=False)
        return
    before_text, existing = _read_settings(target)
    merged = merge_hook_settings(existing, ours, client)
    after_text = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
    changed = after_text != before_text
    diff = "".join(
        difflib.unified_diff(
            before_text.splitlines(keepends=True),
            after_text.splitlines(keepends=True),
            fromfile=f"{target} (now)",
            tofile=f"{target} (with the hooks)",
        )
    )
    must_confirm = changed and target.exists() and not yes
    backup = None
    if changed and not must_confirm:
        backup = _write_settings(target, after_text)
    result = {
        "client": client,
        "file": str(target),
        "changed": changed,
        "written": changed and not must_confirm,
        "backup": str(backup) if backup else None,
        "diff": diff,
        "settings": ours,
    }
    if json_output:
        print_json(result)
        return
    if not changed:
        env.out.print(
            markup("{} already runs the palace's hooks: nothing to change.", target),
            highlight=False,
        )
        return
    typer.echo(diff, nl=False)
    if must_confirm:
        env.out.print(
            markup(
                "Nothing written. Run again with --yes to make this change to {} "
                "(the old file is kept as {}.bak).",
                target,
                target.name,
            ),
            highlight=False,
        )
        return
    saved = f" (the old one is kept as {backup})" if backup else ""
    env.out.print(markup("Wrote {}{}.", target, saved), highlight=False)
    env.err.print(where, highlight=False, soft_wrap=True, markup=False)


def _hook_where(client: str, target: Path) -> str:
    if client == "codex":
        return (
            f"Codex reads hooks from {target} (or <repo>/.codex/hooks.json); versions that keep "
            "hooks behind a feature flag also need `[features]` `codex_hooks = true` in "
            "~/.codex/config.toml. Review and trust them with /hooks in Codex. What each run did: "
            "mempalace hook log"
        )
    return (
        f"Claude Code reads hooks from {target} (every project; .claude/settings.json in a "
        "project for one). Check them with /hooks in Claude Code. What each run did: "
        "mempalace hook log"
    )


def _read_settings(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "", {}
    except OSError as exc:
        raise errors.from_os_error(exc, path, "read the settings file") from exc
    if not text.strip():
        return text, {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise errors.InvalidInputError(
            f"{path} is not valid JSON ({exc}), so the hooks can't be merged into it. "
            "Nothing was written.",
            hint="Fix the file, or print the hooks (without --write) and add them by hand.",
        ) from None
    if not isinstance(data, dict):
        raise errors.InvalidInputError(
            f"{path} holds a JSON {type(data).__name__}, not an object. Nothing was written.",
            hint="Print the hooks (without --write) and add them by hand.",
        )
    return text, data


def _write_settings(path: Path, text: str) -> Path | None:
    """Write `text` to `path` through a temporary file; an old file is kept as PATH.bak."""

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        backup = None
        if path.exists():
            backup = path.with_name(path.name + ".bak")
            shutil.copy2(path, backup)
        tmp = path.with_name(f".{path.name}.mempalace-tmp")
        tmp.write_text(text, encoding="utf-8")
        if backup is not None:
            shutil.copymode(backup, tmp)
        os.replace(tmp, path)
    except OSError as exc:
        raise errors.from_os_error(exc, path, "write the settings file") from exc
    return backup


# -- rules ------------------------------------------------------------------------------------
RULES_START = "<!-- mempalace:rules:start -->"
RULES_END = "<!-- mempalace:rules:end -->"


def rules_block(agent: str | None = None) -> str:
    """The memory protocol (memory/protocol.py) as a block for an agent's instruction file,
    between markers that let `rules --write` find and replace it."""

    lines = [
        RULES_START,
        "<!-- Written by `mempalace rules`: run it again to update this block; "
        "edit outside the markers. -->",
        "## Memory palace",
        "",
    ]
    if agent:
        lines += [f"Your agent name in the palace (diary, added_by): {agent}.", ""]
    return "\n".join([*lines, PROTOCOL.rstrip("\n"), RULES_END]) + "\n"


def put_rules(text: str, block: str) -> tuple[str, str]:
    """`text` with `block` in it: (new text, how: replaced | added). Raises
    InvalidInputError when the markers are broken (one without the other, or out of order)."""
    start, end = text.find(RULES_START), text.find(RULES_END)
    if start == -1 and end == -1:
        blank = "" if not text or text.endswith("\n\n") else "\n"
        return text + blank + ("" if not text or text.endswith("\n") else "\n") + block, "added"
    if start == -1 or end == -1 or end < start or text.count(RULES_START) > 1:
        raise errors.InvalidInputError(
            f"The file's {RULES_START} ... {RULES_END} markers are broken (one is missing, "
            "repeated or out of order), so the block can't be replaced safely. Nothing was "
            "written.",
            hint="Remove the old block by hand, then run mempalace rules --write again.",
        )
    after = end + len(RULES_END)
    if text[after : after + 1] == "\n":
        after += 1
    return text[:start] + block + text[after:], "replaced"


def rules(
    ctx: typer.Context,
    write: Path = option(
        "--write",
        "FILE",
        "Put the block into FILE (CLAUDE.md, AGENTS.md, GEMINI.md...): replace the block "
        "an earlier run wrote, else add it at the end; the rest of the file is kept.",
    ),
    agent: str = option("--agent", "NAME", "Tell the agent the name it files under."),
    json_output: bool = json_option(),
) -> None:
    """Print the memory protocol as a block for an agent's instruction file, or write it in.

    The block sits between <!-- mempalace:rules:start --> and <!-- mempalace:rules:end -->,
    so running it again replaces it in place.

    Example: mempalace rules --write ~/.claude/CLAUDE.md
    """
    env = get_env(ctx)
    block = rules_block(agent)
    if write is None:
        if json_output:
            print_json({"block": block, "start": RULES_START, "end": RULES_END})
        else:
            typer.echo(block, nl=False)
        return
    path = write.expanduser()
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        if isinstance(exc, OSError):
            raise errors.from_os_error(exc, path, "read the file") from exc
        raise errors.InvalidInputError(
            f"{path} is not UTF-8 text: the rules were not written into it.",
            hint="Pass an instruction file such as CLAUDE.md or AGENTS.md.",
        ) from None
    new, how = put_rules(text, block)
    if not path.exists():
        how = "created"
    changed = new != text
    if changed:
        _write_text(path, new)
    result = {"file": str(path), "changed": changed, "action": how if changed else "unchanged"}
    if json_output:
        print_json(result)
        return
    said = {
        "created": "Created {} with the memory rules.",
        "added": "Added the memory rules at the end of {}.",
        "replaced": "Replaced the memory rules in {} with the current ones.",
        "unchanged": "{} already has the current memory rules: nothing written.",
    }[result["action"]]
    env.out.print(markup(said, path), highlight=False)


def _write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.mempalace-tmp")
        tmp.write_text(text, encoding="utf-8")
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except OSError as exc:
        raise errors.from_os_error(exc, path, "write the file") from exc


# -- split ------------------------------------------------------------------------------------
def split(
    ctx: typer.Context,
    path: Path = argument("PATH", "A file, or a folder whose files are looked at."),
    output_dir: Path = option(
        "--output-dir",
        "DIR",
        "Write one file per session here. Without it, only show what would be written.",
        "-o",
    ),
    min_sessions: int = option(
        "--min-sessions", "N", "Only split files holding N sessions or more.", default=2
    ),
    dry_run: bool = flag("--dry-run", "With --output-dir: show the names, write nothing."),
    json_output: bool = json_option(),
) -> None:
    """Split transcript files that hold several sessions (Claude Code or Codex JSONL run
    together, or a terminal dump of many Claude Code runs) into one file per session.

    Shows the plan unless --output-dir is given; the input files are never changed, and a
    file already in the output folder is never overwritten.

    Example: mempalace split ~/exports/all-sessions.jsonl --output-dir ~/exports/sessions
    """
    env = get_env(ctx)
    result = env.palace().sessions.split(path, output_dir, min_sessions, dry_run)
    if json_output:
        print_json(result)
        return
    out = env.out
    for entry in result["files"]:
        if entry["action"] == "skip":
            out.print(markup("{}: skipped, {}", entry["file"], entry["reason"]), highlight=False)
            continue
        out.print(
            markup(
                "[bold]{}[/]: {} sessions ({})", entry["file"], entry["sessions"], entry["layout"]
            ),
            highlight=False,
        )
        for part in entry["parts"]:
            about = " ".join(x for x in (part["date"], part["title"]) if x)
            out.print(
                markup(
                    "  {:>3}  {} lines  {}  -> {}",
                    part["index"],
                    part["lines"],
                    about or "(no date or title)",
                    part["output"],
                ),
                highlight=False,
            )
    planned = sum(len(e.get("parts", ())) for e in result["files"] if e["action"] == "split")
    if not result["files"]:
        out.print(markup("No transcript files under {}.", result["path"]), highlight=False)
    elif result["dry_run"]:
        if planned:
            target = result["output_dir"] or "DIR"
            out.print(
                markup(
                    "Dry run: nothing written. Write the {} files with: mempalace split {} "
                    "--output-dir {}",
                    planned,
                    result["path"],
                    target,
                ),
                highlight=False,
            )
    else:
        mine = shlex.join(["mempalace", "mine", result["output_dir"], "--mode", "convos"])
        out.print(
            markup(
                "Wrote {} files into {}; the inputs are unchanged. File them with: {}",
                result["files_written"],
                result["output_dir"],
                for_palace(env, mine),
            ),
            highlight=False,
        )


# -- audit ------------------------------------------------------------------------------------
def audit(ctx: typer.Context, json_output: bool = json_option()) -> None:
    """Score how well the palace is organised (0-100) and say what to fix, each with the
    command that fixes it: flat wings, one-drawer rooms, drawers of deleted files, copies,
    names spelled two ways, one-off fact predicates, diaries apart from their projects.

    Read-only: nothing is changed.

    Example: mempalace audit --json
    """
    env = get_env(ctx)
    result = env.palace().organisation.audit()
    for finding in result["findings"]:
        finding["fix"] = for_palace(env, finding["fix"])
    if json_output:
        print_json(result)
        return
    out = env.out
    score = result["score"]
    head = f"{score}/100" if score is not None else "not scored"
    out.print(
        markup(
            "Organisation of {}: [bold]{}[/] ({} drawers, {} wings, {} rooms)",
            result["palace"],
            head,
            result["drawers"],
            result["wings"],
            result["rooms"],
        ),
        highlight=False,
    )
    for check in result["checks"]:
        out.print(
            markup(
                "  {:<16} {:>3}/100  (weight {:>2})  {}",
                check["check"],
                check["score"],
                check["weight"],
                check["summary"],
            ),
            highlight=False,
        )
    if not result["findings"]:
        out.print("Nothing to fix.", highlight=False)
        return
    out.print("What to fix, most points first:", highlight=False)
    for n, finding in enumerate(result["findings"], start=1):
        out.print(markup("{}. \\[{}] {}", n, finding["check"], finding["text"]), highlight=False)
        if finding["examples"]:
            out.print(markup("   e.g. {}", ", ".join(finding["examples"])), highlight=False)
        out.print(markup("   Fix: [bold]{}[/]", finding["fix"]), highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(hook_app, name="hook")
    app.command("rules")(rules)
    app.command("split")(split)
    app.command("audit")(audit)
