"""The wire, apart from any framework: the tools defined once (``tools``), the provider
request envelope (``envelope``), the host declaration (``declaration``), strict JSON
(``jsonio``), the error status table (``status``) and results fitted to the body limit
(``fitting``). Both surfaces, HTTP and MCP, speak through these.
"""
