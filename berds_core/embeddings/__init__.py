"""Text embeddings: the encoder models (precision, device) and the one on-disk store every user of an embedding reads."""
