"""Secrets never enter the palace (mempalace_cli/miners/secrets.py), end to end: a fake home
folder mined with the real CLI, real Chroma and the real model; searched with the CLI and over
MCP (a real server subprocess); chat exports; a real watcher subprocess with real filesystem
events; drawers and diary entries filed over MCP; and --keep-secrets, the CLI-only opt-out.

Every secret value is generated at run time (tests/secret_samples.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mempalace_cli.cli import app
from mempalace_cli.common.config import resolve_settings
from mempalace_cli.miners import secrets
from mempalace_cli.service import Palace
from tests.conftest import NOTES
from tests.secret_samples import (
    LOWER,
    Sample,
    aws_key_pair,
    github_token,
    private_key_block,
    rand,
    samples,
    slack_token,
)
from tests.test_mcp_support import McpSession, stdio_session
from tests.test_watch_support import WatchProcess, palace_snapshot, wait_until

SENTENCES = {
    "notes/deploy.md": "The okapi release train leaves the station every second Tuesday.",
    "notes/aws.md": "The narwhal archive bucket keeps invoices for seven years.",
    "notes/db.md": "The axolotl replica lags the primary by about four seconds at peak.",
    "notes/standup.md": "Maya will finish the pangolin onboarding checklist by Friday.",
}
CREDENTIAL_FILES = {
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".aws/config",
    ".env",
    ".env.production",
    ".docker/config.json",
    ".kube/config",
    "ops/staging-cluster.yaml",  # a kubeconfig by its content
    "backup/deploy_key",  # a private key by its first line
}
# Folders never entered (reported once each), and the files in them.
CREDENTIAL_FOLDERS = {".gnupg/", ".config/google-chrome/", "browser-backup/Profile 1/"}
FOLDER_FILES = {
    ".gnupg/private-keys-v1.d/4F2A.key",
    ".config/google-chrome/Default/Login Data",
    "browser-backup/Profile 1/Login Data",  # a profile by its files, whatever its name
    "browser-backup/Profile 1/Preferences",
}


def run(*args: Any, home: Path | None = None) -> Any:
    """`mempalace ARGS...` in this process; the result (exit code checked)."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, f"{result.stdout}\n{result.stderr}\n{result.exception!r}"
    return result


def run_json(*args: Any) -> Any:
    return json.loads(run(*args, "--json").stdout)


def make_home(base: Path) -> tuple[Path, dict[str, str]]:
    """A fake home folder full of credentials, and notes that quote some. Returns the folder
    and {name: value} of every secret in it."""
    home = base / "fake-home"
    gh = github_token()
    akid, sak = aws_key_pair()
    slack = slack_token()
    env_pw, kube_token = rand(20), rand(40)
    docker_auth = _b64(f"maya:{rand(16)}")
    key = private_key_block()
    values = {
        "github": gh,
        "aws_key_id": akid,
        "aws_secret": sak,
        "slack": slack,
        "db_password": "hunter2",
        "env_password": env_pw,
        "kube_token": kube_token,
        "docker_auth": docker_auth,
        "ssh_key_line": key.splitlines()[2],
    }
    files = {
        ".ssh/id_ed25519": key,
        ".ssh/id_ed25519.pub": "ssh-ed25519 " + rand(68, LOWER) + " maya@laptop\n",
        ".aws/credentials": f"[default]\naws_access_key_id = {akid}\n"
        f"aws_secret_access_key = {sak}\n",
        ".aws/config": "[default]\nregion = eu-west-1\n",
        ".env": f"DB_PASSWORD={env_pw}\nAPI_URL=https://api.example.com\n",
        ".env.production": f"DB_PASSWORD={env_pw}\n",
        ".env.example": "DB_PASSWORD=\nAPI_URL=https://api.example.com\n",
        ".docker/config.json": json.dumps({"auths": {"ghcr.io": {"auth": docker_auth}}}),
        ".kube/config": _kubeconfig(kube_token),
        "ops/staging-cluster.yaml": _kubeconfig(kube_token),
        "backup/deploy_key": private_key_block("RSA"),
        **dict.fromkeys(FOLDER_FILES, f"origin https://accounts.example.com user maya {env_pw}\n"),
        "notes/deploy.md": "# Deploy\n\nThe release job needs a token:\n"
        f"GITHUB_TOKEN={gh}\n\n{SENTENCES['notes/deploy.md']}\n",
        "notes/aws.md": f"# AWS\n\nKey id {akid} belongs to the billing user.\n"
        f"aws_secret_access_key = {sak}\n\n{SENTENCES['notes/aws.md']}\n",
        "notes/db.md": "# Database\n\nConnect with postgres://user:hunter2@db/x from the bastion."
        f"\n\n{SENTENCES['notes/db.md']}\n",
        "notes/standup.md": f"# Standup\n\nMaya pasted {slack} into the channel by mistake, "
        f"so we rotated it.\n{SENTENCES['notes/standup.md']}\n",
    }
    for rel, text in files.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return home, values


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


