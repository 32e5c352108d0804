"""Process-wide machinery: background jobs and the model-loading lock."""
