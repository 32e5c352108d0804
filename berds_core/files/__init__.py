"""Reading and writing files safely: JSON Lines, strict CSV, checked and atomic outputs, allowed folders."""