def _kubeconfig(token: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\nclusters:\n- name: staging\n  cluster:\n"
        "    server: https://10.0.0.1:6443\nusers:\n- name: admin\n  user:\n"
        f"    token: {token}\ncontexts:\n- name: staging\n"
    )


def leaks(text: str, values: dict[str, str]) -> list[str]:
    """The names of the secret values that `text` holds."""
    return [name for name, value in values.items() if value in text]


def everything_stored(palace: Path) -> str:
    """Every document, metadata value and catalogue row of the palace, as one text."""
    return json.dumps(palace_snapshot(palace), ensure_ascii=False)


def search_cli(palace: Path, query: str, *extra: str) -> list[dict[str, Any]]:
    return run_json("--palace", palace, "search", query, "-n", "10", *extra)["results"]


@pytest.fixture(scope="module")
def mined_home(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("secrets-home")
    home, values = make_home(base)
    palace = base / "palace"
    report = run_json("--palace", palace, "mine", home)
    return {"base": base, "home": home, "palace": palace, "values": values, "report": report}


# -- mine ---------------------------------------------------------------------------------------
def test_credential_files_are_skipped_with_the_reason(mined_home: dict[str, Any]) -> None:
    report = mined_home["report"]
    assert set(report["secrets"]["credential_files"]) == CREDENTIAL_FILES | CREDENTIAL_FOLDERS
    reasons = {s["file"]: s["reason"] for s in report["skipped"]}
    for rel in CREDENTIAL_FILES:
        assert reasons[rel].startswith("credential file ("), reasons[rel]
        assert "--keep-secrets" in reasons[rel]
    for rel in CREDENTIAL_FOLDERS:
        assert reasons[rel].startswith("credential folder ("), reasons[rel]
    assert "browser profile" in reasons["browser-backup/Profile 1/"]
    assert "an SSH private key" in reasons[".ssh/id_ed25519"]
    assert "a Kubernetes kubeconfig" in reasons["ops/staging-cluster.yaml"]
    assert "a private key" in reasons["backup/deploy_key"]
    # Not credentials: the public key and the template of the environment file.
    assert {".ssh/id_ed25519.pub", ".env.example"} <= set(report["mined_files"])


def test_the_report_says_where_secrets_were_redacted_never_what(
    mined_home: dict[str, Any],
) -> None:
    report, values = mined_home["report"], mined_home["values"]
    where = {(w["file"], w["line"], w["kind"]) for w in report["secrets"]["where"]}
    assert where == {
        ("notes/deploy.md", 4, "github-token"),
        ("notes/aws.md", 3, "aws-access-key"),
        ("notes/aws.md", 4, "aws-secret-key"),
        ("notes/db.md", 3, "password-in-url"),
        ("notes/standup.md", 3, "slack-token"),
    }
    assert report["secrets"]["redacted"] == 5 and report["secrets"]["kept"] is False
    assert leaks(json.dumps(report), values) == []


def test_no_secret_value_is_stored_anywhere(mined_home: dict[str, Any]) -> None:
    stored = everything_stored(mined_home["palace"])
    assert leaks(stored, mined_home["values"]) == []
    assert "[REDACTED:github-token]" in stored


def test_search_and_show_never_return_a_secret_but_find_the_rest(
    mined_home: dict[str, Any],
) -> None:
    palace, values, home = mined_home["palace"], mined_home["values"], mined_home["home"]
    for rel, sentence in SENTENCES.items():
        hits = search_cli(palace, sentence)
        assert hits[0]["source_file"] == str(home / rel), (sentence, hits[:2])
        assert sentence in hits[0]["text"] and "[REDACTED:" in hits[0]["text"]
    for name, value in values.items():
        for mode in ("hybrid", "lexical"):
            hits = search_cli(palace, value, "--mode", mode)
            assert leaks(json.dumps(hits), values) == [], (name, mode)
    drawer = search_cli(palace, SENTENCES["notes/deploy.md"])[0]["drawer_id"]
    shown = run("--palace", palace, "show", drawer).stdout
    assert "GITHUB_TOKEN=[REDACTED:github-token]" in shown
    assert SENTENCES["notes/deploy.md"] in shown and leaks(shown, values) == []
    shown_json = run("--palace", palace, "show", drawer, "--json").stdout
    assert leaks(shown_json, values) == []


def test_cli_summary_lists_file_and_line(mined_home: dict[str, Any], tmp_path: Path) -> None:
    out = run("--palace", tmp_path / "dry", "mine", mined_home["home"], "--dry-run").stdout
    assert "Would redact 5 secrets" in out
    assert "notes/deploy.md:4  github-token" in out and "notes/db.md:3  password-in-url" in out
    assert (
        f"Skipped {len(CREDENTIAL_FILES)} credential files and "
        f"{len(CREDENTIAL_FOLDERS)} credential folders" in out
    )
    assert leaks(out, mined_home["values"]) == []


def test_keep_secrets_keeps_them_and_mining_without_it_takes_them_out(
    mined_home: dict[str, Any], tmp_path: Path
) -> None:
    home, values = tmp_path / "home", mined_home["values"]
    shutil.copytree(mined_home["home"], home)
    palace = tmp_path / "palace"
    kept = run_json("--palace", palace, "mine", home, "--keep-secrets")
    assert kept["secrets"] == {"kept": True, "redacted": 0, "where": [], "credential_files": []}
    assert {".env", ".ssh/id_ed25519", ".aws/credentials"} <= set(kept["mined_files"])
    hits = search_cli(palace, values["github"], "--mode", "lexical")
    assert hits and values["github"] in hits[0]["text"]
    assert set(leaks(everything_stored(palace), values)) == set(values)

    # The same folder without --keep-secrets: credential files leave, secrets are redacted,
    # though not one file changed on disk.
    again = run_json("--palace", palace, "mine", home)
    assert set(again["secrets"]["credential_files"]) == CREDENTIAL_FILES | CREDENTIAL_FOLDERS
    # Their drawers go: a credential file is a file no longer in the palace.
    assert set(again["removed_files"]) == CREDENTIAL_FILES | FOLDER_FILES
    assert again["drawers"]["removed"] >= len(CREDENTIAL_FILES | FOLDER_FILES)
    assert again["secrets"]["redacted"] == 5
    assert leaks(everything_stored(palace), values) == []
    assert run_json("--palace", palace, "mine", home)["files"]["mined"] == 0


def test_keep_secrets_is_in_mine_help() -> None:
    out = run("mine", "--help").stdout
    assert "--keep-secrets" in out and "[REDACTED:kind]" in out


# -- chat exports ------------------------------------------------------------------------------
def test_chat_exports_are_redacted(tmp_path: Path, embedder: Any) -> None:
    folder, palace = tmp_path / "chats", tmp_path / "palace"
    (folder / "claude-code").mkdir(parents=True)
    gh, pw, env_pw = github_token(), rand(14), rand(18)
    (folder / "pairing.txt").write_text(
        "Pairing on the release script.\n\n"
        "> How do I authenticate the release script?\n"
        f"Export GITHUB_TOKEN={gh} first, then the quokka pipeline publishes the wheel.\n\n"
        "> And the database?\n"
        f"Use postgres://deploy:{pw}@db.internal/app for the migration.\n",
        encoding="utf-8",
    )
    (folder / "claude-code" / "session.jsonl").write_text(
        "\n".join(
            json.dumps(line)
            for line in _claude_code_session(
                f"My token is {gh}, why does the wombat upload fail?",
                "The wombat upload fails because the bucket policy denies PutObject.",
            )
        )
        + "\n",
        encoding="utf-8",
    )
    (folder / ".env").write_text(f"DB_PASSWORD={env_pw}\n", encoding="utf-8")
    values = {"github": gh, "password": pw, "env": env_pw}
    report = run_json("--palace", palace, "mine", folder, "--mode", "convos")
    assert report["secrets"]["credential_files"] == [".env"]
    kinds = {(w["file"], w["kind"]) for w in report["secrets"]["where"]}
    assert kinds == {
        ("pairing.txt", "github-token"),
        ("pairing.txt", "password-in-url"),
        ("claude-code/session.jsonl", "github-token"),
    }
    assert all(w["exchange"] >= 1 and "conversation" in w for w in report["secrets"]["where"])
    assert leaks(everything_stored(palace), values) == []
    hit = search_cli(palace, "why does the wombat upload fail")[0]
    assert "bucket policy denies PutObject" in hit["text"]
    assert "[REDACTED:github-token]" in hit["text"]
    hit = search_cli(palace, "quokka pipeline publishes the wheel")[0]
    assert "[REDACTED:github-token]" in hit["text"] and leaks(hit["text"], values) == []


def _claude_code_session(question: str, answer: str) -> list[dict[str, Any]]:
    common = {"sessionId": "5e1f", "cwd": "/home/maya/src/app", "isSidechain": False}
    return [
        {
            **common,
            "uuid": "u1",
            "type": "user",
            "timestamp": "2025-06-03T09:00:00Z",
            "message": {"role": "user", "content": question},
        },
        {
            **common,
            "uuid": "u2",
            "parentUuid": "u1",
            "type": "assistant",
            "timestamp": "2025-06-03T09:00:05Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]},
        },
    ]


# -- watch -------------------------------------------------------------------------------------
def _search(palace: Path, query: str, mode: str = "hybrid") -> list[dict[str, Any]]:
    p = Palace(resolve_settings(str(palace)))
    try:
        return p.search(query, limit=5, mode=mode)["results"]
    finally:
        p.close()


@pytest.fixture
def watched(tmp_path: Path, embedder: Any) -> Iterator[dict[str, Any]]:
    home, folder, palace = tmp_path / "home", tmp_path / "notes", tmp_path / "palace"
    home.mkdir()
    shutil.copytree(NOTES / "people", folder)
    processes: list[WatchProcess] = []

    def start(*extra: str) -> WatchProcess:
        watcher = WatchProcess(home, palace, folder, *extra)
        processes.append(watcher)
        watcher.wait_event("mine")
        return watcher

    yield {"folder": folder, "palace": palace, "start": start}
    for watcher in processes:
        assert watcher.stop() == 0, watcher.stderr()


def test_watch_redacts_new_notes_and_skips_credential_files(watched: dict[str, Any]) -> None:
    folder, palace = watched["folder"], watched["palace"]
    watcher = watched["start"]()
    slack, env_pw = slack_token(), rand(20)
    (folder / ".env").write_text(f"DB_PASSWORD={env_pw}\n", encoding="utf-8")
    note = folder / "incident.md"
    note.write_text(
        f"# Incident\n\nThe bot token {slack} leaked in the channel.\n"
        "The capybara queue drained after the restart.\n",
        encoding="utf-8",
    )

    def filed() -> list[dict[str, Any]]:
        return [r for r in _search(palace, "capybara queue drained") if "incident" in str(r)]

    hit = wait_until(filed, 90, "the watched note searchable")[0]
    assert "[REDACTED:slack-token]" in hit["text"] and slack not in hit["text"]
    batches = wait_until(
        lambda: [b for b in watcher.batches() if ".env" in b["secrets"]["credential_files"]],
        90,
        "the batch that skips .env",
    )
    assert batches[0]["skipped"][0]["reason"].startswith("credential file (an environment file)")
    redacted = [b for b in watcher.batches() if b["secrets"]["redacted"]]
    assert redacted and redacted[0]["secrets"]["where"] == [
        {"file": "incident.md", "line": 3, "kind": "slack-token"}
    ]
    assert leaks(everything_stored(palace), {"slack": slack, "env": env_pw}) == []


def test_watch_with_keep_secrets_keeps_them(watched: dict[str, Any]) -> None:
    folder, palace = watched["folder"], watched["palace"]
    watched["start"]("--keep-secrets")
    gh = github_token()
    (folder / "kept.md").write_text(
        f"# Kept\n\nThe heron deploy uses {gh} on purpose.\n", encoding="utf-8"
    )
    hits = wait_until(lambda: _search(palace, gh, mode="lexical"), 90, "the kept token")
    assert gh in hits[0]["text"]


# -- MCP ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mcp(mined_home: dict[str, Any]) -> Iterator[McpSession]:
    base = mined_home["base"]
    (base / "server-home").mkdir(exist_ok=True)
    (base / "agent-may-mine").mkdir(exist_ok=True)
    with stdio_session(
        mined_home["palace"],
        base / "server-home",
        base / "server.log",
        "--mine-root",
        str(base / "agent-may-mine"),
    ) as session:
        yield session


def test_mcp_search_and_get_drawer_never_return_a_secret(
    mcp: McpSession, mined_home: dict[str, Any]
) -> None:
    values = mined_home["values"]
    for rel, sentence in SENTENCES.items():
        found = mcp.ok("mempalace_search", {"query": sentence, "limit": 3})
        top = found["results"][0]
        assert top["source_file"] == str(mined_home["home"] / rel)
        assert sentence in top["text"] and leaks(json.dumps(found), values) == []
        drawer = mcp.ok("mempalace_get_drawer", {"drawer_id": top["drawer_id"]})
        assert sentence in drawer["text"] and leaks(json.dumps(drawer), values) == []
    for value in values.values():
        found = mcp.ok("mempalace_search", {"query": value, "limit": 10})  # echoes the query
        assert leaks(json.dumps(found["results"]), values) == []


def test_mcp_add_update_and_diary_redact(mcp: McpSession, mined_home: dict[str, Any]) -> None:
    gh, slack, akid = github_token(), slack_token(), aws_key_pair()[0]
    values = {"github": gh, "slack": slack, "aws": akid, "pw": "hunter2"}
    added = mcp.ok(
        "mempalace_add_drawer",
        {
            "wing": "ops",
            "room": "tokens",
            "content": f"The ibis mirror syncs nightly with GITHUB_TOKEN={gh}.",
            "source_file": "https://maya:hunter2@wiki.example.com/ops",
        },
    )
    assert added["success"] is True and added["secrets_redacted"] == 2
    drawer = mcp.ok("mempalace_get_drawer", {"drawer_id": added["drawer_id"]})
    assert (
        drawer["text"] == "The ibis mirror syncs nightly with GITHUB_TOKEN=[REDACTED:github-token]."
    )
    assert leaks(json.dumps(drawer), values) == []
    found = mcp.ok("mempalace_search", {"query": "ibis mirror syncs nightly", "limit": 1})
    assert found["results"][0]["drawer_id"] == added["drawer_id"]

    updated = mcp.ok(
        "mempalace_update_drawer",
        {"drawer_id": added["drawer_id"], "content": f"The ibis mirror now uses {slack}."},
    )
    assert updated["success"] is True and updated["secrets_redacted"] == 1
    drawer = mcp.ok("mempalace_get_drawer", {"drawer_id": added["drawer_id"]})
    assert drawer["text"] == "The ibis mirror now uses [REDACTED:slack-token]."

    entry = mcp.ok(
        "mempalace_diary_write",
        {"agent_name": "claude", "entry": f"Rotated key {akid}; the egret job passes again."},
    )
    assert entry["success"] is True and entry["secrets_redacted"] == 1
    diary = mcp.ok("mempalace_diary_read", {"agent_name": "claude"})
    assert diary["entries"][0]["content"] == (
        "Rotated key [REDACTED:aws-access-key]; the egret job passes again."
    )
    assert leaks(everything_stored(mined_home["palace"]), values) == []


def test_mcp_mine_redacts_and_skips(mcp: McpSession, mined_home: dict[str, Any]) -> None:
    folder = mined_home["base"] / "agent-may-mine" / "project"
    folder.mkdir()
    gh, env_pw = github_token(), rand(20)
    (folder / ".env").write_text(f"DB_PASSWORD={env_pw}\n", encoding="utf-8")
    (folder / "README.md").write_text(
        f"# Project\n\nCI reads GITHUB_TOKEN={gh}.\nThe lemur build runs on every push.\n",
        encoding="utf-8",
    )
    report = mcp.ok("mempalace_mine", {"source": str(folder), "wing": "agent_project"})
    assert report["secrets"]["credential_files"] == [".env"]
    assert report["secrets"]["where"] == [{"file": "README.md", "line": 3, "kind": "github-token"}]
    found = mcp.ok("mempalace_search", {"query": "lemur build runs on every push", "limit": 1})
    assert "[REDACTED:github-token]" in found["results"][0]["text"]
    assert leaks(everything_stored(mined_home["palace"]), {"gh": gh, "env": env_pw}) == []


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("mempalace_mine", {"source": "/tmp"}),
        ("mempalace_add_drawer", {"wing": "w", "room": "r", "content": "text"}),
        ("mempalace_update_drawer", {"drawer_id": "drawer_x", "content": "text"}),
        ("mempalace_diary_write", {"agent_name": "claude", "entry": "text"}),
    ],
)
def test_mcp_tools_refuse_to_keep_secrets(mcp: McpSession, tool: str, args: dict) -> None:
    """Keeping secrets is the owner's choice on the command line: no MCP tool takes it."""
    message = mcp.error(tool, {**args, "keep_secrets": True})
    assert "unknown argument 'keep_secrets'" in message
    schema = {t.name: t.input_schema for t in mcp.list_tools()}[tool]
    assert not any("secret" in name for name in schema["properties"])


