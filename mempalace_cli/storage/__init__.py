"""Where drawers live: the Chroma store, the SQLite catalogue and keyword index, locks.

Lives here: `backend` (a backend per kind of palace, embedded or on a Chroma server: the
service holds one and never asks which kind it is), `store` (Chroma, embedded or a server),
`chroma_internals` (everything read of Chroma's internals, checked against the supported
chromadb versions), `catalog` (ids, metadata, keyword postings and vectors in SQLite),
`vector_index`, `term_postings`, `lexical_topk`, `filters`, `consistency` (Chroma and the
catalogue agree), `locking` (the one cross-process write lock), `sqlite_db`, `drawer_ids`,
`drawer_rules`, `palace_owner`, `chroma_server`, `server_ledger`, `team_log` and
`side_collection` (a team palace on a Chroma server).

May import: `mempalace_cli.common` and `mempalace_cli.embedders`. Never the service, search
ranking, miners or any front end.
"""
