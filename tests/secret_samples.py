"""Fake secrets for tests/test_secrets.py and benchmarks/secrets_scan.py (no tests here).

Every value is built at run time from random characters and split prefixes, so no string in
the repository looks like a live credential (push protection, scanners), and no two runs use
the same values.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

_RNG = random.SystemRandom()
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
LOWER = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def github_token() -> str:
    return "gh" + "p_" + rand(36)


def aws_key_pair() -> tuple[str, str]:
    return "AK" + "IA" + rand(16, UPPER), rand(40, B64)


def slack_token() -> str:
    return "xo" + "xb-" + rand(12, string.digits) + "-" + rand(13, string.digits) + "-" + rand(24)


def private_key_block(kind: str = "OPENSSH") -> str:
    """A PEM block with `kind` (OPENSSH, RSA, EC, or "" for PKCS#8) and random body lines."""
    head = f"{kind} " if kind else ""
    body = base64.b64encode(b"openssh-key-v1\x00" + _RNG.randbytes(380)).decode()
    lines = [body[i : i + 70] for i in range(0, len(body), 70)]
    return "\n".join(
        [f"-----BEGIN {head}PRIVATE KEY-----", *lines, f"-----END {head}PRIVATE KEY-----", ""]
    )


def jwt() -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return ".".join(
        [part({"alg": "HS256", "typ": "JWT"}), part({"sub": rand(8), "n": 1}), rand(43, URLSAFE)]
    )


@dataclass(frozen=True)
class Sample:
    kind: str  # what the table calls it
    line: str  # the line as it would sit in a note
    value: str  # the part that must not be stored
    caught: bool  # what mempalace does today (the docs table; xfail when False)
    how: str = ""  # which rule catches it, or why it is missed


def samples() -> list[Sample]:
    """One line per secret kind, in the context it usually appears in."""
    gh = github_token()
    pat = "github" + "_pat_" + rand(22) + "_" + rand(59)
    glpat = "gl" + "pat-" + rand(20, URLSAFE)
    akid, sak = aws_key_pair()
    slack = slack_token()
    xapp = "xa" + "pp-1-" + rand(11, UPPER) + "-" + rand(13, string.digits) + "-" + rand(64, HEX)
    stripe = "sk" + "_live_" + rand(24)
    stripe_long = "sk" + "_live_" + rand(99)
    openai_legacy = "sk" + "-" + rand(20) + "T3Blbk" + "FJ" + rand(20)
    openai_proj = "sk" + "-proj-" + rand(100, URLSAFE)
    anthropic = "sk" + "-ant-api03-" + rand(93, URLSAFE) + "AA"
    gcp = "AI" + "za" + rand(35, URLSAFE)
    gocspx = "GOC" + "SPX-" + rand(28, URLSAFE)
    sendgrid = "S" + "G." + rand(22, URLSAFE) + "." + rand(43, URLSAFE)
    twilio = "S" + "K" + rand(32, LOWER)
    mailchimp = rand(32, HEX) + "-us" + str(_RNG.randint(1, 20))
    discord = "M" + rand(23, URLSAFE) + "." + rand(6, URLSAFE) + "." + rand(27, URLSAFE)
    telegram = str(_RNG.randint(10**8, 10**9)) + ":" + "AA" + rand(33, URLSAFE)
    npm = "np" + "m_" + rand(36)
    pypi = "pypi-AgEIcHlwaS5vcmc" + rand(80, URLSAFE)
    hf = "h" + "f_" + rand(34)
    azure_account = rand(86, B64) + "=="
    azure_sb = rand(43, B64) + "="
    azure_client = rand(3) + "8Q~" + rand(34, URLSAFE)
    token = jwt()
    bearer = rand(40, URLSAFE)
    pw = "hunter2-" + rand(8)
    pw_bang = "p!" + rand(10)
    random_api = rand(40, HEX)
    twilio_auth = rand(32, HEX)
    return [
        Sample("GitHub token (ghp_)", f"export GITHUB_TOKEN={gh}", gh, True, "detect-secrets"),
        Sample("GitHub fine-grained token", f"token: {pat}", pat, True, "ours (github_pat_)"),
        Sample("GitLab token", f"glab auth login --token {glpat}", glpat, True, "detect-secrets"),
        Sample("AWS access key id", f"aws_access_key_id = {akid}", akid, True, "detect-secrets"),
        Sample(
            "AWS secret key (unquoted assignment)",
            f"aws_secret_access_key = {sak}",
            sak,
            True,
            "ours (assignment)",
        ),
        Sample("AWS secret key (quoted)", f'aws_secret = "{sak}"', sak, True, "detect-secrets"),
        Sample(
            "AWS secret key, bare in prose",
            f"the new one is {sak} since Monday",
            sak,
            False,
            "no prefix, no keyword: only entropy would tell",
        ),
        Sample(
            "Slack bot token in prose", f"ping {slack} when done", slack, True, "detect-secrets"
        ),
        Sample("Slack app token (xapp-)", f"SLACK_APP={xapp}", xapp, True, "ours"),
        Sample("Stripe live key", f"stripe key {stripe}", stripe, True, "detect-secrets"),
        Sample(
            "Stripe live key, long form",
            f"stripe key {stripe_long}",
            stripe_long,
            True,
            "detect-secrets (+ ours: the whole token)",
        ),
        Sample(
            "OpenAI key (legacy)", f"OPENAI={openai_legacy}", openai_legacy, True, "detect-secrets"
        ),
        Sample("OpenAI project key", f"use {openai_proj} for evals", openai_proj, True, "ours"),
        Sample("Anthropic key", f"ANTHROPIC_API_KEY={anthropic}", anthropic, True, "ours"),
        Sample("Google API key", f"maps key {gcp}", gcp, True, "ours"),
        Sample("Google OAuth client secret", f"client secret {gocspx}", gocspx, True, "ours"),
        Sample("SendGrid key", f"sendgrid {sendgrid}", sendgrid, True, "detect-secrets"),
        Sample("Twilio API key", f"twilio {twilio}", twilio, True, "detect-secrets"),
        Sample("Mailchimp key", f"mailchimp {mailchimp}", mailchimp, True, "detect-secrets"),
        Sample("Discord bot token", f"bot token {discord}", discord, True, "detect-secrets"),
        Sample("Telegram bot token", f"telegram {telegram}", telegram, True, "detect-secrets"),
        Sample("npm token", f"NPM {npm}", npm, True, "ours (npm_ outside .npmrc)"),
        Sample(
            "npm token in .npmrc",
            f"//registry.npmjs.org/:_authToken={npm}",
            npm,
            True,
            "detect-secrets",
        ),
        Sample("PyPI token", f"password = {pypi}", pypi, True, "detect-secrets"),
        Sample("Hugging Face token", f"HF {hf}", hf, True, "ours"),
        Sample("JWT", f"Authorization: Bearer {token}", token, True, "detect-secrets"),
        Sample(
            "Bearer token (opaque)",
            f'curl -H "Authorization: Bearer {bearer}" https://api.example.com',
            bearer,
            True,
            "ours",
        ),
        Sample(
            "Azure storage account key",
            f"DefaultEndpointsProtocol=https;AccountName=x;AccountKey={azure_account};",
            azure_account,
            True,
            "detect-secrets",
        ),
        Sample(
            "Azure Service Bus key",
            f"Endpoint=sb://x.servicebus.windows.net/;SharedAccessKey={azure_sb}",
            azure_sb,
            True,
            "ours",
        ),
        Sample(
            "Azure AD client secret", f"client_secret {azure_client}", azure_client, True, "ours"
        ),
        Sample(
            "Password in a connection URL",
            f"postgres://app:{pw}@db.internal/app",
            pw,
            True,
            "detect-secrets",
        ),
        Sample(
            "Password with ! in a URL",
            f"mysql://root:{pw_bang}@localhost/x",
            pw_bang,
            True,
            "ours (the plugin refuses !$&*+,;)",
        ),
        Sample("PASSWORD= in a note", f"DB_PASSWORD={pw}", pw, True, "ours (assignment)"),
        Sample("Password: in a note", f"Password: {pw}", pw, True, "ours (assignment)"),
        Sample('password = "…" in code', f'password = "{pw}"', pw, True, "detect-secrets"),
        Sample(
            "password in a sentence",
            f"my password is {pw} for now",
            pw,
            False,
            "no assignment: prose is not parsed",
        ),
        Sample(
            "API key with no prefix, in prose",
            f"the weather service key is {random_api}",
            random_api,
            False,
            "no prefix, no keyword: only entropy would tell",
        ),
        Sample(
            "Twilio auth token (hex), in prose",
            f"twilio auth {twilio_auth}",
            twilio_auth,
            False,
            "no prefix, no keyword: only entropy would tell",
        ),
    ]