# -- the detectors -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "credential"),
    [
        ("/home/maya/.ssh/id_rsa_work", True),
        ("/home/maya/.ssh/id_rsa_work.pub", False),
        ("/home/maya/.ssh/known_hosts", False),
        ("/srv/app/.env.staging", True),
        ("/srv/app/.env.sample", False),
        ("/srv/app/prod.env", True),
        ("/srv/app/config/secrets.yaml", True),
        ("/srv/app/docs/secrets.md", False),
        ("/srv/app/infra/terraform.tfstate", True),
        ("/home/maya/Library/Keychains/login.keychain-db", True),
        ("/home/maya/.password-store/bank.gpg", True),
        ("/home/maya/src/google/chrome/base/logging.cc", False),  # a checkout, not a profile
        ("/Users/maya/Library/Application Support/Google/Chrome/Default/Bookmarks", True),
        ("/home/maya/recipes/Cookies", False),  # a note called Cookies
    ],
)
def test_credential_files_by_name_and_folder(path: str, credential: bool) -> None:
    assert (secrets.credential_reason(path) is not None) is credential


def test_a_folder_is_a_browser_profile_by_its_files_not_by_one_name() -> None:
    assert secrets.credential_folder_reason("/backup/Profile 1", ["Login Data", "Preferences"])
    assert secrets.credential_folder_reason("/home/maya/recipes", ["Cookies", "Bread"]) is None


