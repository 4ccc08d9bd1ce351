"""Secrets never enter the palace.

Two questions, asked wherever text comes in (`mine`, `mine --watch`, chat exports, drawers
filed or edited by hand, diary entries):

- `credential_reason(path, head)`: why a file is a credential by its name, its folder or its
  first bytes (private keys, `.env` files, cloud, registry and cluster logins, keychains,
  browser password stores...), or None. Such a file is skipped whole and reported with that
  reason; `credential_folder_reason` does the same for folders the walk never enters.
- `redact(text, filename)`: the text with each secret value replaced by `[REDACTED:kind]` on
  its own line, and where each was found (kind and line number, never the value). The line
  count and every other character are kept, so chunks keep their line ranges and the rest of
  the text stays searchable.

Token kinds come from detect-secrets (its regex plugins, and its keyword detector with its
file-type rules and false-positive filters). A few narrow patterns of our own cover what it
misses, each noted where it is defined; docs/secrets.md has the measured table. detect-secrets
is imported on first use, so commands that never file text never pay for its import.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import accumulate
from pathlib import PurePath, PurePosixPath
from typing import Any

from mempalace_cli.common.lazy import lazy

# detect-secrets' modules (~0.1 s to import): loaded by the first text screened.
heuristic = lazy("detect_secrets.filters.heuristic")
keyword = lazy("detect_secrets.plugins.keyword")
filetype = lazy("detect_secrets.util.filetype")
# Reading a file to mine it (`read_screened`). Not imported here: miners.project imports
# miners.files, which imports this module, and a process that only files a fact or a diary
# entry needs neither it nor pathspec.
project = lazy("mempalace_cli.miners.project")


class _Lazy:
    """A regex compiled on first use: importing this module compiles none."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return getattr(self._compiled, name)


# What a stored drawer shows in place of a secret value.
MARKER = "[REDACTED:{kind}]"
_MARKER_RE = _Lazy(r"\[REDACTED:[a-z0-9-]+\]")
# The rules in force, recorded per mined folder: when they change (a new version, or
# --keep-secrets given or dropped), the next `mine` reads every file of the folder again.
POLICY = "redact/1"
KEEP_POLICY = "keep"
# Every credential skip reason starts with this (the report lists them apart).
CREDENTIAL = "credential file"
OPT_OUT = "mine with --keep-secrets to file it anyway"
HEAD_CHARS = 65_536  # how much of a file the content rules look at


@dataclass(frozen=True)
class Finding:
    kind: str  # e.g. github-token, aws-access-key, password, private-key
    line: int  # 1-based line of the text it was found on


@dataclass(frozen=True)
class Redaction:
    text: str
    findings: tuple[Finding, ...] = ()

    @property
    def count(self) -> int:
        return len(self.findings)


