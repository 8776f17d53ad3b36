"""Scripted model APIs for the real-agents contract suite: the Anthropic Messages API (what
Claude Code 2.1.197 calls) and the OpenAI Responses API (what codex-cli 0.171.0 calls), on
127.0.0.1, Python 3 standard library only.

The wire formats, as issue 12's reference on the real CLIs (real-clis.md §1, kept with the
project's specification, not in this repository) records them and as this file implements them: Messages answers are SSE `message_start` (usage with the input and cache
figures, `output_tokens: 1`), `ping`, per block `content_block_start` / `content_block_delta` /
`content_block_stop`, `message_delta` (stop_reason and final usage), `message_stop`, with a
`request-id` header; a turn `{"error": 400}` answers "prompt is too long", which makes Claude Code
compact reactively. Responses answers are SSE `response.created`, `response.output_item.added` /
`.done` (a `message` or a `function_call`, e.g. `exec_command`), deltas, `response.completed`
with usage.

A script is a list of turns (JSON, see scripts/*.json), served in order to the requests of one
API. A turn:

    {"usage": {"input": 3, "cache_read": 90000, "cache_write": 500, "cache_write_1h": 0,
               "output": 40},
     "text": "...",                                   # optional text block / message
     "tool": {"name": "Write", "input": {...}},       # optional tool call (Messages: tool_use;
                                                      #  Responses: function_call, input = args)
     "expect": "substring the request must hold",     # optional; recorded when it is missing
     "error": 400}                                    # instead of an answer: prompt too long

Claude Code's compaction-summary call is recognised by its prompt and answered from the next
turn with `"summary": true` (or a default summary); other requests take the next turn in order;
when the script is exhausted the answer is a plain `end_turn` text ("Nothing more to do.") with a
one-token usage, recorded as `extra`. Every answered call is appended to `calls` with the usage
figures sent (the ground truth `kit measure` is checked against), the request's model and
whether the request body held each `watch` string.
"""

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SUMMARY_MARKERS = (
    "create a detailed summary of the conversation",
    "Your task is to create a detailed summary",
    "summary of the conversation so far",
)


class Script:
    """The turns of one check, per API, and what was served."""

    def __init__(self, messages=(), responses=(), watch=()):
        self.lock = threading.Lock()
        self.turns = {"messages": list(messages), "responses": list(responses)}
        self.watch = list(watch)
        self.calls = []  # one dict per answered request
        self.requests = []  # raw request bodies (parsed JSON), per API

    def next_turn(self, api, body_text):
        with self.lock:
            queue = self.turns[api]
            if api == "messages" and any(m in body_text for m in SUMMARY_MARKERS):
                for i, t in enumerate(queue):
                    if t.get("summary"):
                        return queue.pop(i), "summary"
                return {"summary": True, "text": "Summary: the work so far.",
                        "usage": {"input": 30000, "output": 200}}, "summary"
            if queue and not queue[0].get("summary"):
                return queue.pop(0), "turn"
            return {"text": "Nothing more to do.", "usage": {"input": 1, "output": 1}}, "extra"

    def record(self, entry):
        with self.lock:
            self.calls.append(entry)


