"""A tiny document model (headings, paragraphs, tables, code, collapsible sections, titled sections
of lines) and its renderers: terminal text, GitHub-flavoured Markdown, one self-contained HTML page.

Reports, diffs, bisect and minify verdicts are built once as blocks of plain strings; the renderer
does all the escaping, so no caller can forget it (fxlens.report.markup has the escapes). A report
section is a function of the report dict that returns blocks; every output (text, Markdown, HTML,
the TUI) renders those blocks, and none reads another's rendered text back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fxlens.report.markup import environment_lines, h, md_code, md_details, md_fence, md_table, md_text
from fxlens.report.texttable import tabulate
from fxlens.trace.sanitize import clip


@dataclass(frozen=True)
class Code:
    """Inline code: shown verbatim (a source line, an op name, a command)."""

    text: str


@dataclass(frozen=True)
class Bold:
    """Inline strong text."""

    text: str


#: Markdown / HTML: the rows a long table shows before the rest is folded (Table.fold)
MAX_ROWS = 20

Inline = str | Code | Bold | list  # a list holds several str / Code / Bold pieces


def plain(x: Inline) -> str:
    """An inline as the terminal shows it: its text, no markup (None: empty)."""
    if isinstance(x, list):
        return "".join(plain(p) for p in x)
    if isinstance(x, Code | Bold):
        return x.text
    return "" if x is None else str(x)


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
    """Rows under headers. The terminal shows the first LIMIT rows (all: None) and then MORE, with
    {n} the rows left out; Markdown and HTML show the first FOLD rows and the rest in a collapsible
    section named FOLDED ({n} likewise). NUMBERS: columns of numbers right-aligned in the terminal
    (False: every column as text, left-aligned)."""

    headers: list[str]
    rows: list[list[Inline]]
    limit: int | None = None
    more: str = ""
    fold: int | None = None
    folded: str = ""
    numbers: bool = True

    def text_lines(self) -> list[str]:
        """The table as the terminal shows it (tabulate's "simple" format) and its MORE line."""
        shown = [[plain(c) for c in r] for r in self.rows[: self.limit]]
        out = tabulate(shown, self.headers, disable_numparse=not self.numbers).split("\n")
        left = len(self.rows) - len(shown)
        return out + ([self.more.format(n=left)] if left and self.more else [])

    def as_blocks(self) -> list:
        """The table as Markdown and HTML show it: the rows past FOLD in a collapsible section."""
        if self.fold is None or len(self.rows) <= self.fold:
            return [Table(self.headers, self.rows)]
        rest = Table(self.headers, self.rows[self.fold :])
        return [
            Table(self.headers, self.rows[: self.fold]),
            Details(self.folded.format(n=len(rest.rows)), [rest]),
        ]


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


@dataclass
class Excerpt:
    """A long text (torch's own message, a stack, generated code) the terminal shows in part and
    Markdown and HTML show whole. The terminal: each of HEAD as INDENT spaces, PREFIX and the line
    clipped to CLIP characters (None: whole), then MORE when given (nothing at all when both are
    empty); Markdown and HTML: TEXT as a code block (or BLOCKS, when given) in a collapsible
    section named SUMMARY."""

    text: str
    summary: str
    head: list[str] = field(default_factory=list)
    more: str = ""
    indent: int = 4
    prefix: str = ""
    clip: int | None = None
    lang: str = ""
    blocks: list = field(default_factory=list)

    def text_lines(self) -> list[str]:
        pad = " " * self.indent + self.prefix
        shown = [pad + (x if self.clip is None else clip(x, self.clip)) for x in self.head]
        return shown + ([" " * self.indent + self.more] if self.more else [])

    def as_blocks(self) -> list:
        if self.blocks:
            return [Details(self.summary, self.blocks)]
        return [Details(self.summary, [Pre(self.text, self.lang)])] if self.text else []


@dataclass
class Line:
    """One line of a Section: indented by INDENT spaces in the terminal (Markdown and HTML make it a
    bullet); an ALARM line (a hang risk, a divergence) starts with "!!" and the TUI shows it red.
    TEXT may hold Code pieces (the terminal shows them plain). A JOINS line is a detail of the line
    before it: its own line in the terminal, appended to that line's bullet in Markdown and HTML."""

    text: Inline
    indent: int = 2
    alarm: bool = False
    joins: bool = False

    def shown(self) -> str:
        return ("!! " if self.alarm else "") + plain(self.text)

    def inline(self) -> Inline:
        """The line as Markdown and HTML show it (its Code pieces as code)."""
        return self.shown() if isinstance(self.text, str) else ["!! " if self.alarm else "", self.text]


@dataclass
class Section:
    """A finding as a titled group of lines: in text "NAME (GLOSS): TAIL", its lines indented, a
    blank line; in Markdown and HTML a heading and a bullet list; in the TUI a row whose cells are
    NAME and the first alarm (or first) line, opened to all of them. An empty NAME: lines only."""

    name: str
    # a Table or a Tree: shown whole in every format; an Excerpt: its head in the terminal, whole
    # and folded in Markdown and HTML
    lines: list = field(default_factory=list)
    gloss: str = ""  # what the name means, in parentheses after it
    tail: str = ""  # a short finding on the title line itself
    lead: str = ""  # the headline: above the title in the terminal, first under the heading elsewhere

    @property
    def title(self) -> str:
        if not self.name:
            return ""
        gloss = f" ({self.gloss})" if self.gloss else ""
        return f"{self.name}{gloss}:" + (f" {self.tail}" if self.tail else "")

    def text_lines(self) -> list[str]:
        """The title (when named) and each line as the terminal shows them (no blank line after)."""
        out = ([self.lead] if self.lead else []) + ([self.title] if self.name else [])
        for x in self.lines:
            if isinstance(x, Tree):  # each row indented by its depth under the title
                out += [" " * (2 + 2 * depth) + text for depth, text in x.lines()]
            elif isinstance(x, Table | Excerpt):
                out += x.text_lines()
            else:
                out.append(" " * x.indent + x.shown() if x.text else "")
        return out

    def as_blocks(self) -> list:
        """The section as a heading (when named), its lines as bullets and its tables as tables
        (how Markdown and HTML show it)."""
        out: list = [Heading(3, self.title.rstrip(":"))] if self.name else []
        out += [Para(self.lead)] if self.lead else []
        for x in self.lines:
            if isinstance(x, Tree):
                out.append(x)
            elif isinstance(x, Table | Excerpt):
                out += x.as_blocks()
            elif x.text and x.joins and out and isinstance(out[-1], Bullets):
                before = out[-1].items[-1]  # after a title ("subject:") or a sentence, a space is enough
                out[-1].items[-1] = [before, " " if plain(before).endswith((":", ".")) else "; ", x.inline()]
            elif x.text and out and isinstance(out[-1], Bullets):
                out[-1].items.append(x.inline())
            elif x.text:
                out.append(Bullets([x.inline()]))
        return out


@dataclass
class Mark:
    """A compile id in a tree, with how that compile ended (HTML colours it by OUTCOME, as tlparse
    colours its stack trie); AFTER follows it uncoloured (its ranks)."""

    text: str
    outcome: str = "ok"
    after: str = ""

    def shown(self) -> str:
        return self.text + ("" if self.outcome == "ok" else f" {self.outcome}")


@dataclass
class Tree:
    """An indented tree (the stack trie): rows of (depth, text, marks); MORE, when given, is a last
    row saying what was left out. Text and Markdown show it as indented lines, HTML colours marks."""

    rows: list[tuple[int, str, list[Mark]]] = field(default_factory=list)
    more: str = ""

    def lines(self) -> list[tuple[int, str]]:
        """(depth, plain text) of each row, the marks after a colon."""
        out = [
            (d, text + (": " + ", ".join(m.shown() + m.after for m in marks) if marks else ""))
            for d, text, marks in self.rows
        ]
        return out + ([(0, self.more)] if self.more else [])


# a `quoted` span in a plain string: torch's messages and fxlens's own causes and fixes quote code
# this way, and both renderers show it as code (not as backticks escaped to stay literal); a span
# is not glued to a word or another backtick on its outer sides, so a quote inside a quote
# ("after `Call to `f()``") stays literal text instead of breaking into pieces
_TICKED = re.compile(r"(?<![\w`])`([^`\n]+)`(?![\w`])")


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
    if isinstance(b, Table) and len(folded := b.as_blocks()) > 1:
        return "\n\n".join(_md_block(x) for x in folded)
    if isinstance(b, Table):
        return md_table([md_text(x) for x in b.headers], [[_md_inline(c) for c in r] for r in b.rows])
    if isinstance(b, Pre):
        return md_fence(b.text, b.lang)
    if isinstance(b, Tree):
        return md_fence("\n".join("  " * d + t for d, t in b.lines()), "text")
    if isinstance(b, Details):
        return md_details(b.summary, "\n\n".join(_md_block(x) for x in b.blocks))
    if isinstance(b, Section | Excerpt):
        return "\n\n".join(_md_block(x) for x in b.as_blocks())
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
    if isinstance(b, Table) and len(folded := b.as_blocks()) > 1:
        return "\n".join(_html_block(x) for x in folded)
    if isinstance(b, Table):
        head = "".join(f"<th>{h(c)}</th>" for c in b.headers)
        body = "".join("<tr>" + "".join(f"<td>{_html_inline(c)}</td>" for c in r) + "</tr>" for r in b.rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if isinstance(b, Pre):
        return f"<pre><code>{h(b.text)}</code></pre>"
    if isinstance(b, Tree):
        return f"<pre><code>{_tree_html(b)}</code></pre>"
    if isinstance(b, Details):
        inner = "\n".join(_html_block(x) for x in b.blocks)
        return f"<details><summary>{h(b.summary)}</summary>\n{inner}\n</details>"
    if isinstance(b, Section | Excerpt):
        return "\n".join(_html_block(x) for x in b.as_blocks())
    raise TypeError(f"not a block: {b!r}")


def _tree_html(tree: Tree) -> str:
    """The tree's rows, each mark coloured by its outcome (class o-OUTCOME, see _CSS)."""

    def mark(m: Mark) -> str:
        return f'<span class="o-{m.outcome.replace(" ", "-")}">{h(m.shown())}</span>{h(m.after)}'

    rows = [
        "  " * d + h(text) + (": " + ", ".join(mark(m) for m in marks) if marks else "")
        for d, text, marks in tree.rows
    ]
    return "\n".join(rows + ([h(tree.more)] if tree.more else []))


def to_html(blocks: list, title: str) -> str:
    """One self-contained page: inline CSS, no script, no external resource, everything escaped."""
    body = "\n".join(_html_block(b) for b in blocks)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        # no network: a CSP that allows inline styles only (and no script at all)
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{h(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


# -- text ----------------------------------------------------------------------------------------


def _text_block(b) -> list[str]:
    if isinstance(b, Section | Table | Excerpt):
        return b.text_lines()
    if isinstance(b, Heading):
        return [b.text + ":"]
    if isinstance(b, Para):
        return [plain(b.inline)]
    if isinstance(b, Bullets):
        return ["  " + plain(x) for x in b.items]
    if isinstance(b, Pre):
        return ["  " + x if x else "" for x in b.text.split("\n")]
    if isinstance(b, Details):  # the terminal has nothing to fold: the summary, the body under it
        return [b.summary + ":"] + ["  " + x if x else "" for d in b.blocks for x in _text_block(d)]
    raise TypeError(f"no text rendering for {type(b).__name__}")


def text_lines(blocks: list) -> list[str]:
    """The terminal lines of blocks: each block's lines, then a blank line (a Heading heads the
    blocks after it: no blank line under it; a block that shows nothing in the terminal, none)."""
    out: list[str] = []
    for b in blocks:
        if shown := _text_block(b):  # a block with nothing for the terminal (an Excerpt): no blank
            out += shown + ([] if isinstance(b, Heading) else [""])
    return out