# -- credential files --------------------------------------------------------------------------
SSH_KEY_NAMES = frozenset(
    "id_rsa id_dsa id_ecdsa id_ed25519 id_ecdsa_sk id_ed25519_sk identity".split()
)
_SSH_KEY_PREFIX = _Lazy(r"^id_(rsa|dsa|ecdsa|ed25519)(_sk)?([_.-].*)?$")
KEY_SUFFIXES = {
    ".pem": "a PEM key or certificate",
    ".key": "a private key",
    ".p8": "a PKCS#8 private key",
    ".p12": "a PKCS#12 key store",
    ".pfx": "a PKCS#12 key store",
    ".pkcs12": "a PKCS#12 key store",
    ".jks": "a Java key store",
    ".keystore": "a Java key store",
    ".bks": "a key store",
    ".ppk": "a PuTTY private key",
    ".kdbx": "a KeePass password database",
    ".kdb": "a KeePass password database",
    ".keychain": "a macOS keychain",
    ".keychain-db": "a macOS keychain",
    ".keyring": "a GNOME keyring",
    ".publishsettings": "Azure publish settings with a management certificate",
    ".tfstate": "Terraform state, which holds resource secrets in plain text",
    ".kubeconfig": "a Kubernetes kubeconfig",
}
NAMED_FILES = {
    ".netrc": "a .netrc login file",
    "_netrc": "a .netrc login file",
    ".pgpass": "a PostgreSQL password file",
    ".my.cnf": "a MySQL client login file",
    ".mylogin.cnf": "a MySQL client login file",
    ".git-credentials": "Git's stored credentials",
    ".htpasswd": "an htpasswd password file",
    ".vault-token": "a Vault token",
    ".boto": "a boto credentials file",
    ".s3cfg": "an s3cmd credentials file",
    ".dockercfg": "Docker registry logins",
    ".terraformrc": "Terraform CLI credentials",
    "terraform.rc": "Terraform CLI credentials",
    "credentials.tfrc.json": "Terraform CLI credentials",
    ".envrc": "a direnv environment file",
    "kubeconfig": "a Kubernetes kubeconfig",
    "application_default_credentials.json": "Google Cloud application-default credentials",
    "credentials.db": "Google Cloud SDK credentials",
    "access_tokens.db": "Google Cloud SDK credentials",
    "legacy_credentials": "Google Cloud SDK credentials",
    "accesstokens.json": "Azure CLI tokens",
    "msal_token_cache.json": "Azure CLI tokens",
    "msal_token_cache.bin": "Azure CLI tokens",
    "service_principal_entries.json": "Azure CLI service principals",
    "login.keychain": "a macOS keychain",
    "secring.gpg": "a GnuPG private keyring",
    "secring.kbx": "a GnuPG private keyring",
    # Browser and mail profiles: saved passwords, cookies, and the keys that decrypt them.
    "login data": "a browser's saved passwords",
    "login data for account": "a browser's saved passwords",
    "cookies.sqlite": "a browser's cookies",
    "local state": "a browser's encryption key",
    "key3.db": "a browser's password key store",
    "key4.db": "a browser's password key store",
    "logins.json": "a browser's saved passwords",
    "signons.sqlite": "a browser's saved passwords",
}
# (folder, file) pairs: a file that is a credential only in that folder.
FOLDER_FILES = {
    (".aws", "credentials"): "AWS credentials",
    (".aws", "config"): "AWS CLI configuration",
    (".docker", "config.json"): "Docker registry logins",
    ("containers", "auth.json"): "container registry logins",
    (".kube", "config"): "a Kubernetes kubeconfig",
    (".cargo", "credentials"): "Cargo registry token",
    (".cargo", "credentials.toml"): "Cargo registry token",
    (".gem", "credentials"): "RubyGems API key",
    ("gh", "hosts.yml"): "GitHub CLI token",
    (".config", "hub"): "GitHub hub token",
}
# Folders whose every file is a credential (each file is reported).
CREDENTIAL_FOLDERS = {
    ".aws": "AWS credentials or cached logins",
    ".azure": "Azure CLI credentials",
}
# Folders never entered (reported once, with a trailing /).
PRUNED_FOLDERS = {
    ".gnupg": "a GnuPG keyring, with private keys",
    ".password-store": "a pass password store",
    ".mozilla": "Firefox profiles, with saved passwords and cookies",
    ".thunderbird": "Thunderbird profiles, with saved passwords",
}
PRUNED_PAIRS = {
    (".config", "gcloud"): "Google Cloud SDK credentials",
    (".config", "google-chrome"): "Chrome profiles, with saved passwords and cookies",
    (".config", "google-chrome-beta"): "Chrome profiles, with saved passwords and cookies",
    (".config", "chromium"): "Chromium profiles, with saved passwords and cookies",
    (".config", "bravesoftware"): "Brave profiles, with saved passwords and cookies",
    (".config", "microsoft-edge"): "Edge profiles, with saved passwords and cookies",
    (".config", "vivaldi"): "Vivaldi profiles, with saved passwords and cookies",
    (".config", "opera"): "Opera profiles, with saved passwords and cookies",
    ("google", "chrome"): "Chrome profiles, with saved passwords and cookies",
    ("microsoft", "edge"): "Edge profiles, with saved passwords and cookies",
    ("mozilla", "firefox"): "Firefox profiles, with saved passwords and cookies",
    ("firefox", "profiles"): "Firefox profiles, with saved passwords and cookies",
    ("thunderbird", "profiles"): "Thunderbird profiles, with saved passwords",
}
# A folder holding one of the first and one more of these is a browser profile, whatever its
# name (one file called Cookies is a recipe; Login Data with Preferences is Chrome).
PROFILE_MARKERS = frozenset({"Login Data", "key4.db", "logins.json", "cookies.sqlite"})
PROFILE_FILES = PROFILE_MARKERS | {"Cookies", "Web Data", "Preferences", "History", "prefs.js"}
# Pairs of folders that are browser profiles only inside an application-data folder
# (~/Library/Application Support/Google/Chrome, AppData/Local/Google/Chrome), never a
# source checkout that happens to sit in google/chrome.
APP_DATA = frozenset({"application support", "appdata", ".config"})
# `.env.example` and friends document the variables without their values: mined (redacted).
ENV_TEMPLATES = (".example", ".sample", ".template", ".dist", ".defaults", ".schema", ".tpl")
# Files named as a bag of secrets (secrets.yaml, credentials.json, passwords.txt...) in a data
# format are skipped whole: the name says what they hold, and redacted they would be a list of
# keys and markers. The same names as notes or code (secrets.md, secrets.py) are mined.
SECRET_STEMS = frozenset("secret secrets credential credentials password passwords".split())
DATA_SUFFIXES = frozenset(
    ".yaml .yml .json .toml .ini .env .txt .csv .xml .properties .conf .cfg .enc".split()
)
RC_WITH_TOKENS = frozenset({".npmrc", ".pypirc", ".yarnrc", ".yarnrc.yml", ".gemrc"})
_RC_TOKEN = _Lazy(
    r"(?im)^\s*(?:\S*:)?_(?:authtoken|auth|password)\s*=|npmauthtoken\s*:|^\s*password\s*[=:]"
)
_KEY_FIRST_LINE = _Lazy(
    r"\A\s*(?:-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d:)"
)
_SERVICE_ACCOUNT = _Lazy(r'"type"\s*:\s*"service_account"')
_REGISTRY_AUTHS = _Lazy(r'"auths"\s*:\s*\{[^}]*"auth"\s*:\s*"[A-Za-z0-9+/=]{8,}')
_KUBECONFIG = (
    _Lazy(r"(?m)^kind:\s*['\"]?Config['\"]?\s*$"),
    _Lazy(r"(?m)^clusters:"),
    _Lazy(r"(?m)^(users|contexts):"),
)


