"""Reading and writing files safely: JSON Lines, strict CSV, checked and atomic outputs, allowed folders; where caches live (``cache``) and the key-value cache base (``kvcache``)."""
