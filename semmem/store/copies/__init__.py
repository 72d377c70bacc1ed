"""Whole partitions copied out and in (``dump``) and the named objects they go to (``objects``):
what backups stand on."""
