"""``ctxreplay anonymize``: anonymized copies of Claude Code logs, in their original format.

Registered by ``replay/cli/main.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console

from replay.cli.common import (
    CONTEXT_SETTINGS, QUIET_OPTION, dataset_option, echo_json, esc, fail, fail_on, ingest_progress, json_option,
    key_file_option, warn
)

# Unlike the other commands' consoles, these wrap long lines at the terminal width.
err = Console(stderr=True)
out = Console()


def _fail(msg: str) -> None:
    fail(msg, console=err)


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


@click.command("anonymize", context_settings=CONTEXT_SETTINGS)
@click.argument("src", type=click.Path(exists=True, path_type=Path), metavar="IN")
@click.argument("dst", type=click.Path(file_okay=False, path_type=Path), metavar="OUT")
@key_file_option("Master key for hashes and pseudonyms [default: $CTXREPLAY_KEY_FILE or ~/.config/ctxreplay/key]. "
                 "Use the key you ingest with, so path pseudonyms match the trace.")
@dataset_option("Dataset name the per-dataset key is derived for (as in `ctxreplay ingest --dataset`).",
                default="default", show_default=True)
@click.option("--drop-tool-names", is_flag=True,
              help="Replace tool names by keyed pseudonyms (policies that look at tool kinds then see `other`, "
              "and the cache model's task-turn rule no longer sees the task tools).")
@click.option("--drop-arg-keys", is_flag=True, help="Replace tool-input argument names by keyed pseudonyms.")
@click.option("--pseudonymize-mcp", is_flag=True,
              help="Replace MCP server and tool names (mcp__server__tool, serverName, toolName) by keyed "
                   "pseudonyms: they can name private systems. Claude Code's own tools keep their names.")
@click.option("--shift-timestamps", is_flag=True,
              help="Move every timestamp by one keyed per-dataset offset (1-4 years back); gaps are kept exactly.")
@click.option("--path-style", type=click.Choice(["words", "pseudonym"]), default="words", show_default=True,
              help="words: token-preserving word pseudonyms per component (blocks keep their exact token count, so "
                   "policies give the same results; the summary counts the few that could not). pseudonym: paths "
                   "become the trace's path "
                   "pseudonyms (joinable with a trace ingested with the same key; blocks with paths grow ~1%).")
@click.option("--force", is_flag=True, help="Write into OUT even if it already holds files.")
@json_option("Print the summary as JSON.")
@QUIET_OPTION
def anonymize(src: Path, dst: Path, key_file: Path | None, dataset: str, drop_tool_names: bool, drop_arg_keys: bool,
              pseudonymize_mcp: bool,
              shift_timestamps: bool, path_style: str, force: bool, as_json: bool, quiet: bool) -> None:
    """Write anonymized copies of the Claude Code logs under IN into OUT.

    The copies keep the original format (`.jsonl` as JSONL, Stop-hook `.json` as a JSON
    array, `subagents/` layout) so any tool reading Claude Code logs can read them, and
    keep what replay needs: record types, usage, timestamps, model names, tool names,
    argument names, numbers, the parent/tool_use links and, for every text, its exact
    o200k token count and about its size.

    Every text (prompts, answers, thinking, tool results and inputs, attachments,
    summaries) is replaced by keyed filler words (equal texts stay equal); paths, ids,
    session ids, branch names and file names get keyed pseudonyms; secrets are scrubbed
    before anything is derived from a text. Keep the key file private: with it, short
    texts can be confirmed by guessing. Files other than .jsonl/.json are not copied. A
    --key-file (or $CTXREPLAY_KEY_FILE) must exist: only the default key is created on first use.
    """
    from replay.ingest.keys import Keyring, open_master_key
    from replay.privacy.anonymize import anonymize_tree

    if not src.is_dir() and not src.is_file():
        _fail(f"{src} is not a regular file or a folder (a FIFO, device or socket); it is not read")
    if src.is_dir() and _inside(dst, src):
        _fail(f"OUT ({dst}) is inside IN ({src}); choose a directory outside the logs")
    if src.is_dir() and _inside(src, dst):
        _fail(f"IN ({src}) is inside OUT ({dst}); choose another output directory")
    if dst.exists() and any(dst.iterdir()) and not force:
        _fail(f"{dst} already holds files; use --force to write into it anyway")
    with fail_on(ValueError, OSError, console=err):
        keys = Keyring.for_dataset(open_master_key(key_file, warn=warn), dataset)
    # a bar on a terminal; into a pipe or a CI log, a line when it starts, every few seconds and at the end
    progress = ingest_progress("anonymize", disable=quiet or as_json, source=f"from {src}, anonymized into {dst}",
                               console=err)
    with progress, fail_on(ValueError, OSError, console=err):
        s = anonymize_tree(
            src, dst, keys, keep_tool_names=not drop_tool_names, keep_arg_keys=not drop_arg_keys, pseudonymize_mcp=pseudonymize_mcp,
            time_shift=shift_timestamps, path_style=path_style, dataset=dataset,
            on_total=progress.total, on_progress=progress.advance,
        )
    if as_json:
        echo_json(s.as_dict(), default=None)
    else:
        mbps = s.bytes_in / 1e6 / s.seconds if s.seconds else 0.0
        out.print(f"[bold]{s.files}[/] files, {s.records:,} records anonymized into {esc(dst)} "
                  f"in {s.seconds:.1f}s ({mbps:.1f} MB/s)")
        out.print(f"texts replaced: {s.texts_replaced:,} ({s.unique_texts:,} distinct), "
                  f"secrets removed: {s.secrets_removed:,}, ids: {s.ids_replaced:,}, paths: {s.paths_replaced:,}")
        out.print(f"bytes: {s.bytes_in:,} in, {s.bytes_out:,} out")
        if s.blocks_token_mismatch and path_style == "pseudonym":
            out.print(f"{s.blocks_token_mismatch} context blocks carrying a path have more tokens than in the raw log "
                      f"(path pseudonyms are longer than most paths); --path-style words keeps more counts exact")
        elif s.blocks_token_mismatch:  # the fillers of some composite blocks (numbered source lines) do not fit exactly
            out.print(f"{s.blocks_token_mismatch:,} of {s.blocks_checked:,} context blocks differ from their raw token "
                      "count by a few tokens (no filler of exactly their count was found); every other block keeps it")
        if s.lines_dropped:
            out.print(f"[yellow]{s.lines_dropped} lines were not JSON records and were dropped[/]")
        if s.skipped_files:
            out.print(f"{len(s.skipped_files)} file(s) that are not logs were not copied")
        if s.empty_inputs:
            out.print(f"{len(s.empty_inputs)} empty log file(s) (0 bytes or blank) skipped, nothing to anonymize:")
            for f in s.empty_inputs:
                out.print(f"  [yellow]{esc(f)}: empty file, skipped[/]")
        if s.refused:
            out.print(f"{len(s.refused)} log file(s) of another agent's format refused (not copied):")
            for f, reason in s.refused:
                out.print(f"  [yellow]{esc(f)}: {esc(reason)}[/]")
        for f, reason in s.failed:
            out.print(f"  [red]{esc(f)}: {esc(reason)}[/]")
    if s.invalid_utf8:
        out.print(f"{s.invalid_utf8} records had invalid UTF-8 bytes, replaced by U+FFFD (records kept)")
    if s.incomplete:  # a log got no copy (unreadable, or no record could be read): never silent
        err.print(f"[red]error:[/] {len(s.failed)} log file(s) have no anonymized copy: "
                  + ", ".join(esc(f) for f, _ in s.failed[:10]) + (" ..." if len(s.failed) > 10 else ""))
        sys.exit(1)
