#!/usr/bin/python3
"""README.md and docs/*.md against the tree and the binary they describe.

  docs_test.py SOURCE_DIR FLOPWATT [FLOPWATT_BENCH]   check the documentation
  docs_test.py --self-test FLOPWATT                   prove the checks catch a dead link, a dead
                                                      anchor, an unknown command and an unknown flag

Links: every relative link and image resolves to a file of the tree, and a #anchor to a heading
of the file it names (anchors made as GitHub makes them). Commands: every `flopwatt ...` quoted in
a code block or a code span parses: `flopwatt SUBCOMMAND --help` exits 0 and lists each flag the
quote gives; `flopwatt_bench ...` likewise against `flopwatt_bench --help` for its own flags (its
--benchmark_* flags are Google Benchmark's). Parse only: nothing is measured and no hardware is needed. Paths: a code span naming
a file under the tree's own folders (`tests/api/installed_test.py`) names one that exists. README
stays under ~250 lines and opens with the two set-up commands.
"""
import os
import re
import subprocess
import sys
import tempfile
import unicodedata

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
# Where a command starts in a shell line: after env assignments, sudo, or a separator.
CMD_START = re.compile(r"(?:^|&&|\|\||;|\$\(|\|)\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:sudo\s+)?(?:\S*/)?(flopwatt(?:_bench)?)(?=\s|$)")
TREE_DIRS = ("api", "bench", "cmake", "cpu", "docs", "examples", "harness", "npu", "power", "scripts", "sysfs", "tests",
             "workloads", "results/schema", "results/figures")


def slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to '-'."""
    h = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    h = h.replace("`", "").strip().lower()
    out = []
    for c in h:
        if c == " ":
            out.append("-")
        elif c in "-_" or unicodedata.category(c)[0] in "LN":
            out.append(c)
    return "".join(out)


def parse_md(text):
    """(headings' anchors, [(line_no, code_line)], [(line_no, prose_line)]), fenced code apart."""
    anchors, code, prose = set(), [], []
    seen = {}
    fence = None
    for no, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            fence = None if fence and m.group(1).startswith(fence) else (fence or m.group(1))
            continue
        if fence:
            code.append((no, line))
            continue
        prose.append((no, line))
        h = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if h:
            base = slug(h.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            anchors.add(base if n == 0 else f"{base}-{n}")
    return anchors, code, prose


def strip_code_spans(line):
    return SPAN.sub("", line)


def check_links(files, root):
    problems = []
    cache = {}

    def anchors_of(path):
        if path not in cache:
            with open(path, encoding="utf-8") as f:
                cache[path] = parse_md(f.read())[0]
        return cache[path]

    for md in files:
        with open(md, encoding="utf-8") as f:
            _, _, prose = parse_md(f.read())
        for no, line in prose:
            for target in LINK.findall(strip_code_spans(line)):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:
                    continue
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
                where = f"{os.path.relpath(md, root)}:{no}"
                if not os.path.exists(dest):
                    problems.append(f"{where}: dead link {target} ({os.path.relpath(dest, root)} does not exist)")
                elif anchor and dest.endswith(".md") and anchor not in anchors_of(dest):
                    problems.append(f"{where}: dead anchor {target} (no heading '#{anchor}' in "
                                    f"{os.path.relpath(dest, root)})")
    return problems


def commands_in(md):
    """Every quoted command: [line_no, words after the program, "flopwatt" or "flopwatt_bench"]."""
    with open(md, encoding="utf-8") as f:
        _, code, prose = parse_md(f.read())
    found = []
    current = None  # a command whose flags go on in the block's indented lines
    for no, raw in code:
        line = re.sub(r"\s#\s.*$", "", raw)  # a shell comment
        starts = list(CMD_START.finditer(line))
        if starts:
            for i, m in enumerate(starts):
                end = starts[i + 1].start() if i + 1 < len(starts) else len(line)
                current = [no, line[m.end():end].split(), m.group(1)]
                found.append(current)
        elif current is not None and re.match(r"^\s+\S", raw) and "--" in line:
            current[1].extend(line.split())
        else:
            current = None
    for no, line in prose:
        for span in SPAN.findall(line):
            m = re.match(r"^(?:\S*/)?(flopwatt(?:_bench)?)\s+(.*)$", span)
            if m:
                found.append([no, m.group(2).split(), m.group(1)])
    return found


class Cli:
    """The subcommands and --help text of one flopwatt binary, asked once per command path."""

    def __init__(self, binary):
        self.binary = binary
        self.helps = {}

    def help(self, path):
        key = tuple(path)
        if key not in self.helps:
            p = subprocess.run([self.binary, *path, "--help"], capture_output=True, text=True, timeout=60)
            self.helps[key] = (p.returncode, p.stdout + p.stderr)
        return self.helps[key]

    def subcommands(self, path):
        code, text = self.help(path)
        if code != 0:
            return set()
        subs, inside = set(), False
        for line in text.split("\n"):
            if re.match(r"^subcommands:?$", line.strip(), re.I):
                inside = True
            elif inside and re.match(r"^ {1,4}\S+(?: {2,}|$)", line):
                subs.add(line.split()[0])
            elif inside and line.strip():
                inside = False
        return subs


def check_command(cli, words):
    """Problems of one quoted command; `a | b` alternatives (`store import DIR | ls | show RUN`)
    are each checked as a sibling subcommand."""
    if "|" in words:
        segments, cur = [], []
        for w in words:
            if w == "|":
                segments.append(cur)
                cur = []
            else:
                cur.append(w)
        segments.append(cur)
        problems = check_one(cli, segments[0])
        path = []
        while len(path) < len(segments[0]) and segments[0][len(path)] in cli.subcommands(path):
            path.append(segments[0][len(path)])
        for seg in segments[1:]:
            if seg and path and seg[0] in cli.subcommands(path[:-1]):
                problems += check_one(cli, path[:-1] + seg)
        return problems
    return check_one(cli, words)


def check_one(cli, words):
    path = []
    rest = list(words)
    while rest and rest[0] in cli.subcommands(path):
        path.append(rest.pop(0))
    code, text = cli.help(path)
    name = " ".join(["flopwatt", *path])
    if code != 0:
        return [f"`{name} --help` exits {code}: {text.strip().splitlines()[-1] if text.strip() else ''}"]
    placeholder = rest and (rest[0].isupper() or rest[0].startswith("<"))  # COMMAND, <command>
    if not path and rest and not rest[0].startswith("-") and not placeholder:
        return [f"`flopwatt {rest[0]}`: no such command (the commands: {', '.join(sorted(cli.subcommands([])))})"]
    problems = []
    args = rest[: rest.index("--")] if "--" in rest else rest  # after `--`: the measured program's
    for flag in FLAG.findall(" ".join(args)):
        if not re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", text):
            problems.append(f"`{name}` has no flag {flag} (not in `{name} --help`)")
    return problems


def check_bench_command(bench, words):
    code, text = bench.help([])
    if code != 0:
        return [f"`flopwatt_bench --help` exits {code}"]
    return [f"`flopwatt_bench` has no flag {flag} (not in `flopwatt_bench --help`)"
            for flag in FLAG.findall(" ".join(words))
            if not flag.startswith("--benchmark_") and not re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", text)]


def check_commands(files, root, cli, bench=None):
    problems = []
    for md in files:
        for no, words, program in commands_in(md):
            if program == "flopwatt_bench" and bench is None:
                continue
            found = check_bench_command(bench, words) if program == "flopwatt_bench" else check_command(cli, words)
            for p in found:
                problems.append(f"{os.path.relpath(md, root)}:{no}: {p}")
    return problems


def check_paths(files, root):
    problems = []
    pattern = re.compile(r"^(?:" + "|".join(re.escape(d) for d in TREE_DIRS) + r")/[\w./-]*$")
    for md in files:
        with open(md, encoding="utf-8") as f:
            _, _, prose = parse_md(f.read())
        for no, line in prose:
            for span in SPAN.findall(line):
                if pattern.match(span) and not os.path.exists(os.path.join(root, span)):
                    problems.append(f"{os.path.relpath(md, root)}:{no}: `{span}` does not exist in the tree")
    return problems


def man_environment(binary):
    """The variables of `flopwatt --help-man`'s ENVIRONMENT section: the program's own table."""
    p = subprocess.run([binary, "--help-man"], capture_output=True, text=True, timeout=60)
    man = p.stdout.split(".SH ENVIRONMENT\n", 1)[-1].split("\n.SH ", 1)[0] if ".SH ENVIRONMENT" in p.stdout else ""
    return [n for line in man.split("\n") if line.startswith(".B ")
            for n in re.findall(r"[A-Z][A-Z0-9_]{2,}", line[3:])]


def check_environment(root, cli):
    """Every variable of the man page's ENVIRONMENT is in docs/commands.md."""
    names = man_environment(cli.binary)
    page = os.path.join(root, "docs", "commands.md")
    text = open(page, encoding="utf-8").read() if os.path.exists(page) else ""
    if not names:
        return ["`flopwatt --help-man` has no ENVIRONMENT entries"]
    return [f"docs/commands.md: environment variable {n} (in `flopwatt --help-man`) is not documented"
            for n in names if n not in text]


def check_readme_shape(root):
    """README stays a five-minute read and opens with the two set-up commands CI runs."""
    lines = open(os.path.join(root, "README.md"), encoding="utf-8").read().split("\n")
    problems = []
    if len(lines) > 260:
        problems.append(f"README.md: {len(lines)} lines; move detail into docs/ (a newcomer reads at most ~250)")
    head = "\n".join(lines[:6])
    for cmd in ("scripts/bootstrap.sh ", "scripts/bootstrap.sh test "):
        if "\n" + cmd not in head:
            problems.append(f"README.md: the first code block must hold `{cmd.strip()}` (.ci/run runs it)")
    return problems


def doc_files(root):
    files = [os.path.join(root, "README.md"), os.path.join(root, "examples", "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return files


def check(root, binary, bench_binary=None):
    files = doc_files(root)
    cli = Cli(binary)
    bench = Cli(bench_binary) if bench_binary else None
    return (check_links(files, root) + check_paths(files, root) + check_commands(files, root, cli, bench) +
            check_environment(root, cli) + check_readme_shape(root)), files


def self_test(binary):
    """A tree with one fault of each kind: each must be reported, and a clean twin must pass."""
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, "docs"))
        os.makedirs(os.path.join(t, "examples"))
        open(os.path.join(t, "examples", "README.md"), "w").write("# Examples\n")
        open(os.path.join(t, "docs", "a.md"), "w").write(
            "# A page\n\n## Power log: the format\n\ntext\n")
        # The environment check's page: every variable the binary documents, but one in the faulty twin.
        env = man_environment(binary)
        open(os.path.join(t, "docs", "commands.md"), "w").write("# Commands\n\n" + " ".join(env) + "\n")
        good = ("# flopwatt\n\n```sh\nscripts/bootstrap.sh          # a\nscripts/bootstrap.sh test     # b\n```\n\n"
                "[a](docs/a.md), [b](docs/a.md#power-log-the-format), [c](#flopwatt)\n\n"
                "```sh\nflopwatt measure --repeat 3 -- sleep 1 --not-a-flag\n```\n\n"
                "`flopwatt run gemm --shapes 64,64,64`\n")
        open(os.path.join(t, "README.md"), "w").write(good)
        clean, _ = check(t, binary)
        if clean:
            print("self-test: the clean tree was reported:\n  " + "\n  ".join(clean))
            return 1
        bad = good + ("\n[dead](docs/missing.md) [gone](docs/a.md#no-such-heading)\n\n"
                      "```sh\nflopwatt run gemm --shapes 64,64,64 \\\n  --no-such-flag\n"
                      "FLOPWATT_STORE=x flopwatt nosuchcommand --x\n```\n\n"
                      "`flopwatt measure --repaet 3 -- true`\n\nSee `tests/api/no_such_test.sh`.\n")
        open(os.path.join(t, "README.md"), "w").write(bad)
        open(os.path.join(t, "docs", "commands.md"), "w").write("# Commands\n\n" + " ".join(env[1:]) + "\n")
        problems, _ = check(t, binary)
        expected = ["dead link docs/missing.md", "dead anchor docs/a.md#no-such-heading",
                    "`flopwatt run gemm` has no flag --no-such-flag", "`flopwatt nosuchcommand`: no such command",
                    "`flopwatt measure` has no flag --repaet", "`tests/api/no_such_test.sh` does not exist",
                    f"environment variable {env[0]} (in `flopwatt --help-man`) is not documented"]
        missed = [e for e in expected if not any(e in p for p in problems)]
        print("self-test: reported:\n  " + "\n  ".join(problems))
        if missed or len(problems) != len(expected):
            print("self-test: FAILED; not reported: " + "; ".join(missed))
            return 1
        print("self-test: every fault reported")
        return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--self-test":
        return self_test(argv[2])
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    problems, files = check(argv[1], argv[2], argv[3] if len(argv) == 4 else None)
    for p in problems:
        print(p)
    print(f"{len(files)} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
