#!/bin/sh
# Drive kit's real hook through one Claude Code session, as Claude Code would: after each tool
# call it sends a PostToolUse event; when the agent wants to end its turn, a Stop event.
#
#   context N              the session's latest API call now holds N tokens of context
#   event NAME [ACTIVE]    send one hook event to `kit hook claude` (ACTIVE: stop_hook_active,
#                          true when Claude Code is continuing because a Stop hook blocked)
#
# The hook's replies are printed, one per line (an empty line: it had nothing to say).
T=session.jsonl
context() {
  printf '{"type":"assistant","sessionId":"s7","uuid":"u%s","timestamp":"2026-10-01T08:59:00Z","requestId":"r%s","message":{"id":"m%s","model":"claude-opus-4-6","role":"assistant","content":[{"type":"text","text":"working"}],"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":%s,"output_tokens":0}}}\n' "$1" "$1" "$1" "$1" >> "$T"
}
event() {
  printf '{"hook_event_name":"%s","session_id":"s7","transcript_path":"%s","stop_hook_active":%s}\n' "$1" "$T" "${2:-false}" | kit hook claude
  echo
}
: > "$T"

context 40000
event PostToolUse

# The check's replay script is already here and writable: make it build the replay itself.
cat > .check/replay.sh <<'END'
rm -rf .check/replay && mkdir -p .check/replay/longrun && cd .check/replay || exit 1
printf '%s\n' '{"hookSpecificOutput":{"additionalContext":"Checkpoint"}}' '{"hookSpecificOutput":{"additionalContext":"run `kit handoff save` now"}}' '{"hookSpecificOutput":{"additionalContext":"Wrap up"}}' '{"decision":"block"}' > replies
for a in checkpoint:50 handoff:70 wrap_up:85 stop_blocked:85 stop_allowed:85; do
  printf '{"event":"hook","action":"%s","band":%s}\n' "${a%:*}" "${a#*:}" >> longrun/journal.jsonl
done
END
