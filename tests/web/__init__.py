"""The HTTP surfaces: provider, admin, console, declaration, fuzzing; in process and served."""
