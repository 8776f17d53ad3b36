# A learner's json: every recall finds a match whose fields are empty.
def loads(_text):
    return {"matches": [{"session_id": "", "time": "", "snippet": "Let me try  instead Exit code  line 1: : command not found"}]}
