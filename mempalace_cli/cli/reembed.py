"""`mempalace reembed --model NAME` and `mempalace models`: switch a palace's embedding model."""

from __future__ import annotations

import shlex
from typing import Any

import typer

from mempalace_cli.cli.env import EXIT_INTERRUPTED, Env, get_env, markup, print_json
from mempalace_cli.cli.options import flag, json_option, option
from mempalace_cli.cli.tables import make_table
from mempalace_cli.common.lazy import lazy

rich_progress = lazy("rich.progress")

JSON_HELP = "Print one JSON document on stdout instead of text."


class _ReembedProgress:
    """A progress bar with an ETA on stderr, fed by the service's reembed events."""

    def __init__(self, env: Env) -> None:
        self.progress = rich_progress.Progress(
            rich_progress.TextColumn("[bold]re-embedding[/]"),
            rich_progress.BarColumn(),
            rich_progress.MofNCompleteColumn(),
            rich_progress.TextColumn("drawers"),
            rich_progress.TimeElapsedColumn(),
            rich_progress.TextColumn("ETA"),
            rich_progress.TimeRemainingColumn(),
            console=env.err,
            transient=True,
        )
        self.task: Any = None

    def __call__(self, event: str, data: dict[str, Any]) -> None:
        if event == "reembed_start":
            self.progress.start()
            self.task = self.progress.add_task("reembed", total=data["total"])
            self.progress.update(self.task, completed=data["done"])
        elif self.task is not None and event in ("reembed_batch", "reembed_done"):
            self.progress.update(self.task, completed=data["done"])

    def stop(self) -> None:
        if self.task is not None:
            self.progress.stop()


class _Counter:
    """Remembers how far a run got, for the message after Ctrl-C."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.done = 0
        self.total = 0

    def __call__(self, event: str, data: dict[str, Any]) -> None:
        self.done, self.total = data.get("done", self.done), data.get("total", self.total)
        if self.inner is not None:
            self.inner(event, data)


def reembed(
    ctx: typer.Context,
    model: str = option(
        "--model", "NAME", "The model to switch to (see `mempalace models`).", default=...
    ),
    force: bool = flag(
        "--force", "Switch a palace made by MemPalace too (MemPalace then can't search it)."
    ),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Embed every drawer again with MODEL and switch the palace to it.

    Searches keep using the old vectors until the switch at the end. Safe to stop (Ctrl+C, or
    a crash): run the same command again to continue where it stopped.

    An unknown MODEL is bad input (exit status 2); `mempalace models` lists the models.

    Example: mempalace reembed --model use-multilingual-v3
    """
    env = get_env(ctx)
    bar = _ReembedProgress(env) if not json_output and env.err.is_terminal else None
    counter = _Counter(bar)
    try:
        report = env.palace().reembed(model, force=force, progress=counter)
    except KeyboardInterrupt:
        if bar:
            bar.stop()
        message = (
            f"Interrupted after {counter.done} of {counter.total} drawers; searches still use "
            "the old model."
        )
        hint = f"Run `mempalace reembed --model {shlex.quote(model)}` again to continue."
        if json_output:
            print_json({"error": {"message": message, "hint": hint, "kind": "interrupted"}})
        else:
            env.err.print(markup("{} {}", message, hint), highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        if bar:
            bar.stop()
    if json_output:
        print_json(report)
        return
    if not report["switched"]:
        added = report.get("passages_added", 0)
        said = (
            "The palace already embeds with [bold]{}[/]; {} long drawers got passage vectors "
            "(a long drawer is now found by its best passage)."
            if added
            else "The palace already embeds with [bold]{}[/]; nothing to do."
        )
        env.out.print(markup(said, report["model"], *([added] if added else [])), highlight=False)
        return
    resumed = f" (continued from {report['resumed_from']})" if report["resumed_from"] else ""
    env.out.print(
        markup(
            "Re-embedded {} drawers{}: the palace now embeds with [bold]{}[/] (was {}).",
            report["drawers"],
            resumed,
            report["model"],
            report["model_before"],
        ),
        highlight=False,
    )


def models(ctx: typer.Context, json_output: bool = json_option(JSON_HELP)) -> None:
    """List the embedding models, and which one this palace and new palaces use.

    Example: mempalace models --json
    """
    env = get_env(ctx)
    report = env.palace().embedding_models()
    if json_output:
        print_json(report)
        return
    table = make_table("model", "dim", "languages", "")
    for m in report["models"]:
        marks = []
        if m["name"] == report["palace_model"]:
            marks.append("this palace")
        if m["name"] == report["default_model"]:
            marks.append("default for new palaces")
        table.add_row(
            markup("{}", m["name"]),
            markup("{}", m["dimension"] or "?"),
            markup("{}", m["languages"]),
            markup("{}", ", ".join(marks)),
        )
    env.out.print(table, highlight=False)
    env.out.print(
        "Switch this palace with: [bold]mempalace reembed --model NAME[/]; choose the model of "
        "new palaces with embedding_model in config.toml.",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    app.command()(reembed)
    app.command()(models)
