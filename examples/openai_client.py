#!/usr/bin/env python3
"""Use the official `openai` Python client against struxd's HTTP API.

Run (server first):
    build/struxd --model MODEL_DIR --http 127.0.0.1:8400 &
    .venv/bin/pip install openai        # already in the repo venv
    .venv/bin/python examples/openai_client.py http://127.0.0.1:8400/v1

Structured output with response_format json_schema (the schema is enforced
exactly by the decoder, then re-checked), and the same request streamed.
"""
import json
import sys

from openai import OpenAI

base = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8400/v1"
client = OpenAI(base_url=base, api_key="not-needed")

with open("schemas/meeting.json", encoding="utf-8") as f:
    schema = json.load(f)
with open("schemas/samples/meeting.txt", encoding="utf-8") as f:
    email = f.read()

resp = client.chat.completions.create(
    model=client.models.list().data[0].id,
    messages=[{"role": "system", "content": "Extract the meeting from the email."},
              {"role": "user", "content": email}],
    response_format={"type": "json_schema",
                     "json_schema": {"name": "meeting", "schema": schema, "strict": True}},
    max_tokens=400, temperature=0)
choice = resp.choices[0]
print("finish:", choice.finish_reason, "| usage:", resp.usage.prompt_tokens, "prompt,",
      resp.usage.completion_tokens, "completion tokens")
print(json.dumps(json.loads(choice.message.content), indent=2, ensure_ascii=False))

print("streamed:", end=" ", flush=True)
stream = client.chat.completions.create(
    model="strux", messages=[{"role": "user", "content": email}],
    response_format={"type": "json_object"}, max_tokens=64, stream=True)
for chunk in stream:
    if chunk.choices and chunk.choices[0].delta.content:
        print(chunk.choices[0].delta.content, end="", flush=True)
print()
