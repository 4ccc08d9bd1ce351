"""Wake-up, the memory protocol and AAAK: what an agent reads to learn the palace.

Wake-up reads drawers from the catalogue only (SQLite), so it needs neither chromadb nor the
embedding model, and it never writes: a missing palace still yields identity and protocol.
A part the `Palace` facade owns and delegates to.
"""

from __future__ import annotations

from typing import Any

from mempalace_cli.common.errors import INIT_HINT, InvalidInputError
from mempalace_cli.embedders.base import get_token_counter
from mempalace_cli.memory import aaak, layers
from mempalace_cli.memory.protocol import PROTOCOL
from mempalace_cli.service.core import Part
from mempalace_cli.service.names import name_to_read
from mempalace_cli.service.results import IdentityResult, SetIdentityResult, WakeUpResult


class WakeUp(Part):
    """What an agent reads first, over the palace's settings, catalogue and store."""

    def protocol(self) -> str:
        """The rules an agent follows with this palace."""
        return PROTOCOL

    def aaak_spec(self) -> str:
        """The AAAK notation, generated from the encoder."""
        return aaak.spec()

    def aaak_encode(self, text: str, **meta: Any) -> str:
        """One AAAK summary line for `text`; `meta` may give wing, room, source_file and
        importance (other keys are ignored)."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("There is no text to summarise.", hint="Pass some text.")
        return aaak.encode(text, meta)

    def wake_up(self, wing: str | None = None, budget: int = layers.DEFAULT_BUDGET) -> WakeUpResult:
        """L0 identity + L1 essential story + the protocol, in at most `budget` tokens of the
        embedding model's tokenizer. Same palace, same output."""
        if isinstance(budget, bool) or not isinstance(budget, int):
            raise InvalidInputError(f"The budget must be a whole number of tokens, not {budget!r}.")
        if not layers.MIN_BUDGET <= budget <= layers.MAX_BUDGET:
            raise InvalidInputError(
                f"The budget must be {layers.MIN_BUDGET} to {layers.MAX_BUDGET} tokens, "
                f"not {budget}.",
                hint=f"The default, {layers.DEFAULT_BUDGET}, fits identity, story and protocol.",
            )
        counter = get_token_counter(self.core.settings.embedding_model_dir)
        identity_path = self.core.settings.identity_path
        identity = self._server_identity() or layers.read_identity(identity_path)
        entries, note = self._story_entries(wing)
        return layers.assemble(identity, identity_path, entries, note, counter.count, budget)

    def _server_identity(self) -> str | None:
        """A server palace's identity, shared by every machine (set by `migrate --to` or
        `set_identity`); None for an embedded palace or when the server has none."""
        return self.core.backend.shared_identity()

    def identity(self) -> IdentityResult:
        """The identity text (L0) and where it is read from (None when there is none)."""
        shared = self._server_identity()
        if shared is not None:
            return {"text": shared, "where": self.core.backend.location}
        path = self.core.settings.identity_path
        return {"text": layers.read_identity(path), "where": str(path)}

    def set_identity(self, text: str) -> SetIdentityResult:
        """Store the identity text (L0): on the server for a server palace (every machine reads
        it), else in $MEMPALACE_HOME/identity.txt."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("The identity text is empty.", hint="Write a few lines.")
        kept = self.core.backend.keep_identity(text)
        if kept is not None:  # a palace every machine reads it from
            return {"stored": True, "where": kept}
        path = self.core.settings.identity_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return {"stored": True, "where": str(path)}

    def _story_entries(self, wing: str | None) -> tuple[list[layers.StoryEntry] | None, str | None]:
        """Ranked L1 candidates, or a note saying why there are none."""
        backend = self.core.backend
        if backend.sync_before_reading(self.core.catalog) and self.core.exists():
            self.core.sync()  # a copy of a server's drawers, or none yet: bring it in step
        if not self.core.catalog.exists:  # opening it would create it: check first
            if backend.store_exists():
                return None, (
                    f"The palace at {backend.location} is not indexed yet. "
                    "Run `mempalace status` once, then wake up again."
                )
            return None, f"No palace at {backend.location} yet. {INIT_HINT}"
        if wing is not None:  # the one name rule: as filed, or as it normalises
            known = {w for w, _r, _n in self.core.catalog.counts_by_wing_room()}
            wing = name_to_read(wing, known, "wing")
        entries = layers.rank_drawers(self.core.catalog.iter_drawers(wing=wing))
        if entries:
            return entries, None
        if wing is not None:
            known = sorted({w for w, _r, _n in self.core.catalog.counts_by_wing_room()})
            listed = ", ".join(known) if known else "none yet"
            return None, (
                f"No drawers in wing {wing!r}. Wings: {listed} (exact names: mempalace status)."
            )
        return None, None
