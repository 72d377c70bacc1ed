"""What the HTTP and MCP surfaces share at run time: the runtime state (``runtime``), tokens and
bindings (``auth``), metrics (``metrics``), the one guard of a served call (``guard``) and the one
tool dispatcher (``dispatch``). Imports no web framework and no MCP SDK.
"""
