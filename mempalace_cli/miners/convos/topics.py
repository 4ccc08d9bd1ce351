"""File each exchange in a room by its topic.

Each room has a list of words; an exchange scores one point per occurrence of any of them
(whole words, case-insensitive, in the user's turn and the reply). The room with the most
points wins if it has at least MIN_HITS; ties go to the room listed first below (the more
specific topics come first). Anything else goes to `general`.
"""

from __future__ import annotations

import re

GENERAL = "general"
MIN_HITS = 2
# Order matters: it breaks ties.
TOPIC_WORDS: dict[str, tuple[str, ...]] = {
    "decisions": (
        "decide",
        "decided",
        "decision",
        "decisions",
        "chose",
        "choose",
        "chosen",
        "agreed",
        "trade-off",
        "tradeoff",
        "trade-offs",
        "tradeoffs",
        "pros and cons",
        "go with",
        "went with",
        "settled on",
        "instead of",
        "alternative",
        "alternatives",
        "rejected",
    ),
    "problems": (
        "bug",
        "bugs",
        "error",
        "errors",
        "exception",
        "traceback",
        "crash",
        "crashes",
        "crashed",
        "broken",
        "fails",
        "failed",
        "failing",
        "failure",
        "fix",
        "fixed",
        "regression",
        "doesn't work",
        "not working",
        "stack trace",
        "timeout",
        "problem",
        "issue",
        "workaround",
    ),
    "architecture": (
        "architecture",
        "design",
        "schema",
        "component",
        "components",
        "module",
        "modules",
        "layer",
        "layers",
        "interface",
        "abstraction",
        "pattern",
        "microservice",
        "microservices",
        "data model",
        "dependency",
        "dependencies",
        "coupling",
        "refactor",
        "structure",
        "pipeline",
    ),
    "planning": (
        "plan",
        "plans",
        "planning",
        "roadmap",
        "milestone",
        "milestones",
        "deadline",
        "timeline",
        "schedule",
        "sprint",
        "priority",
        "priorities",
        "estimate",
        "next week",
        "next step",
        "next steps",
        "todo",
        "goal",
        "goals",
        "phase",
        "launch",
        "release",
    ),
    "technical": (
        "code",
        "function",
        "class",
        "api",
        "database",
        "query",
        "sql",
        "python",
        "javascript",
        "typescript",
        "rust",
        "script",
        "library",
        "install",
        "config",
        "configuration",
        "deploy",
        "server",
        "test",
        "tests",
        "compile",
        "build",
        "docker",
        "git",
        "commit",
        "regex",
        "json",
        "endpoint",
        "command",
        "variable",
        "cli",
        "import",
    ),
}
_TOKEN = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
# One pass over the words: single words by lookup, phrases by their first word.
_SINGLE: dict[str, list[str]] = {}
_PHRASES: dict[str, list[tuple[tuple[str, ...], str]]] = {}
for _room, _words in TOPIC_WORDS.items():
    for _word in _words:
        _parts = tuple(_TOKEN.findall(_word))
        if len(_parts) == 1:
            _SINGLE.setdefault(_parts[0], []).append(_room)
        else:
            _PHRASES.setdefault(_parts[0], []).append((_parts, _room))


def classify(text: str) -> str:
    tokens = _TOKEN.findall(text.lower())
    hits = dict.fromkeys(TOPIC_WORDS, 0)
    for i, token in enumerate(tokens):
        for room in _SINGLE.get(token, ()):
            hits[room] += 1
        for phrase, room in _PHRASES.get(token, ()):
            if tuple(tokens[i : i + len(phrase)]) == phrase:
                hits[room] += 1
    best, best_hits = GENERAL, 0
    for room, n in hits.items():  # in TOPIC_WORDS order, so ties go to the earlier room
        if n > best_hits:
            best, best_hits = room, n
    return best if best_hits >= MIN_HITS else GENERAL
