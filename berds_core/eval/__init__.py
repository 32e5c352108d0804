"""Measuring: measures by name (MRecall@k, P@k, the TREC diversity measures), the evaluation suite, significance, leaning."""
