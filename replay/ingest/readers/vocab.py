"""The record types, subtypes and event types each reader knows by name (closed vocabularies).

What a reader counts as non-context reaches the ingest summary (``ingest --json``'s
``non_context_lines`` keys) and its skip messages reach ``ingest``'s text output: a log's own
value never does. A value outside its format's vocabulary is counted under a neutral name
(``system:other``, ``event_msg:other``, ``session.other``) and a skip says "unknown record
type" without the value.
"""

from __future__ import annotations

# Claude Code ``system`` records that are UI only (``compact_boundary`` starts a partition)
SYSTEM_SUBTYPES = frozenset("""stop_hook_summary turn_duration api_error away_summary local_command bridge_status
    informational microcompact_boundary init status""".split())

# Codex ``event_msg`` payload types (UI events; ``token_count`` carries usage)
CODEX_EVENTS = frozenset("""task_started task_complete turn_started turn_complete turn_aborted user_message
    agent_message agent_message_delta agent_reasoning agent_reasoning_delta agent_reasoning_raw_content
    agent_reasoning_section_break token_count exec_command_begin exec_command_end exec_command_output_delta
    exec_approval_request apply_patch_approval_request patch_apply_begin patch_apply_end mcp_tool_call_begin
    mcp_tool_call_end mcp_list_tools_response web_search_begin web_search_end context_compacted
    thread_rolled_back thread_name_updated collab_agent_spawn_begin collab_agent_spawn_end collab_waiting_begin
    collab_waiting_end collab_close_begin collab_close_end collab_agent_interaction_begin
    collab_agent_interaction_end dynamic_tool_call_request dynamic_tool_call_response error warning
    stream_error background_event session_configured shutdown_complete plan_update entered_review_mode
    exited_review_mode view_image_tool_call get_history_entry_response turn_diff list_custom_prompts_response
    conversation_path undo_started undo_completed item_started item_completed""".split())

# Copilot CLI event types the reader counts as non-context by name; another event of a
# non-context family is "<family>.other" (``session.other``)
COPILOT_EVENTS = frozenset("""session.start session.resume session.model_change session.info session.error
    session.permissions_changed session.truncation session.compaction_start session.compaction_complete
    session.usage_info session.idle session.end session.shutdown session.warning session.context_changed
    session.title_changed session.handoff session.snapshot_rewind session.mode_changed session.plan_changed
    hook.start hook.end permission.requested permission.completed assistant.turn_start assistant.turn_end
    assistant.intent assistant.message_delta assistant.reasoning_delta assistant.reasoning assistant.usage
    abort tool.execution_start tool.execution_partial_result tool.execution_progress tool.user_requested
    system.message user.ack subagent.started subagent.completed subagent.failed subagent.selected""".split())


def copilot_name(t: str) -> str:
    """The name a Copilot CLI non-context event is counted under: itself when known, else its family's ``other``."""
    if t in COPILOT_EVENTS:
        return t
    family = t.split(".", 1)[0] if "." in t else ""
    return family + ".other" if family in ("session", "hook", "permission", "assistant", "tool", "system", "user",
                                           "subagent") else "other"