def test_a_credential_by_its_content() -> None:
    key = private_key_block("RSA")
    assert secrets.credential_reason("notes/old-key.txt", key)
    assert secrets.credential_reason(".npmrc", "//registry.npmjs.org/:_authToken=" + rand(36))
    assert secrets.credential_reason(".npmrc", "save-exact=true\n") is None
    account = json.dumps({"type": "service_account", "private_key": key})
    assert secrets.credential_reason("deploy/sa.json", account)
    assert secrets.credential_reason("notes/key-rotation.md", "Rotate the key:\n" + key) is None


def _table() -> list[Any]:
    return [
        pytest.param(s, id=s.kind, marks=[] if s.caught else [pytest.mark.xfail(strict=True)])
        for s in samples()
    ]


@pytest.mark.parametrize("sample", _table())
def test_each_secret_kind_is_redacted(sample: Sample) -> None:
    """The table in docs/secrets.md: known misses are strict xfails, so a fix shows up."""
    found = secrets.redact(sample.line, "notes.md")
    assert sample.value not in found.text, (sample.how, found)
    assert found.findings


def test_redaction_keeps_lines_and_the_rest_of_the_text() -> None:
    text = "\n".join(s.line for s in samples()) + "\nkey:\n" + private_key_block() + "end\n"
    found = secrets.redact(text, "notes.md")
    assert len(found.text.splitlines()) == len(text.splitlines())
    assert found.text.endswith("end\n") and "[REDACTED:private-key]" in found.text
    for before, after in zip(text.splitlines(), found.text.splitlines(), strict=True):
        if "REDACTED" not in after and after:
            assert after == before
    assert secrets.redact(found.text, "notes.md").findings == ()  # redacting again: nothing


