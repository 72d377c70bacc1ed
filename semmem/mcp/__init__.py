"""semmem over the Model Context Protocol: ``semmem mcp`` (stdio) and ``/mcp`` (streamable HTTP).

The only package that imports the ``mcp`` SDK. Its tools are the provider contract's tool
definitions (``semmem.web.tools``) plus ``recall``; it calls the core through ``Memory``'s
public methods, as the provider endpoint does.
"""