def _reason(what: str, folder: bool = False) -> str:
    kind = "credential folder" if folder else CREDENTIAL
    return f"{kind} ({what}): not mined, so its secrets stay out of the palace; {OPT_OUT}"


def is_credential_reason(reason: str) -> bool:
    return reason.startswith(("credential file", "credential folder"))


def _parts(path: str | PurePath) -> tuple[str, ...]:
    text = str(path).replace("\\", "/")
    return PurePosixPath(text).parts


def credential_folder_reason(path: str | PurePath, entries: Iterable[str] = ()) -> str | None:
    """Why a folder is never entered (a keyring, a password store, browser profiles), or None.
    `entries`: the names in it, when known (a browser profile is known by its files)."""
    what = _folder_rule(_parts(path), entries)
    return _reason(what, folder=True) if what else None


def _folder_rule(parts: tuple[str, ...], entries: Iterable[str] = ()) -> str | None:
    if not parts:
        return None
    name = parts[-1].lower()
    parent = parts[-2].lower() if len(parts) > 1 else ""
    what = PRUNED_FOLDERS.get(name)
    in_app_data = parent == ".config" or any(p.lower() in APP_DATA for p in parts[:-2])
    if what is None and in_app_data:
        what = PRUNED_PAIRS.get((parent, name))
    if what is None:
        names = set(entries)
        if not PROFILE_MARKERS.isdisjoint(names) and len(PROFILE_FILES & names) >= 2:
            what = "a browser profile, with saved passwords and cookies"
    return what


def credential_reason(path: str | PurePath, head: str | bytes | None = None) -> str | None:
    """Why the file at `path` (relative to the mined folder, or absolute) is a credential, or
    None. `head`, the start of its content when read, lets the content rules speak: a private
    key under any name, a kubeconfig, a service-account key, registry logins, an .npmrc or
    .pypirc with a token."""
    parts = _parts(path)
    if not parts:
        return None
    name = parts[-1]
    lower = name.lower()
    folders = [p.lower() for p in parts[:-1]]
    for i in range(len(folders)):  # a file inside a folder the walk never enters
        inside = _folder_rule(parts[: i + 1])
        if inside:
            return _reason(f"inside {inside}")
    what = _name_rule(lower, folders)
    if what is None and head is not None:
        text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
        what = _content_rule(lower, text[:HEAD_CHARS])
    return _reason(what) if what else None


def _name_rule(lower: str, folders: list[str]) -> str | None:
    parent = folders[-1] if folders else ""
    if lower.endswith(".pub"):
        return None
    if lower in SSH_KEY_NAMES or _SSH_KEY_PREFIX.match(lower):
        return "an SSH private key"
    if lower in NAMED_FILES:
        return NAMED_FILES[lower]
    if (parent, lower) in FOLDER_FILES:
        return FOLDER_FILES[(parent, lower)]
    for folder in folders:
        if folder in CREDENTIAL_FOLDERS:
            return CREDENTIAL_FOLDERS[folder]
    if lower == ".env" or lower.startswith(".env."):
        return None if lower.endswith(ENV_TEMPLATES) else "an environment file"
    if lower.endswith(".env") and not lower.endswith(ENV_TEMPLATES):
        return "an environment file"
    suffix = PurePosixPath(lower).suffix
    if suffix in KEY_SUFFIXES:
        return KEY_SUFFIXES[suffix]
    if lower.endswith(".tfstate.backup"):
        return KEY_SUFFIXES[".tfstate"]
    stem = lower.split(".", 1)[0]
    if stem in SECRET_STEMS and suffix in DATA_SUFFIXES:
        return f"a {suffix} file named as secrets"
    if lower.startswith("client_secret") and suffix == ".json":
        return "an OAuth client secret"
    return None


def _content_rule(lower: str, head: str) -> str | None:
    if _KEY_FIRST_LINE.match(head):  # a key under any name (a copied id_rsa, a .txt)
        return "a private key"
    if lower in RC_WITH_TOKENS:
        return f"a {lower} with a registry token" if _RC_TOKEN.search(head) else None
    if _SERVICE_ACCOUNT.search(head) and '"private_key"' in head:
        return "a Google Cloud service-account key"
    if _REGISTRY_AUTHS.search(head):
        return "container registry logins"
    if all(r.search(head) for r in _KUBECONFIG):
        return "a Kubernetes kubeconfig"
    return None


