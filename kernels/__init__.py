"""Headers that numdyn's generated C includes (shipped as package data)."""
