"""The local OpenAI-compatible server the docs and pages tell users to start, and the spec that names it.

One place for the exact command and spec shown by the Answers and Which side wins?
pages, the README and the docs (tests check that they agree)::

    vllm serve Qwen/Qwen2-1.5B-Instruct --host 127.0.0.1 --port 8000
    openai:Qwen/Qwen2-1.5B-Instruct@http://127.0.0.1:8000

vLLM returns the prompt and next-token log-probabilities that P.D., D.A. and
the Yes/No decisions read. Without a GPU, llama.cpp's server answers the same
API with a quantised copy of the same model (chat and next-token
log-probabilities; not the prompt log-probabilities P.D. needs).
"""
from __future__ import annotations

MODEL = "Qwen/Qwen2-1.5B-Instruct"
HOST, PORT = "127.0.0.1", 8000
COMMAND = f"vllm serve {MODEL} --host {HOST} --port {PORT}"
SPEC = f"openai:{MODEL}@http://{HOST}:{PORT}"
CPU_COMMAND = f"llama-server -hf Qwen/Qwen2-1.5B-Instruct-GGUF:Q4_K_M --host {HOST} --port {PORT}"
