"""A tiny document model (headings, paragraphs, tables, code, collapsible sections) and its two
renderers: GitHub-flavoured Markdown and one self-contained HTML page.

Reports, diffs, bisect and minify verdicts are built once as blocks of plain strings; the renderer
does all the escaping, so no caller can forget it (fxlens.report.markup has the escapes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fxlens.report.markup import environment_lines, h, md_code, md_details, md_fence, md_table, md_text


@dataclass(frozen=True)
class Code:
    """Inline code: shown verbatim (a source line, an op name, a command)."""

    text: str


@dataclass(frozen=True)
class Bold:
    """Inline strong text."""

    text: str


Inline = str | Code | Bold | list  # a list holds several str / Code / Bold pieces


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Para:
    inline: Inline


@dataclass
class Bullets:
    items: list[Inline]


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Inline]]


@dataclass
class Pre:
    """A code block (a graph, guards, a reproducer)."""

    text: str
    lang: str = ""


@dataclass
class Details:
    """A collapsible section (closed until clicked; works without JavaScript)."""

    summary: str
    blocks: list = field(default_factory=list)


# a `quoted` span in a plain string: torch's messages and fxlens's own causes and fixes quote code
# this way, and both renderers show it as code (not as backticks escaped to stay literal)
_TICKED = re.compile(r"`([^`\n]+)`")


def code_spans(text: str) -> list:
    """TEXT as str and Code pieces, each `quoted` span a Code; [TEXT] when it quotes nothing."""
    out: list = []
    at = 0
    for m in _TICKED.finditer(text):
        if m.start() > at:
            out.append(text[at : m.start()])
        out.append(Code(m[1]))
        at = m.end()
    return out + [text[at:]] if at < len(text) or not out else out


def environment_blocks(env: dict) -> list:
    """The environment block every bug report ends with (torch, triton, python, platform, device)."""
    return [Heading(3, "Environment"), Table(["", ""], [[k, Code(v)] for k, v in environment_lines(env)])]


# -- Markdown ------------------------------------------------------------------------------------


def _md_inline(x: Inline) -> str:
    if isinstance(x, list):
        return "".join(_md_inline(p) for p in x)
    if isinstance(x, Code):
        return md_code(x.text)
    if isinstance(x, Bold):
        return f"**{md_text(x.text)}**"
    if "`" in str(x) and len(pieces := code_spans(str(x))) > 1:
        return "".join(md_code(p.text) if isinstance(p, Code) else md_text(p) for p in pieces)
    return md_text(x)


def _md_block(b) -> str:
    if isinstance(b, Heading):
        return "#" * b.level + " " + md_text(b.text)
    if isinstance(b, Para):
        return _md_inline(b.inline)
    if isinstance(b, Bullets):
        return "\n".join("- " + _md_inline(i) for i in b.items)
    if isinstance(b, Table):
        return md_table([md_text(x) for x in b.headers], [[_md_inline(c) for c in r] for r in b.rows])
    if isinstance(b, Pre):
        return md_fence(b.text, "text" if b.lang == "trie" else b.lang)
    if isinstance(b, Details):
        return md_details(b.summary, "\n\n".join(_md_block(x) for x in b.blocks))
    raise TypeError(f"not a block: {b!r}")


def to_markdown(blocks: list) -> str:
    """GitHub-flavoured Markdown; every string escaped (see fxlens.report.markup)."""
    return "\n\n".join(_md_block(b) for b in blocks).rstrip() + "\n"


# -- HTML ----------------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 -apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#1f2328}
h1,h2,h3{border-bottom:1px solid #d1d9e0;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0}th,td{border:1px solid #d1d9e0;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f6f8fa}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f6f8fa}
code{padding:1px 4px;border-radius:4px}pre{padding:8px;overflow:auto;border-radius:6px}
details{margin:.4em 0}summary{cursor:pointer;font-weight:600}
.o-ok{color:#1a7f37}.o-recompile{color:#9a6700;font-weight:600}.o-graph-break{color:#bc4c00}
.o-failed{color:#cf222e;font-weight:600}.o-restart{color:#8250df}
""".strip()


def _html_inline(x: Inline) -> str:
    if isinstance(x, list):
        return "".join(_html_inline(p) for p in x)
    if isinstance(x, Code):
        return f"<code>{h(x.text)}</code>"
    if isinstance(x, Bold):
        return f"<strong>{h(x.text)}</strong>"
    if "`" in str(x) and len(pieces := code_spans(str(x))) > 1:
        return "".join(f"<code>{h(p.text)}</code>" if isinstance(p, Code) else h(p) for p in pieces)
    return h(x)


def _html_block(b) -> str:
    if isinstance(b, Heading):
        n = min(max(b.level, 1), 6)
        return f"<h{n}>{h(b.text)}</h{n}>"
    if isinstance(b, Para):
        return f"<p>{_html_inline(b.inline)}</p>"
    if isinstance(b, Bullets):
        return "<ul>" + "".join(f"<li>{_html_inline(i)}</li>" for i in b.items) + "</ul>"
    if isinstance(b, Table):
        head = "".join(f"<th>{h(c)}</th>" for c in b.headers)
        body = "".join("<tr>" + "".join(f"<td>{_html_inline(c)}</td>" for c in r) + "</tr>" for r in b.rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if isinstance(b, Pre):
        code = _trie_html(b.text) if b.lang == "trie" else h(b.text)
        return f"<pre><code>{code}</code></pre>"
    if isinstance(b, Details):
        inner = "\n".join(_html_block(x) for x in b.blocks)
        return f"<details><summary>{h(b.summary)}</summary>\n{inner}\n</details>"
    raise TypeError(f"not a block: {b!r}")


# a compile id in the stack trie and its outcome (none: ok), as fxlens.report.stacktrie writes them
_TRIE_ID = re.compile(r"(?<![\w/])(\d+/\d+)( (?:recompile|graph break|failed|restart))?(?=[,( ]|$)", re.M)


def _trie_html(text: str) -> str:
    """The stack trie, each compile id coloured by its outcome, as tlparse colours its trie."""
    out, at = [], 0
    for m in _TRIE_ID.finditer(text):
        outcome = (m.group(2) or " ok").strip().replace(" ", "-")
        out.append(h(text[at : m.start()]))
        out.append(f'<span class="o-{outcome}">{h(m.group(0))}</span>')
        at = m.end()
    out.append(h(text[at:]))
    return "".join(out)


def to_html(blocks: list, title: str) -> str:
    """One self-contained page: inline CSS, no script, no external resource, everything escaped."""
    body = "\n".join(_html_block(b) for b in blocks)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        # no network: a CSP that allows inline styles only (and no script at all)
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{h(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