def test_the_prefilter_finds_what_a_scan_of_every_line_finds() -> None:
    """Only lines holding a trigger literal are scanned; a scan of every line with every
    regex must find nothing more, over notes, code and every sample."""
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in NOTES.rglob("*.md")]
    code = Path(secrets.__file__).parent.parent
    texts += [(p.name, p.read_text(encoding="utf-8")) for p in code.rglob("*.py")]
    mixed = "\n".join(s.line for s in samples()) + "\n" + private_key_block()
    texts += [(name, mixed) for name in ("notes.md", "app.py", "config.yaml", "")]
    for name, text in texts:
        assert secrets.redact(text, name) == secrets.redact(text, name, every_line=True), name


def test_mining_code_does_not_import_detect_secrets_until_text_is_filed() -> None:
    probe = (
        "import sys, mempalace_cli.cli, mempalace_cli.service\n"
        "print([m for m in sys.modules if m.startswith('detect_secrets')"
        " or m == 'mempalace_cli.miners.secrets'])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# -- secrets in fields other than drawer text ---------------------------------------------------
def raw_leaks(palace: Path, values: dict[str, str]) -> list[str]:
    """The names of the secret values found in the raw bytes of any file under `palace`."""
    found: set[str] = set()
    for path in palace.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found |= {name for name, value in values.items() if value.encode() in data}
    return sorted(found)


def test_mcp_secrets_in_names_metadata_and_facts_are_redacted_or_refused(
    mcp: McpSession, mined_home: dict[str, Any]
) -> None:
    palace = mined_home["palace"]
    gh, akid, slack = github_token(), aws_key_pair()[0], slack_token()
    gh2, akid2, pw = github_token(), aws_key_pair()[0], rand(14)
    values = {
        "topic": gh,
        "agent": akid,
        "added_by": slack,
        "object": gh2,
        "wing": akid2,
        "url_pw": pw,
    }

    entry = mcp.ok(
        "mempalace_diary_write",
        {"agent_name": "claude", "entry": "The tern job passes again.", "topic": gh},
    )
    assert entry["topic"] == "[REDACTED:github-token]" and entry["secrets_redacted"] == 1
    shown = run("--palace", palace, "show", entry["drawer_id"], "--json").stdout
    assert "[REDACTED:github-token]" in shown and leaks(shown, values) == []

    message = mcp.error(
        "mempalace_diary_write", {"agent_name": "bot" + akid, "entry": "The plover job."}
    )
    assert "agent name looks like it holds a secret (aws-access-key)" in message
    assert akid not in message

    added = mcp.ok(
        "mempalace_add_drawer",
        {
            "wing": "ops",
            "room": "bots",
            "content": "The gannet bot posts the deploy log.",
            "added_by": slack,
        },
    )
    hits = run("--palace", palace, "search", "gannet bot posts the deploy log", "--json").stdout
    assert added["drawer_id"] in hits and "[REDACTED:slack-token]" in hits
    assert leaks(hits, values) == []

    for field in ("wing", "room"):
        names = {"wing": "ops", "room": "keys", field: f"keys {akid2}"}
        message = mcp.error(
            "mempalace_add_drawer", {**names, "content": "The skua key rotates monthly."}
        )
        assert f"The {field} looks like it holds a secret (aws-access-key)" in message
        assert akid2 not in message
    status = json.dumps(mcp.ok("mempalace_status"))
    assert leaks(status, values) == []

    fact = mcp.ok(
        "mempalace_kg_add",
        {
            "subject": "release bot",
            "predicate": "uses token",
            "object": gh2,
            "source_file": f"https://maya:{pw}@wiki.example.com/bots",
        },
    )
    assert fact["object"] == "[REDACTED:github-token]"
    assert leaks(json.dumps(fact), values) == []
    facts = mcp.ok("mempalace_kg_query", {"entity": "release bot"})
    assert "[REDACTED:github-token]" in json.dumps(facts)
    assert leaks(json.dumps(facts), values) == []
    assert raw_leaks(palace, values) == []


def test_mine_redacts_speakers_and_refuses_files_named_with_secrets(
    tmp_path: Path, embedder: Any
) -> None:
    slack, google, akid = slack_token(), "AIzaSy" + rand(33), aws_key_pair()[0]
    values = {"slack": slack, "google": google, "aws": akid}
    chats = tmp_path / "chats"
    shutil.copytree(Path(__file__).resolve().parent.parent / "examples/convos/slack", chats)
    users = chats / "users.json"
    users.write_text(
        users.read_text(encoding="utf-8").replace("Alice Moreau", f"Alice {slack}"),
        encoding="utf-8",
    )
    (chats / f"pairing {google}.md").write_text(
        "> How do we ship the petrel build?\nTag it and the pipeline does the rest.\n",
        encoding="utf-8",
    )
    palace = tmp_path / "palace"
    report = run_json("--palace", palace, "mine", chats, "--mode", "convos")
    reasons = {s["file"]: s["reason"] for s in report["skipped"]}
    assert reasons[f"pairing {google}.md"].startswith(
        "its file name holds a secret (gcp-api-key): not mined"
    )
    assert "rename it" in reasons[f"pairing {google}.md"]
    hit = search_cli(palace, "Consumer lag on the orders topic")[0]
    assert "[REDACTED:slack-token]" in json.dumps(hit)

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / f"n-{akid}.md").write_text("The shearwater cache warms at six.\n", encoding="utf-8")
    (notes / "plain.md").write_text("The fulmar cache warms at seven.\n", encoding="utf-8")
    report = run_json("--palace", palace, "mine", notes)
    assert report["mined_files"] == ["plain.md"]
    assert {s["file"]: s["reason"] for s in report["skipped"]}[f"n-{akid}.md"].startswith(
        "its file name holds a secret (aws-access-key)"
    )
    drawers = run("--palace", palace, "drawers", "--json").stdout
    assert leaks(drawers, values) == []  # the report names the file: the user must see it
    assert raw_leaks(palace, values) == []
