"""Reading and writing files safely: JSON Lines, strict CSV, checked and atomic outputs, allowed folders,
folders built whole (a temporary folder renamed when complete: ``build_dir``); where caches live (``cache``) and
the key-value cache base (``kvcache``)."""
