#!/bin/sh
# Streams one answer from the OpenAI-compatible facade as server-sent events.
# Run: sh examples/curl.sh
# Another gateway: SLUICE_URL=https://sluice.internal:8443 sh examples/curl.sh
# A stream that ends without "data: [DONE]" failed: its last event is {"error": ...}.
curl --silent --show-error --no-buffer "${SLUICE_URL:-http://127.0.0.1:8080}/v1/chat/completions" \
  -H 'content-type: application/json' \
  -d '{"model":"demo","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello"}]}'
