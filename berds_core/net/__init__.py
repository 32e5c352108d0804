"""Where the engine may connect: the model hub (local files first), servers' reachability, the operator's allowed endpoints."""
