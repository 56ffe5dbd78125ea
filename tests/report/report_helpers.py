"""Constants shared by the report-format tests (a unique module name: several folders have a conftest)."""

# written into the edited trace: JSON-safe (no quote, no backslash), hostile in Markdown and HTML
EVIL_FUNCTION = "<b>f|`x`</b>"
EVIL_REASON = "Call <script>alert(3)</script> | ``` to graph_break"