# -- secrets inside text -----------------------------------------------------------------------
# detect-secrets plugins used, with the kind each finding is reported as. Not used: the
# high-entropy string plugins (every git hash and checksum in a note would be redacted), the
# public-IP plugin (an address is no secret) and the private-key plugin (it flags only the
# BEGIN line; the block below redacts the key itself).
LIBRARY_PLUGINS = (
    ("aws", "AWSKeyDetector", "aws-access-key"),
    ("azure_storage_key", "AzureStorageKeyDetector", "azure-storage-key"),
    ("basic_auth", "BasicAuthDetector", "password-in-url"),
    ("discord", "DiscordBotTokenDetector", "discord-token"),
    ("github_token", "GitHubTokenDetector", "github-token"),
    ("gitlab_token", "GitLabTokenDetector", "gitlab-token"),
    ("jwt", "JwtTokenDetector", "jwt"),
    ("mailchimp", "MailchimpDetector", "mailchimp-key"),
    ("npm", "NpmDetector", "npm-token"),
    ("openai", "OpenAIDetector", "openai-key"),
    ("pypi_token", "PypiTokenDetector", "pypi-token"),
    ("sendgrid", "SendGridDetector", "sendgrid-key"),
    ("slack", "SlackDetector", "slack-token"),
    ("stripe", "StripeDetector", "stripe-key"),
    ("telegram_token", "TelegramBotTokenDetector", "telegram-token"),
    ("twilio", "TwilioKeyDetector", "twilio-key"),
    ("artifactory", "ArtifactoryDetector", "artifactory-token"),
    ("square_oauth", "SquareOAuthDetector", "square-secret"),
    ("ibm_cloud_iam", "IbmCloudIamDetector", "ibm-cloud-key"),
    ("ibm_cos_hmac", "IbmCosHmacDetector", "ibm-cos-key"),
    ("softlayer", "SoftlayerDetector", "softlayer-key"),
    ("cloudant", "CloudantDetector", "cloudant-key"),
)
# Where a line may hold a secret, found in one pass over the whole text: every match of a
# plugin's regexes contains one of its literals (read off the regexes of detect-secrets 1.5;
# tests/test_secrets.py checks the prefilter against a scan of every line with every regex).
# A line is scanned only with the regexes whose literals it holds. (case-sensitive literals,
# literals looked for in the lowered text); Discord and Telegram tokens have no literal:
# a looser regex that starts with one finds their lines.
_KEYWORDS = ("key", "pass", "pwd", "pw", "token")
LIBRARY_TRIGGERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "aws": (("A3T", "ABIA", "ACCA", "AKIA", "ASIA"), ("aws",)),
    "azure_storage_key": (("AccountKey=",), ()),
    "basic_auth": (("://",), ()),
    "github_token": (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), ()),
    "gitlab_token": (
        ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "GR1348941", "glcbt-", "glimt-")
        + ("glptt-", "glagent-", "gloas-"),
        (),
    ),
    "jwt": (("eyJ",), ()),
    "mailchimp": (("-us",), ()),
    "npm": (("_authToken=",), ()),
    "openai": (("T3BlbkFJ",), ()),
    "pypi_token": (("pypi-Ag",), ()),
    "sendgrid": (("SG.",), ()),
    "slack": ((), ("xox", "hooks.slack.com")),
    "stripe": (("k_live_",), ()),
    "twilio": (("AC", "SK"), ()),
    "artifactory": (("AKC", *(f"AP{c}" for c in "0123456789ABCDEF")), ()),
    "square_oauth": (("sq0csp-",), ()),
    "ibm_cloud_iam": ((), _KEYWORDS),
    "ibm_cos_hmac": ((), ("key",)),
    "softlayer": ((), (*_KEYWORDS, "softlayer")),
    "cloudant": (("cloudant",), _KEYWORDS),
}
LOOSE_PREFILTERS = {
    "discord": r"\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}",
    "telegram_token": r":[0-9A-Za-z_-]{35}",
}
KEYWORD_TRIGGERS = ("key", "pass", "pwd", "secret", "contrase")  # the keyword detector's words
ASSIGNED_TRIGGERS = ("pass", "pwd", "secret", "token", "key", "credential")  # _ASSIGNED's

