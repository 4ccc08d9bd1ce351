"""One name rule for wings and rooms, on write and on read.

Writes file a wing or room under its normalised form (`Team Notes` -> `team_notes`). Reads
apply the same rule: a name is taken as given when the palace has it (palaces made by MemPalace
may hold names we would not produce), otherwise in its normalised form. A read filter that
matches nothing comes back with a hint naming the closest names the palace does have.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.common.naming import normalize_name
from mempalace_cli.miners.secrets import redact

_HAS_WORD = re.compile(r"\w", re.UNICODE)


def name_to_file(value: object, field: str) -> str:
    """The stored form of a wing or room name given for a write; refuses blanks and names
    with no letters or digits (they would all collapse into one shared name)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(
            f"The {field} is empty.",
            hint=f"Name the {field} with letters or digits, e.g. 'myapp' or 'decisions'.",
        )
    if not _HAS_WORD.search(value):
        raise InvalidInputError(
            f"The {field} {value!r} has no letters or digits, so it can't be told apart from "
            "other names.",
            hint=f"Name the {field} with at least one letter or digit.",
        )
    found = redact(value)
    if found.findings:
        raise InvalidInputError(
            f"The {field} looks like it holds a secret ({found.findings[0].kind}): "
            "nothing was filed.",
            hint=f"Pick another {field} name, one without a key, token or password in it.",
        )
    return normalize_name(value)


def name_to_read(
    value: str | None, known: Iterable[str], field: str = "wing or room"
) -> str | None:
    """The stored name a read filter means: as given when the palace has it, else normalised.
    None means "no filter". A blank name, or one with no letter or digit (it would normalise to
    `general` and read that room), is refused as on a write; `field` ("wing", "room") names
    the filter in the message."""
    if value is None:
        return None
    leave_out = (
        f"leave {_FLAGS.get(field, '--wing/--room')} out (over MCP: omit {field} or pass null) "
        f"to read every {field}"
    )
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(
            f"The {field} to read is empty.",
            hint=f"Name a {field} from `mempalace status`, or {leave_out}.",
        )
    names = set(known)
    if value in names:
        return value
    if not _HAS_WORD.search(value):
        raise InvalidInputError(
            f"No {field} can be named {value!r}: a name needs at least one letter or digit.",
            hint=f"Use a {field} name from `mempalace status`, or {leave_out}.",
        )
    return normalize_name(value)


_FLAGS = {"wing": "--wing", "room": "--room"}


def closest(value: str, known: Iterable[str], n: int = 5) -> list[str]:
    """Names in `known` close to `value` (near spellings, then names containing it); the
    largest few when none is close, so a hint always names something real."""
    names = sorted(set(known))
    key = normalize_name(value) if value.strip() else ""
    near = difflib.get_close_matches(key, names, n=n, cutoff=0.5)
    containing = [k for k in names if key and (key in k or k in key)]
    picked = list(dict.fromkeys(near + containing))[:n]
    return picked or names[:n]


def empty_filter_hint(
    wing: str | None,
    room: str | None,
    wings: Iterable[str],
    rooms_in: dict[str, Iterable[str]],
    other_filters: bool = False,
    asked: tuple[str | None, str | None] = (None, None),
) -> str:
    """Why a filtered read found nothing, naming the closest existing wings or rooms. `asked`
    holds the names as the caller typed them (shown in the message when given)."""
    all_wings = sorted(set(wings))
    if not all_wings:
        return "The palace has no drawers yet. Next: mempalace mine <dir>"
    if wing is not None and wing not in all_wings:
        return (
            f"No wing named {asked[0] or wing!r}. "
            f"Closest wings: {', '.join(closest(wing, all_wings))}. "
            "Use the exact names from mempalace_status (or `mempalace status`)."
        )
    rooms = sorted(
        set(rooms_in.get(wing, ()))
        if wing is not None
        else {r for v in rooms_in.values() for r in v}
    )
    if room is not None and room not in rooms:
        where = f" in wing {wing!r}" if wing is not None else ""
        return f"No room named {room!r}{where}. Closest rooms: {', '.join(closest(room, rooms))}."
    if other_filters:
        return "The wing and room exist, but no drawer there matches the other filters " + (
            "(dates, source_file, max_distance); widen or drop them."
        )
    return "Nothing there matches; try without the wing or room filter."
