"""The Python blocks of a Markdown page, and a runner that executes them in order.

``python blocks.py PAGE`` (run by tests/docs/test_code_blocks.py in an empty
folder) executes every python block of PAGE in one namespace, in the order they
appear, so a block may use the names and files of the blocks above it. Each
block is compiled under the page's path with its own line numbers, so a
traceback points at the page and line. A block preceded by
``<!-- no-run: reason -->`` is skipped; snippet lines (``--8<-- "path"``,
pymdownx.snippets) are replaced by the file they name, relative to the
repository root.
"""

import re
import sys
import traceback
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)(?P<rest>.*)$")
NO_RUN = re.compile(r"^\s*<!--\s*no-run:\s*(?P<reason>.*?)\s*-->\s*$")
REQUIRES = re.compile(r"<!--\s*requires:\s*(?P<modules>[\w. ]+?)\s*-->")
SNIPPET = re.compile(r'^\s*--8<--\s+"(?P<path>[^"]+)"\s*$')
PYTHON = ("python", "py")


@attrs.frozen
class Block:
    """One fenced code block: where it starts, its language, its code, whether it runs."""

    line: int  # 1-based line of the first code line
    lang: str
    code: str
    no_run_reason: str = ""

    @property
    def runs(self):
        return self.lang in PYTHON and not self.no_run_reason


def _expand_snippets(lines):
    """Replace ``--8<-- "path"`` lines by the named file's lines."""
    out = []
    for line in lines:
        match = SNIPPET.match(line)
        if match:
            out += (ROOT / match["path"]).read_text().splitlines()
        else:
            out.append(line)
    return out


def parse(text):
    """Every fenced block of a Markdown text, with the no-run marker just above it."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, start = len(match["indent"]), i + 1
        above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        no_run = NO_RUN.match(above)
        end = start
        while end < len(lines) and not lines[end].strip().startswith("```"):
            end += 1
        body = _expand_snippets([line[indent:] for line in lines[start:end]])
        reason = no_run["reason"] if no_run else ""
        blocks.append(Block(start + 1, match["lang"], "\n".join(body) + "\n", reason))
        i = end + 1
    return blocks


def required_modules(text):
    """The modules a page says its blocks need (``<!-- requires: a b -->``)."""
    return [name for match in REQUIRES.finditer(text) for name in match["modules"].split()]


def run_page(page):
    """Execute the page's python blocks in order; 0 on success, 1 after a traceback."""
    path = Path(page)
    namespace = {"__name__": "__main__"}
    for block in parse(path.read_text()):
        if not block.runs:
            continue
        # pad so that line numbers in a traceback are the page's
        code = compile("\n" * (block.line - 1) + block.code, str(path), "exec")
        try:
            exec(code, namespace)
        except BaseException:
            traceback.print_exc()
            print(f"\n{path}:{block.line}: this block failed", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(run_page(sys.argv[1]))
