"""Process-wide machinery: background jobs, the model-loading lock and the operator's lab-mode switch."""
