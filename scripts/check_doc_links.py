#!/usr/bin/env python3
"""Checks that the relative links of the documentation resolve.

Every inline link `[text](target)` and reference definition `[label]: target` in README.md,
docs/**/*.md and src/**/README.md that is not a URL (http:, https:, mailto:) must name a file or
directory that exists, relative to the file holding the link; a `#anchor` (alone: the same file)
must name a heading of the target Markdown file, spelled as GitHub spells heading anchors.
Links inside code (fenced blocks, `inline code`) are not links and are skipped.

    scripts/check_doc_links.py [SOURCE_DIR]   check the tree (default: this script's checkout)
    scripts/check_doc_links.py --self-test    check that a broken path and a broken anchor fail

Prints one line per broken link (file:line: target: reason) and exits 1 if there is any.
"""
import os
import re
import sys
import tempfile

URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+).*?\1")
# [text](target "title") with one level of nested brackets in the text (e.g. [`a[0]`](x)).
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def doc_files(root):
    """README.md, docs/**/*.md and src/**/README.md under root, sorted."""
    found = []
    if os.path.isfile(os.path.join(root, "README.md")):
        found.append(os.path.join(root, "README.md"))
    for sub, only_readme in (("docs", False), ("src", True)):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, sub)):
            dirnames.sort()
            for name in sorted(filenames):
                if name == "README.md" if only_readme else name.endswith(".md"):
                    found.append(os.path.join(dirpath, name))
    return found


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks, inline code blanked."""
    in_fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fence = FENCE.match(line)
            if fence:
                if in_fence is None:
                    in_fence = fence.group(1)
                elif fence.group(1) == in_fence:
                    in_fence = None
                continue
            if in_fence is None:
                yield number, INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)


def slug(heading):
    """GitHub's anchor for a heading: the rendered text, lower case, punctuation dropped,
    spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "")
    text = re.sub(r"(\*\*|__|\*|(?<!\w)_|_(?!\w))", "", text)  # emphasis markers
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    """The set of heading anchors of a Markdown file (duplicates get -1, -2, ... as on GitHub)."""
    if path not in cache:
        seen = {}
        result = set()
        in_fence = None
        with open(path, encoding="utf-8") as f:
            for line in f:
                fence = FENCE.match(line)
                if fence:
                    if in_fence is None:
                        in_fence = fence.group(1)
                    elif fence.group(1) == in_fence:
                        in_fence = None
                    continue
                match = HEADING.match(line) if in_fence is None else None
                if not match:
                    continue
                base = slug(match.group(2))
                count = seen.get(base, 0)
                seen[base] = count + 1
                result.add(base if count == 0 else f"{base}-{count}")
        cache[path] = result
    return cache[path]


def check_target(source, target):
    """None if the link resolves, else the reason it does not."""
    path, _, anchor = target.partition("#")
    resolved = source if not path else os.path.normpath(os.path.join(os.path.dirname(source), path))
    if not os.path.exists(resolved):
        return "no such file or directory"
    if anchor:
        if not resolved.endswith(".md") or os.path.isdir(resolved):
            return "an anchor into something that is not a Markdown file"
        if anchor not in anchors(resolved):
            return f"no heading with anchor #{anchor} in {os.path.basename(resolved)}"
    return None


def check_tree(root):
    """Returns (files checked, links checked, list of 'file:line: target: reason')."""
    files = doc_files(root)
    links = 0
    broken = []
    for path in files:
        for number, line in prose_lines(path):
            targets = [m.group(1) for m in INLINE_LINK.finditer(line)]
            ref = REF_DEF.match(line)
            if ref:
                targets.append(ref.group(1))
            for target in targets:
                if not target or URL.match(target):
                    continue
                links += 1
                reason = check_target(path, target)
                if reason:
                    broken.append(f"{os.path.relpath(path, root)}:{number}: {target}: {reason}")
    return len(files), links, broken


def self_test():
    """A tree with one good link and anchor, a missing file and a missing heading: the good
    ones pass, the two broken ones are reported, code is not read as links."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        os.makedirs(os.path.join(root, "src", "mod"))
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("# Top\n\n[guide](docs/guide.md#the-cache-group-srcgroup) [mod](src/mod/)\n"
                    "[gone](docs/missing.md) `[code](nowhere.md)`\n\n```\n[fenced](nowhere.md)\n```\n")
        with open(os.path.join(root, "docs", "guide.md"), "w") as f:
            f.write("# Guide\n\n## The cache group (`src/group`)\n\n[up](../README.md#top) "
                    "[bad anchor](#no-such-heading) [self](#guide)\n")
        with open(os.path.join(root, "src", "mod", "README.md"), "w") as f:
            f.write("[ref]: ../../docs/guide.md\n")
        files, links, broken = check_tree(root)
        expected = [
            "README.md:4: docs/missing.md: no such file or directory",
            "docs/guide.md:5: #no-such-heading: no heading with anchor #no-such-heading in guide.md",
        ]
        if files != 3 or links != 7 or broken != expected:
            print(f"self-test FAILED: {files} files, {links} links, broken: {broken}")
            return 1
    print("self-test ok: a missing file and a missing heading are reported, good links pass")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    root = os.path.abspath(root)
    files, links, broken = check_tree(root)
    for line in broken:
        print(line)
    print(f"{files} files, {links} relative links, {len(broken)} broken")
    return 1 if broken or links == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
