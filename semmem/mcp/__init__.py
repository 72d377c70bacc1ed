"""semmem over the Model Context Protocol: ``semmem mcp`` (stdio) and ``/mcp`` (streamable HTTP).

The only package that imports the ``mcp`` SDK. Its tools are the provider contract's tool
definitions (``semmem.protocol.tools``) plus ``recall``, run by the same dispatcher as the
provider endpoint's (``semmem.serving.dispatch``) behind the same request guard.
"""

MCP_PATH = "/mcp"  # where the streamable HTTP transport is served