# Ours: kinds detect-secrets 1.5.0 misses (measured, docs/secrets.md). Each is a fixed prefix
# or shape published by the issuer, so it does not fire on ordinary words. Then the literals
# every match holds (case-sensitive, lowercase).
EXTRA_TOKENS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    # Fine-grained GitHub tokens (the plugin knows only ghp_/gho_/ghu_/ghs_/ghr_).
    ("github-token", r"github_pat_[A-Za-z0-9_]{22,255}", ("github_pat_",), ()),
    # Anthropic keys, and OpenAI project/service keys without the legacy T3BlbkFJ marker.
    ("anthropic-key", r"(?<![\w-])sk-ant-[a-z]+\d*-[A-Za-z0-9_-]{20,}", ("sk-ant-",), ()),
    (
        "openai-key",
        r"(?<![\w-])sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}",
        ("sk-",),
        (),
    ),
    ("openai-key", r"(?<![\w-])sk-[A-Za-z0-9]{32,}", ("sk-",), ()),
    # Google: API keys, OAuth client secrets, OAuth access tokens.
    ("gcp-api-key", r"(?<![\w-])AIza[0-9A-Za-z_-]{35}", ("AIza",), ()),
    ("gcp-oauth-secret", r"(?<![\w-])GOCSPX-[A-Za-z0-9_-]{28}", ("GOCSPX-",), ()),
    ("gcp-oauth-token", r"(?<![\w-])ya29\.[0-9A-Za-z_-]{20,}", ("ya29.",), ()),
    # Azure: AD client secrets (…8Q~…), Service Bus / Event Hubs keys, SAS signatures.
    (
        "azure-client-secret",
        r"(?<![\w~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}",
        ("Q~",),
        (),
    ),
    ("azure-key", r"(?i)(?<=SharedAccessKey=)[A-Za-z0-9+/=]{40,}", (), ("sharedaccesskey=",)),
    ("azure-sas", r"(?<=[?&]sig=)[A-Za-z0-9%+/=]{30,}", ("sig=",), ()),
    # Slack app-level and rotating tokens (the plugin knows xoxa/b/p/o/s/r).
    ("slack-token", r"(?<![\w-])xapp-\d-[A-Za-z0-9-]{10,}", ("xapp-",), ()),
    ("slack-token", r"(?<![\w-])xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9-]{10,}", ("xoxe",), ()),
    # npm tokens outside an .npmrc line, Stripe test keys, Hugging Face tokens.
    ("npm-token", r"(?<![\w-])npm_[A-Za-z0-9]{36}", ("npm_",), ()),
    ("stripe-key", r"(?<![\w-])(?:sk|rk)_test_[0-9a-zA-Z]{24,}", ("k_test_",), ()),
    ("huggingface-token", r"(?<![\w-])hf_[A-Za-z0-9]{34,}", ("hf_",), ()),
    # Authorization headers (curl -H, HTTP logs): the credential after the scheme.
    (
        "bearer-token",
        r"(?i)(?<![\w-])(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)\s+"
        r"([A-Za-z0-9._~+/=-]{8,})",
        (),
        ("authorization",),
    ),
    # A password in a connection URL: the plugin refuses passwords holding !$&*+,; and the like.
    (
        "password-in-url",
        r"(?i)\b[a-z][a-z0-9+.-]*://[^\s/:@\[\]]+:([^\s/@]+(?:@[^\s/@]+)*)@",
        ("://",),
        (),
    ),
)
# `password=…` and `API_KEY: …` without quotes, in notes and config (not code: there the
# value of an unquoted assignment is an expression). The library's keyword detector needs
# quotes outside its config file types.
_ASSIGNED = _Lazy(
    r"""(?ix)
    (?<![A-Za-z0-9_.-])
    (?P<key>(?:[A-Za-z0-9]+[_.-])*
      (?P<word>pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key
        |private[_-]?key|auth[_-]?key|client[_-]?secret|credentials?)
      (?:[_.-][A-Za-z0-9]+)*)
    ["']?[ \t]*(?P<op>:=|=>|=|:)[ \t]*
    (?P<q>["'`]?)(?P<value>[^\s"'`;,&]{4,})(?P=q)
    (?P<rest>.*)$
    """
)
PLACEHOLDERS = frozenset(
    """true false none null nil yes no required optional changeme change_me example redacted
    hidden secret password passwd pass pwd token xxxx xxxxxx xxxxxxxx todo tbd n/a undefined
    empty your_password your_token your_api_key user username""".split()
)
_ENV_NAME = _Lazy(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
CODE_SUFFIXES = frozenset(
    """.py .pyi .ipynb .js .jsx .mjs .cjs .ts .tsx .vue .svelte .go .rs .java .kt .kts .scala
    .groovy .c .h .cc .cpp .cxx .hpp .hh .m .mm .swift .cs .fs .vb .rb .php .pl .pm .lua .r .jl
    .dart .ex .exs .erl .hrl .hs .ml .mli .clj .cljs .elm .nim .zig .sol""".split()
)
TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=")
_KEY_BEGIN = _Lazy(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_KEY_END = _Lazy(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# A line of a key block: base64 (indented, or quoted with > in markdown), a PEM or PGP
# armor header (Proc-Type: …), or blank. Anything else ends a block cut short.
_KEY_BODY = _Lazy(
    r"^[ \t>]*(?:[A-Za-z0-9+/=]{4,}|(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset):.*)?"
    r"[ \t]*$"
)


@dataclass(frozen=True)
class _Detector:
    kind: str
    pattern: re.Pattern[str]
    extend: bool = True  # grow the match over the token characters that follow it
    check: Callable[[str], bool] | None = None  # the library's own validation, if any
    groups: bool = True  # the value is what the regex captures (else the whole match)


@dataclass
class _Rules:
    tokens: list[_Detector] = field(default_factory=list)
    # literal -> the detectors (indexes in `tokens`, or KEYWORD / ASSIGNED) to run on its line
    by_literal: dict[str, set[int]] = field(default_factory=dict)
    by_lower: dict[str, set[int]] = field(default_factory=dict)
    triggers: Any = None  # the case-sensitive literals, one regex
    triggers_lower: Any = None  # the lowercase ones, for the lowered text
    loose: list[tuple[re.Pattern[str], set[int]]] = field(default_factory=list)
    keyword: Any = None  # the library's KeywordDetector
    keyword_groups: Callable[[str], dict[re.Pattern[str], int]] | None = None
    keyword_filters: tuple[Callable[..., bool], ...] = ()

    def add(self, det: _Detector, cs: Iterable[str], ci: Iterable[str]) -> int:
        self.tokens.append(det)
        index = len(self.tokens) - 1
        self.link(index, cs, ci)
        return index

    def link(self, index: int, cs: Iterable[str], ci: Iterable[str]) -> None:
        for literal in cs:
            self.by_literal.setdefault(literal, set()).add(index)
        for literal in ci:
            self.by_lower.setdefault(literal, set()).add(index)

    def compile_triggers(self) -> None:
        def alternation(literals: Iterable[str]) -> re.Pattern[str]:
            ordered = sorted(literals, key=len, reverse=True)  # the longest literal first
            return re.compile("|".join(map(re.escape, ordered)) or "(?!)")

        self.triggers = alternation(self.by_literal)
        self.triggers_lower = alternation(self.by_lower)

    @property
    def everything(self) -> set[int]:
        return {*range(len(self.tokens)), KEYWORD, ASSIGNED}


KEYWORD, ASSIGNED = -1, -2  # the keyword detector and our assignments, in candidate sets


@cache
def _rules() -> _Rules:
    """The detectors, built once (this is where detect-secrets is imported)."""
    rules = _Rules()
    for module, cls, kind in LIBRARY_PLUGINS:
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)()
        check = getattr(plugin, "is_formally_valid", None)  # JWT: the parts must decode
        # The GitHub and GitLab regexes capture only the prefix (ghp, glpat): the token is the
        # whole match (detect-secrets itself reports "ghp" as the secret).
        groups = module not in ("github_token", "gitlab_token")
        extend = kind not in ("password-in-url", "cloudant-key")
        cs, ci = LIBRARY_TRIGGERS.get(module, ((), ()))
        indexes = {
            rules.add(_Detector(kind, pattern, extend, check, groups), cs, ci)
            for pattern in plugin.denylist
        }
        if module in LOOSE_PREFILTERS:
            rules.loose.append((re.compile(LOOSE_PREFILTERS[module]), indexes))
        elif not cs and not ci:
            raise RuntimeError(f"no prefilter for detect-secrets plugin {module}")
    for kind, pattern, cs, ci in EXTRA_TOKENS:
        rules.add(_Detector(kind, re.compile(pattern), kind != "password-in-url"), cs, ci)
    rules.link(KEYWORD, (), KEYWORD_TRIGGERS)
    rules.link(ASSIGNED, (), ASSIGNED_TRIGGERS)
    rules.compile_triggers()

    rules.keyword = keyword.KeywordDetector()

    def groups_for(filename: str) -> dict[re.Pattern[str], int]:
        return keyword.REGEX_BY_FILETYPE.get(
            filetype.determine_file_type(filename), keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
        )

    rules.keyword_groups = groups_for
    rules.keyword_filters = (
        heuristic.is_sequential_string,
        heuristic.is_potential_uuid,
        heuristic.is_templated_secret,
        heuristic.is_prefixed_with_dollar_sign,
        heuristic.is_not_alphanumeric_string,
    )
    return rules


def preload() -> None:
    """Import detect-secrets now (a long-lived process: before the first write needs it)."""
    _rules()


def redact(text: str, filename: str = "", every_line: bool = False) -> Redaction:
    """`text` with every secret value found replaced by `[REDACTED:kind]`, and the findings.

    Lines stay lines: a value is replaced where it stands, and a private-key block keeps one
    marker on its BEGIN line and leaves its other lines empty. `filename` (its suffix) picks
    the library's rules for the file type; text with no file name is read as notes.
    `every_line`: scan every line with every regex, not only the lines the prefilter picks
    (the tests compare the two)."""
    if not text:
        return Redaction(text)
    rules = _rules()
    lines = text.splitlines(keepends=True)
    has_key = "PRIVATE KEY" in text
    if every_line:
        candidates = dict.fromkeys(range(len(lines)), rules.everything)
    else:
        candidates = _candidate_lines(text, lines, rules)
    if not candidates and not has_key:
        return Redaction(text)
    findings: list[Finding] = []
    out: list[str] = []
    suffix = PurePosixPath(filename.lower()).suffix if filename else ""
    prose = suffix not in CODE_SUFFIXES
    groups = rules.keyword_groups(filename or "notes.md") if rules.keyword_groups else {}
    in_key = False
    for number, line in enumerate(lines, start=1):
        if not in_key and number - 1 not in candidates and not (has_key and "-----" in line):
            out.append(line)
            continue
        body = line.splitlines()[0]  # the line without its line break
        ending = line[len(body) :]
        if in_key:  # inside a private-key block: its lines are emptied
            end = _KEY_END.search(body)
            if end:
                in_key = False
                out.append(body[end.end() :] + ending)
                continue
            if _KEY_BODY.match(body):
                out.append(ending)
                continue
            in_key = False  # not key material: the block was cut short; this line is text
        begin = _KEY_BEGIN.search(body)
        end = _KEY_END.search(body, begin.end()) if begin else None
        marker = MARKER.format(kind="private-key")
        if begin and end:  # a whole key on one line (JSON's "-----BEGIN…\n…-----END…")
            findings.append(Finding("private-key", number))
            body = body[: begin.start()] + marker + body[end.end() :]
        elif begin and not body[begin.end() :].strip():  # a block starts (not a mention)
            findings.append(Finding("private-key", number))
            out.append(body[: begin.start()] + marker + ending)
            in_key = True
            continue
        spans = _spans(body, rules, groups, prose, candidates.get(number - 1, set()))
        if spans:
            body = _replace(body, spans)
            findings.extend(Finding(kind, number) for _, _, kind in spans)
        out.append(body + ending)
    if not findings:
        return Redaction(text)
    return Redaction("".join(out), tuple(findings))


def _candidate_lines(text: str, lines: list[str], rules: _Rules) -> dict[int, set[int]]:
    """The lines (0-based) that hold a trigger literal or a loose prefilter match, each with
    the detectors to run on it."""
    hits: list[tuple[int, set[int]]] = [
        (m.start(), rules.by_literal[m.group()]) for m in rules.triggers.finditer(text)
    ]
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lower case is longer (İ): keep offsets
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    hits += [(m.start(), rules.by_lower[m.group()]) for m in rules.triggers_lower.finditer(lowered)]
    for pattern, indexes in rules.loose:
        hits += [(m.start(), indexes) for m in pattern.finditer(text)]
    if not hits:
        return {}
    starts = list(accumulate((len(line) for line in lines), initial=0))
    found: dict[int, set[int]] = {}
    for pos, indexes in hits:
        found.setdefault(bisect_right(starts, pos) - 1, set()).update(indexes)
    return found


def _spans(
    line: str,
    rules: _Rules,
    groups: dict[re.Pattern[str], int],
    prose: bool,
    which: set[int],
) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each secret value on one line, found by the detectors `which`
    names (indexes in rules.tokens, KEYWORD, ASSIGNED), merged, in order."""
    found: list[tuple[int, int, str, int]] = []  # (start, end, kind, priority)
    for rank in sorted(i for i in which if i >= 0):
        det = rules.tokens[rank]
        for m in det.pattern.finditer(line):
            for start, end in _match_spans(m, det.groups):
                value = line[start:end]
                if det.check is not None and not det.check(value):
                    continue
                if det.kind == "password-in-url" and _placeholder(value):
                    continue  # scheme://user:<password>@host in docs
                if det.extend:
                    while end < len(line) and line[end] in TOKEN_CHARS:
                        end += 1
                found.append((start, end, det.kind, rank))
    if KEYWORD in which:
        found += _keyword_spans(line, rules, groups)
    if prose and ASSIGNED in which:
        found += _assigned_spans(line)
    if not found:
        return []
    markers = [m.span() for m in _MARKER_RE.finditer(line)]
    found = [f for f in found if not any(f[0] < e and s < f[1] for s, e in markers)]
    return _merge(found)


def _match_spans(m: re.Match[str], use_groups: bool = True) -> Iterator[tuple[int, int]]:
    """The value of a match: its non-empty groups (as the library's findall yields them), or
    the whole match with separators (spaces, quotes, `=`, `:`) trimmed off its edges."""
    groups = [i for i in range(1, (m.re.groups or 0) + 1) if use_groups and m.group(i)]
    if groups:
        for i in groups:
            yield m.span(i)
        return
    start, end = m.span()
    text = m.string
    while start < end and text[start] in " \t\"'=:":
        start += 1
    while end > start and text[end - 1] in " \t\"'":
        end -= 1
    if end > start:
        yield start, end


def _keyword_spans(
    line: str, rules: _Rules, groups: dict[re.Pattern[str], int]
) -> list[tuple[int, int, str, int]]:
    """detect-secrets' keyword detector (`password = "…"`, `api_key: …` in config files),
    with the library's default filters for it."""
    out: list[tuple[int, int, str, int]] = []
    for pattern, group in groups.items():
        m = pattern.search(line)
        if not m or not m.group(group):
            continue
        value = m.group(group)
        if any(f(value) for f in rules.keyword_filters) or _placeholder(value):
            continue
        id_like = heuristic.is_likely_id_string(value, line, rules.keyword)
        if id_like or heuristic.is_indirect_reference(line):
            continue
        start, end = m.span(group)
        key = (m.group(1) or "") if pattern.groups else ""
        out.append((start, end, _keyword_kind(key), 1000))
    return out


def _keyword_kind(key: str) -> str:
    return "password" if re.search(r"(?i)pass|pwd|contrase", key) else "secret"


def _assigned_spans(line: str) -> list[tuple[int, int, str, int]]:
    out: list[tuple[int, int, str, int]] = []
    for m in _ASSIGNED.finditer(line):
        value = m.group("value")
        rest = m.group("rest")
        if m.group("op") == ":" and not m.group("q") and rest.strip(" \t.,;)]}"):
            continue  # `Password: is required` is prose; `Password: hunter2` is a value
        if _placeholder(value) or rest[:1] in ("(", "["):
            continue
        key = m.group("key").lower()
        if m.group("word").lower().startswith(("pass", "pwd")):
            kind = "password"
        elif "aws" in key and "secret" in key:
            kind = "aws-secret-key"  # aws_secret_access_key = … (an ~/.aws/credentials line)
        else:
            kind = "secret"
        start, end = m.span("value")
        while end > start and line[end - 1] == ".":  # the sentence's full stop stays
            end -= 1
        out.append((start, end, kind, 2000))
    return out


def _placeholder(value: str) -> bool:
    low = value.lower().strip("<>{}[]()*")
    return (
        low in PLACEHOLDERS
        or _ENV_NAME.fullmatch(value) is not None  # the name of a variable that holds it
        or value.isdigit()
        or len(set(low)) <= 1
        or value[0] in "<{[($%@*"
        or heuristic.is_templated_secret(value)
        or heuristic.is_not_alphanumeric_string(value)
        or heuristic.is_sequential_string(value)
    )


def _merge(found: list[tuple[int, int, str, int]]) -> list[tuple[int, int, str]]:
    """Overlapping spans become one, named by the most specific detector among them (the
    token plugins before the keyword rules)."""
    found.sort()
    merged: list[list[Any]] = []
    for start, end, kind, rank in found:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if rank < last[3]:
                last[2], last[3] = kind, rank
            continue
        merged.append([start, end, kind, rank])
    return [(s, e, k) for s, e, k, _ in merged]


def _replace(line: str, spans: list[tuple[int, int, str]]) -> str:
    parts: list[str] = []
    pos = 0
    for start, end, kind in spans:
        parts.append(line[pos:start])
        parts.append(MARKER.format(kind=kind))
        pos = end
    parts.append(line[pos:])
    return "".join(parts)


# -- what the miners and writers call --------------------------------------------------------
def policy(keep: bool) -> str:
    return KEEP_POLICY if keep else POLICY


def policy_key(root_key: str) -> str:
    return f"secrets:{root_key}"


def policy_changed(catalog: Any, root_key: str, keep: bool, known: Any) -> bool:
    """True when files of this folder were filed under other rules (before this check
    existed, with or without --keep-secrets, or by an older rule set): every file is read
    again, and those whose secrets are now handled differently are filed again."""
    if not known or not catalog.exists:
        return False
    return catalog.get_meta(policy_key(root_key)) != policy(keep)


def remember_policy(catalog: Any, root_key: str, keep: bool) -> None:
    if catalog.get_meta(policy_key(root_key)) != policy(keep):
        with catalog.transaction() as conn:
            catalog.set_meta(conn, policy_key(root_key), policy(keep))


def screened_digest(digest: str) -> str:
    """The content hash recorded for a file whose secrets were redacted: not the file's own,
    so a later run under other rules (--keep-secrets, a newer rule set) sees it changed."""
    return hashlib.sha256(f"{digest}\x00{POLICY}".encode()).hexdigest()


def read_screened(path: PurePath, rel: str, max_bytes: int, report: Any) -> Any:
    """`miners.project.read_text_file` with the secrets rules of this run: a credential file
    gives its reason (a skip), a text gives its redacted copy (findings noted in the run's
    report); with `report.keep_secrets`, the file as it is."""
    keep = report.keep_secrets
    why = None if keep else credential_reason(path) or secret_name_reason(rel)
    if why:
        return why
    content = project.read_text_file(path, max_bytes)  # type: ignore[arg-type]
    if keep or not isinstance(content, project.FileText):
        return content
    why = credential_reason(path, content.text[:HEAD_CHARS])
    if why:
        return why
    found = redact(content.text, rel)
    if not found.findings:
        report.secrets.pop(rel, None)
        return content
    report.secrets[rel] = [{"line": f.line, "kind": f.kind} for f in found.findings]
    return replace(content, text=found.text, digest=screened_digest(content.digest))


def secret_name_reason(rel: str) -> str | None:
    """Why a file is not mined because its name (or a folder's, in `rel`, the path under the
    mined folder) holds a secret, or None. Its path is the drawers' source and the key a
    re-mine finds it by, so it is refused rather than filed under a redacted name."""
    parts = _parts(rel)
    for index, part in enumerate(reversed(parts)):
        found = redact(part)
        if found.findings:
            what = "file name" if index == 0 else "folder's name"
            return (
                f"its {what} holds a secret ({found.findings[0].kind}): not mined, so the "
                "secret stays out of the palace; rename it, then run `mempalace mine` again"
            )
    return None


def redact_exchange(exchange: Any, rel: str, report: Any) -> Any:
    """A chat exchange with the secrets in its title and both turns redacted (noted in the
    run's report under the file, the conversation and the exchange number)."""
    changed: dict[str, str] = {}
    entries: list[dict[str, Any]] = []
    title = exchange.title
    for name in ("title", "user", "reply"):
        found = redact(getattr(exchange, name))
        if found.findings:
            changed[name] = found.text
            if name == "title":
                title = found.text
            entries += [{"kind": f.kind, "in": name} for f in found.findings]
    if not changed:
        return exchange
    where = {"conversation": title, "exchange": exchange.index + 1}
    report.secrets.setdefault(rel, []).extend({**where, **e} for e in entries)
    return replace(exchange, **changed)


def secrets_report(
    mined: Iterable[str], found: dict[str, list[dict[str, Any]]], skipped: Iterable[Any], keep: bool
) -> dict[str, Any]:
    """The `secrets` part of a mining report: how many values were redacted in the files this
    run filed, and where (never the value); the files skipped as credentials."""
    where = [{"file": rel, **entry} for rel in dict.fromkeys(mined) for entry in found.get(rel, ())]
    return {
        "kept": keep,
        "redacted": len(where),
        "where": where,
        "credential_files": [s["file"] for s in skipped if is_credential_reason(s["reason"])],
    }


def redact_for_drawer(
    content: str, source_file: str | None = None
) -> tuple[str, str | None, dict[str, int]]:
    """Text filed by hand (add_drawer, update_drawer, diary_write; no opt-out): the redacted
    content and source (a URL may carry a password), and the field their results carry,
    {"secrets_redacted": n}."""
    found = redact(content)
    count = found.count
    if source_file:
        source = redact(source_file)
        source_file, count = source.text, count + source.count
    return found.text, source_file, {"secrets_redacted": count}
