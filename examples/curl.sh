#!/usr/bin/env bash
# The HTTP side of struxd with curl: OpenAI-style chat completions with a JSON
# schema (plain and streamed), the native protocol over HTTP, and the ops routes.
#
# Run (server first):
#   build/struxd --model MODEL_DIR --http 127.0.0.1:8400 &
#   examples/curl.sh http://127.0.0.1:8400
set -euo pipefail
base=${1:-http://127.0.0.1:8400}

echo "== POST /v1/chat/completions (json_schema)"
curl -sS "$base/v1/chat/completions" -H 'Content-Type: application/json' -H 'Expect:' -d @- <<'JSON'
{"model": "strux",
 "messages": [{"role": "system", "content": "Extract the contact card."},
              {"role": "user", "content": "Dr. Helena Vasquez, Head of Procurement, Andes Logistics. M: +56 9 8765 4321"}],
 "response_format": {"type": "json_schema",
   "json_schema": {"name": "contact", "strict": true,
     "schema": {"type": "object",
                "properties": {"full_name": {"type": "string"}, "phone": {"type": "string"}},
                "required": ["full_name", "phone"], "additionalProperties": false}}},
 "max_tokens": 64, "temperature": 0}
JSON
echo

echo "== the same, streamed (server-sent events)"
curl -sSN "$base/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":"Any JSON object, please."}],
         "response_format":{"type":"json_object"},"max_tokens":32,"stream":true}'

echo "== POST /v1/strux (native protocol: document + schema file)"
python3 -c 'import json; print(json.dumps({"id": "r1", "schema": json.load(open("schemas/receipt.json")),
    "document": open("schemas/samples/receipt.txt").read(), "max_tokens": 200}))' |
    curl -sS "$base/v1/strux" -H 'Content-Type: application/json' -H 'Expect:' --data-binary @-
echo

echo "== GET /v1/models, /health, /metrics (head)"
curl -sS "$base/v1/models"; echo
curl -sS "$base/health"; echo
curl -sS "$base/metrics" | head -5
