"""Wrap the code cells a reader sees to the book's text column, keeping each cell's AST.

    python tests/wrap_cells.py LIMIT chapters/NN_slug.md ...     (the book's LIMIT is 76)

In every code cell that is shown (not tagged remove-input or remove-cell) and has a line longer
than LIMIT characters:

1. a trailing comment that makes a line too long moves onto its own line(s) above it;
2. ``ruff format`` (quotes kept) at LIMIT;
3. a string literal inside brackets that still crosses LIMIT is split at a space into implicitly
   concatenated pieces (same prefix; never inside an f-string's braces);
4. the cell's AST must be unchanged (comments aside), else the cell is left as it was.

Cells with IPython magics are skipped; docstrings and lines it cannot shorten are listed, to
be wrapped by hand.  Then re-execute the chapter (tests/refresh_notebooks.py): nothing it
prints changes.
"""

import ast
import io
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap
import tokenize

LIMIT = int(sys.argv[1])
files = [a for a in sys.argv[2:] if not a.startswith("--")]
RUFF = shutil.which("ruff") or str(pathlib.Path(sys.executable).with_name("ruff"))


def cells(lines):
    i = 0
    while i < len(lines):
        if lines[i].startswith("```{code-cell}"):
            j = i + 1
            opts = []
            if j < len(lines) and lines[j] == "---":
                k = lines.index("---", j + 1)
                opts = lines[j : k + 1]
                j = k + 1
            while j < len(lines) and lines[j].startswith(":"):
                opts.append(lines[j])
                j += 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            start = j
            while not lines[j].startswith("```"):
                j += 1
            yield "\n".join(opts), start, j
            i = j + 1
        else:
            i += 1


def move_comments(src):
    lines = src.split("\n")
    toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    comments = {t.start[0] - 1: t for t in toks if t.type == tokenize.COMMENT}
    out = []
    for i, line in enumerate(lines):
        t = comments.get(i)
        if t and len(line) > LIMIT and line[: t.start[1]].strip():
            code = line[: t.start[1]].rstrip()
            indent = re.match(r"\s*", line).group(0)
            text = t.string.lstrip("#").strip()
            out += [indent + "# " + w for w in textwrap.wrap(text, LIMIT - len(indent) - 2)]
            out.append(code)
        elif t and len(line) > LIMIT and not line[: t.start[1]].strip():
            indent = line[: t.start[1]]
            text = t.string.lstrip("#").strip()
            out += [indent + "# " + w for w in textwrap.wrap(text, LIMIT - len(indent) - 2)]
        else:
            out.append(line)
    return "\n".join(out)


def ruff(src):
    r = subprocess.run(
        [
            RUFF,
            "format",
            "--isolated",
            "--config",
            'format.quote-style="preserve"',
            "--line-length",
            str(LIMIT),
            "--stdin-filename",
            "cell.py",
            "-",
        ],
        input=src,
        capture_output=True,
        text=True,
    )
    if r.returncode:
        raise ValueError(r.stderr)
    return r.stdout.rstrip("\n")


def split_strings(src):
    for _ in range(50):
        lines = src.split("\n")
        toks = list(tokenize.generate_tokens(io.StringIO(src + "\n").readline))
        depth, done = 0, True
        for t in toks:
            if t.type == tokenize.OP and t.string in "([{":
                depth += 1
            elif t.type == tokenize.OP and t.string in ")]}":
                depth -= 1
            elif (
                t.type == tokenize.STRING
                and depth > 0
                and t.start[0] == t.end[0]
                and len(lines[t.start[0] - 1]) > LIMIT
                and t.end[1] > LIMIT
            ):
                new = split_one(t, lines[t.start[0] - 1])
                if new:
                    lines[t.start[0] - 1 : t.start[0]] = new
                    src, done = "\n".join(lines), False
                    break
        if done:
            return src
    return src


def split_one(t, line):
    m = re.match(r"([rRbBfFuU]*)('''|\"\"\"|'|\")", t.string)
    if not m or len(m.group(2)) == 3:
        return None
    prefix, q = m.groups()
    body = t.string[len(prefix) + 1 : -1]
    col = t.start[1]
    room = LIMIT - col - len(prefix) - 2  # chars of body that fit on the first line
    # split positions: after a space, outside f-string braces, not after a backslash
    depth, best = 0, None
    for k, ch in enumerate(body):
        if "f" in prefix.lower():
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
        if ch == " " and depth == 0 and k + 1 <= room and k + 1 < len(body) and body[k - 1] != "\\":
            best = k + 1
    if best is None:
        return None
    first, rest = body[:best], body[best:]
    if "f" in prefix.lower() and ("{" not in first and "}" not in first):
        p1 = prefix.replace("f", "").replace("F", "")
    else:
        p1 = prefix
    if "f" in prefix.lower() and ("{" not in rest and "}" not in rest):
        p2 = prefix.replace("f", "").replace("F", "")
    else:
        p2 = prefix
    # a {{ }} escape only means a brace in an f-string: keep f where braces remain
    if "{{" in first or "}}" in first:
        p1 = prefix
    if "{{" in rest or "}}" in rest:
        p2 = prefix
    head = line[:col] + p1 + q + first + q
    tail = " " * col + p2 + q + rest + q + line[t.end[1] :]
    return [head, tail]


def same(a, b):
    try:
        return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except SyntaxError:
        return False


for f in files:
    p = pathlib.Path(f)
    lines = p.read_text().split("\n")
    edits = []
    for opts, a, b in cells(lines):
        hidden = "remove-input" in opts or "remove-cell" in opts
        src = "\n".join(lines[a:b]).rstrip("\n")
        if hidden or not any(len(line) > LIMIT for line in src.split("\n")):
            continue
        if any(line.lstrip().startswith(("!", "%")) for line in src.split("\n")):
            print(f"{p.name}:{a + 1} skipped (magics)")
            continue
        try:
            new = split_strings(ruff(move_comments(src)))
        except (ValueError, tokenize.TokenError, IndentationError) as e:
            print(f"{p.name}:{a + 1} failed: {str(e)[:100]}")
            continue
        if not same(src, new):
            print(f"{p.name}:{a + 1} AST changed, left alone")
            continue
        left = [line for line in new.split("\n") if len(line) > LIMIT]
        if left:
            print(f"{p.name}:{a + 1} still {len(left)} long: {left[0].strip()[:70]}")
        edits.append((a, b, new.split("\n")))
    for a, b, new in reversed(edits):
        lines[a:b] = new
    if edits:
        p.write_text("\n".join(lines))
