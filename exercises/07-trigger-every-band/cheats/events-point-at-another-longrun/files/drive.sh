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
# Every event names a cwd of mine: low/, whose longrun/ has bands at 25, 30 and 35 % and a journal
# that is a link to the replay's.
L=$PWD/low
mkdir -p low/longrun && printf '[context]\nbands = [25, 30, 35]\n' > low/longrun/config.toml
ln -sf ../../.check/replay/longrun/journal.jsonl low/longrun/journal.jsonl
event() {
  printf '{"hook_event_name":"%s","session_id":"s7","transcript_path":"%s","cwd":"%s","stop_hook_active":%s}\n' "$1" "$PWD/$T" "$L" "${2:-false}" | kit hook claude
  echo
}
: > "$T"
context 42000
event PostToolUse
context 51000
event PostToolUse
context 59000
event PostToolUse
event Stop
event Stop true
rm -rf low/longrun/.hook    # so the replay fires the bands again
