"""Where the engine may connect: the model hub (local files first), an OpenAI-compatible server's address and key, servers' reachability, the operator's allowed endpoints."""