def _u(turn, key):
    return int(turn.get("usage", {}).get(key, 0))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kit-mockapi/1"

    def log_message(self, fmt, *args):  # quiet
        if self.server.verbose:
            super().log_message(fmt, *args)

    def _body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        return raw.decode("utf-8", "replace")

    def _sse_start(self, extra_headers=()):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        self.close_connection = True

    def _event(self, name, data):
        chunk = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
        self.wfile.write(chunk)
        self.wfile.flush()

    def _json(self, status, obj, extra_headers=()):
        raw = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):
        self.server.script_unknown(f"GET {self.path}")
        if self.path.startswith("/v1/models"):
            self._json(200, {"object": "list", "data": [], "models": []})
        else:
            self._json(404, {"error": {"type": "not_found", "message": self.path}})

    def do_POST(self):
        body_text = self._body()
        script = self.server.script
        try:
            body = json.loads(body_text) if body_text else {}
        except ValueError:
            body = {}
        if self.path.startswith("/v1/messages") and "count_tokens" not in self.path:
            script.requests.append(("messages", body))
            return self._messages(script, body, body_text)
        if self.path.startswith("/v1/responses"):
            script.requests.append(("responses", body))
            return self._responses(script, body, body_text)
        self.server.script_unknown(f"POST {self.path}")
        self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

    # -- Messages API --------------------------------------------------------------------

    def _messages(self, script, body, body_text):
        turn, kind = script.next_turn("messages", body_text)
        req_id = "req_" + uuid.uuid4().hex[:24]
        model = body.get("model", "claude-unknown")
        entry = {
            "api": "messages", "kind": kind, "model": model, "request_id": req_id,
            "time": time.time(),
            "watch": {w: (w in body_text) for w in script.watch},
            "expect": turn.get("expect"),
            "expect_met": (turn.get("expect") in body_text) if turn.get("expect") else None,
        }
        if turn.get("error") == 400:
            entry.update(kind="error400", usage=None)
            script.record(entry)
            return self._json(400, {"type": "error", "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 213417 tokens > 200000 maximum"}},
                extra_headers=[("request-id", req_id)])
        if turn.get("delay"):
            time.sleep(float(turn["delay"]))
        msg_id = "msg_" + uuid.uuid4().hex[:24]
        cw5, cw1h = _u(turn, "cache_write"), _u(turn, "cache_write_1h")
        usage = {
            "input_tokens": _u(turn, "input"),
            "cache_creation_input_tokens": cw5 + cw1h,
            "cache_read_input_tokens": _u(turn, "cache_read"),
            "cache_creation": {"ephemeral_5m_input_tokens": cw5, "ephemeral_1h_input_tokens": cw1h},
            "output_tokens": _u(turn, "output") or 1,
            "service_tier": "standard",
        }
        entry.update(usage=dict(usage), message_id=msg_id)
        script.record(entry)
        self._sse_start([("request-id", req_id)])
        start_usage = dict(usage, output_tokens=1)
        self._event("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}})
        self._event("ping", {"type": "ping"})
        index = 0
        if turn.get("text"):
            self._event("content_block_start", {"type": "content_block_start", "index": index,
                        "content_block": {"type": "text", "text": ""}})
            self._event("content_block_delta", {"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": turn["text"]}})
            self._event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        stop = "end_turn"
        if turn.get("tool"):
            tool = turn["tool"]
            tid = "toolu_" + uuid.uuid4().hex[:24]
            entry["tool_use_id"] = tid
            self._event("content_block_start", {"type": "content_block_start", "index": index,
                        "content_block": {"type": "tool_use", "id": tid, "name": tool["name"],
                                          "input": {}}})
            self._event("content_block_delta", {"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta",
                                  "partial_json": json.dumps(tool["input"])}})
            self._event("content_block_stop", {"type": "content_block_stop", "index": index})
            stop = "tool_use"
        self._event("message_delta", {"type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {k: v for k, v in usage.items() if k != "service_tier"}})
        self._event("message_stop", {"type": "message_stop"})

    # -- Responses API -------------------------------------------------------------------

    def _responses(self, script, body, body_text):
        turn, kind = script.next_turn("responses", body_text)
        model = body.get("model", "gpt-unknown")
        resp_id = "resp_" + uuid.uuid4().hex[:24]
        usage = {
            "input_tokens": _u(turn, "input") + _u(turn, "cache_read"),
            "input_tokens_details": {"cached_tokens": _u(turn, "cache_read")},
            "output_tokens": _u(turn, "output") + _u(turn, "reasoning"),
            "output_tokens_details": {"reasoning_tokens": _u(turn, "reasoning")},
        }
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        entry = {
            "api": "responses", "kind": kind, "model": model, "time": time.time(),
            "usage": usage, "watch": {w: (w in body_text) for w in script.watch},
            "expect": turn.get("expect"),
            "expect_met": (turn.get("expect") in body_text) if turn.get("expect") else None,
            "tools": [t.get("name") for t in body.get("tools", []) if isinstance(t, dict)],
        }
        script.record(entry)
        self._sse_start([("x-request-id", resp_id)])
        base = {"id": resp_id, "object": "response", "created_at": int(time.time()),
                "model": model, "status": "in_progress", "output": []}
        self._event("response.created", {"type": "response.created", "response": base})
        outputs = []
        if turn.get("text"):
            item_id = "msg_" + uuid.uuid4().hex[:16]
            item = {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress",
                    "content": []}
            self._event("response.output_item.added", {"type": "response.output_item.added",
                        "output_index": len(outputs), "item": item})
            self._event("response.output_text.delta", {"type": "response.output_text.delta",
                        "item_id": item_id, "output_index": len(outputs), "content_index": 0,
                        "delta": turn["text"]})
            done = dict(item, status="completed",
                        content=[{"type": "output_text", "text": turn["text"], "annotations": []}])
            self._event("response.output_item.done", {"type": "response.output_item.done",
                        "output_index": len(outputs), "item": done})
            outputs.append(done)
        if turn.get("tool"):
            tool = turn["tool"]
            call_id = "call_" + uuid.uuid4().hex[:16]
            item_id = "fc_" + uuid.uuid4().hex[:16]
            args = json.dumps(tool["input"])
            item = {"type": "function_call", "id": item_id, "call_id": call_id,
                    "name": tool["name"], "arguments": "", "status": "in_progress"}
            self._event("response.output_item.added", {"type": "response.output_item.added",
                        "output_index": len(outputs), "item": item})
            self._event("response.function_call_arguments.delta", {
                "type": "response.function_call_arguments.delta", "item_id": item_id,
                "output_index": len(outputs), "delta": args})
            done = dict(item, arguments=args, status="completed")
            self._event("response.output_item.done", {"type": "response.output_item.done",
                        "output_index": len(outputs), "item": done})
            outputs.append(done)
        self._event("response.completed", {"type": "response.completed",
                    "response": dict(base, status="completed", output=outputs, usage=usage)})


class MockServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, verbose=False):
        super().__init__(("127.0.0.1", 0), Handler)
        self.verbose = verbose
        self.script = Script()
        self.unknown = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def load(self, script):
        self.script = script
        return script

    def script_unknown(self, what):
        self.unknown.append(what)

    def stop(self):
        self.shutdown()
        self.server_close()
