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

# A 100,000-token auto-compact window in the user's settings: the point drops to 67,000, so the
# bands sit at 33,500, 46,900 and 56,950 and this session's 40,000 already passes the first.
mkdir -p "${CLAUDE_CONFIG_DIR:-$HOME/.claude}"
echo '{"autoCompactWindow": 100000}' > "${CLAUDE_CONFIG_DIR:-$HOME/.claude}/settings.json"
: > "$T"
context 40000
event PostToolUse
context 47000
event PostToolUse
context 57000
event PostToolUse
event Stop
event Stop true
