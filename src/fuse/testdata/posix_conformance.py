#!/usr/bin/python3
"""POSIX conformance cases for a mount: open, mkdir, rmdir, unlink, rename.

Usage (as root): posix_conformance.py MOUNTPOINT  (mounted with allow_other)
Each case runs in a fresh directory under MOUNTPOINT; "as nobody" cases run in
a child that drops to uid/gid 65534 first. Prints "family case PASS|FAIL got" per
case and a summary line per family. Exit code 0 (the caller compares).
"""
import errno
import os
import socket
import sys

NOBODY = 65534
root = sys.argv[1]
results = []


def code(fn):
    try:
        out = fn()
        return "ok" if out is None or out is True else str(out)
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def as_nobody(fn):
    """Runs fn in a child as uid/gid 65534; its code()."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            out = code(fn)
        except BaseException as e:  # noqa: BLE001 - report anything
            out = "child:" + type(e).__name__
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    out = b""
    while True:
        chunk = os.read(r, 256)
        if not chunk:
            break
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return out.decode()


counter = [0]


def fresh():
    counter[0] += 1
    d = os.path.join(root, "c%03d" % counter[0])
    os.mkdir(d, 0o755)
    return d


def case(family, name, want, fn):
    d = fresh()
    try:
        got = fn(d)
    except OSError as e:  # a setup step failed
        got = "setup:" + errno.errorcode.get(e.errno, str(e.errno))
    results.append((family, name, got in (want if isinstance(want, tuple) else (want,)), got))


def touch(p, data=b"x", mode=0o644):
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    os.write(fd, data)
    os.close(fd)


def sticky(d):
    s = os.path.join(d, "s")
    os.mkdir(s)
    os.chmod(s, 0o1777)
    return s


def public(d):
    p = os.path.join(d, "p")
    os.mkdir(p)
    os.chmod(p, 0o777)
    return p


LONG = "n" * 256
OK255 = "m" * 255

# ---- open ----
case("open", "O_CREAT|O_EXCL on an existing file: EEXIST", "EEXIST",
     lambda d: (touch(d + "/f"), code(lambda: os.open(d + "/f", os.O_CREAT | os.O_EXCL | os.O_WRONLY)))[1])
case("open", "O_WRONLY on a directory: EISDIR", "EISDIR", lambda d: code(lambda: os.open(d, os.O_WRONLY)))
case("open", "a path through a file: ENOTDIR", "ENOTDIR",
     lambda d: (touch(d + "/f"), code(lambda: os.open(d + "/f/x", os.O_RDONLY)))[1])
case("open", "O_CREAT with a 256-byte name: ENAMETOOLONG", "ENAMETOOLONG",
     lambda d: code(lambda: os.open(d + "/" + LONG, os.O_CREAT | os.O_WRONLY, 0o644)))
case("open", "O_CREAT with a 255-byte name", "ok",
     lambda d: code(lambda: os.close(os.open(d + "/" + OK255, os.O_CREAT | os.O_WRONLY, 0o644))))
case("open", "a symlink loop: ELOOP", "ELOOP",
     lambda d: (os.symlink("b", d + "/a"), os.symlink("a", d + "/b"), code(lambda: os.open(d + "/a", os.O_RDONLY)))[2])
case("open", "O_NOFOLLOW on a symlink: ELOOP", "ELOOP",
     lambda d: (touch(d + "/f"), os.symlink("f", d + "/l"),
                code(lambda: os.open(d + "/l", os.O_RDONLY | os.O_NOFOLLOW)))[2])
case("open", "a missing file without O_CREAT: ENOENT", "ENOENT", lambda d: code(lambda: os.open(d + "/nope", os.O_RDONLY)))
case("open", "O_CREAT mode 0640 is kept", "640",
     lambda d: (os.close(os.open(d + "/f", os.O_CREAT | os.O_WRONLY, 0o640)), "%o" % (os.stat(d + "/f").st_mode & 0o7777))[1])
case("open", "O_CREAT as another uid in a 0755 directory: EACCES", "EACCES",
     lambda d: as_nobody(lambda: os.open(d + "/f", os.O_CREAT | os.O_WRONLY, 0o644)))
case("open", "O_WRONLY as another uid on a 0644 file: EACCES", "EACCES",
     lambda d: (touch(d + "/f"), as_nobody(lambda: os.open(d + "/f", os.O_WRONLY)))[1])
case("open", "O_RDONLY as another uid on a 0600 file: EACCES", "EACCES",
     lambda d: (touch(d + "/f", mode=0o600), os.chmod(d + "/f", 0o600), as_nobody(lambda: os.open(d + "/f", os.O_RDONLY)))[2])
case("open", "a file made by another uid is owned by it", "65534",
     lambda d: (lambda p: (as_nobody(lambda: os.close(os.open(p + "/f", os.O_CREAT | os.O_WRONLY, 0o644))),
                           str(os.stat(p + "/f").st_uid))[1])(public(d)))
case("open", "O_TRUNC empties a file", "0",
     lambda d: (touch(d + "/f", b"abc"), os.close(os.open(d + "/f", os.O_WRONLY | os.O_TRUNC)),
                str(os.stat(d + "/f").st_size))[2])
case("open", "O_CREAT on a FIFO's name opens the FIFO (O_NONBLOCK reader)", "ok",
     lambda d: (os.mkfifo(d + "/q"), code(lambda: os.close(os.open(d + "/q", os.O_RDONLY | os.O_NONBLOCK | os.O_CREAT))))[1])

# ---- mkdir ----
case("mkdir", "an existing name: EEXIST", "EEXIST", lambda d: (os.mkdir(d + "/x"), code(lambda: os.mkdir(d + "/x")))[1])
case("mkdir", "an existing file's name: EEXIST", "EEXIST", lambda d: (touch(d + "/x"), code(lambda: os.mkdir(d + "/x")))[1])
case("mkdir", "a 256-byte name: ENAMETOOLONG", "ENAMETOOLONG", lambda d: code(lambda: os.mkdir(d + "/" + LONG)))
case("mkdir", "under a file: ENOTDIR", "ENOTDIR", lambda d: (touch(d + "/f"), code(lambda: os.mkdir(d + "/f/x")))[1])
case("mkdir", "under a missing directory: ENOENT", "ENOENT", lambda d: code(lambda: os.mkdir(d + "/no/x")))
case("mkdir", "mode 0700 is kept", "700", lambda d: (os.mkdir(d + "/x", 0o700), "%o" % (os.stat(d + "/x").st_mode & 0o7777))[1])
case("mkdir", "as another uid in a 0755 directory: EACCES", "EACCES", lambda d: as_nobody(lambda: os.mkdir(d + "/x")))
case("mkdir", "a directory made by another uid is owned by it", "65534",
     lambda d: (lambda p: (as_nobody(lambda: os.mkdir(p + "/x")), str(os.stat(p + "/x").st_uid))[1])(public(d)))
case("mkdir", "through a symlink loop: ELOOP", "ELOOP",
     lambda d: (os.symlink("b", d + "/a"), os.symlink("a", d + "/b"), code(lambda: os.mkdir(d + "/a/x")))[2])

# ---- rmdir ----
case("rmdir", "a non-empty directory: ENOTEMPTY", ("ENOTEMPTY", "EEXIST"),
     lambda d: (os.mkdir(d + "/x"), touch(d + "/x/f"), code(lambda: os.rmdir(d + "/x")))[2])
case("rmdir", "a file: ENOTDIR", "ENOTDIR", lambda d: (touch(d + "/f"), code(lambda: os.rmdir(d + "/f")))[1])
case("rmdir", "a missing name: ENOENT", "ENOENT", lambda d: code(lambda: os.rmdir(d + "/nope")))
case("rmdir", "'.': EINVAL", "EINVAL", lambda d: code(lambda: os.rmdir(d + "/.")))
case("rmdir", "a 256-byte name: ENAMETOOLONG", "ENAMETOOLONG", lambda d: code(lambda: os.rmdir(d + "/" + LONG)))
case("rmdir", "then the name is gone", "ENOENT",
     lambda d: (os.mkdir(d + "/x"), os.rmdir(d + "/x"), code(lambda: os.stat(d + "/x")))[2])
case("rmdir", "another's directory in a sticky directory: EPERM", ("EPERM", "EACCES"),
     lambda d: (lambda s: (os.mkdir(s + "/x"), as_nobody(lambda: os.rmdir(s + "/x")))[1])(sticky(d)))
case("rmdir", "one's own directory in a sticky directory", "ok",
     lambda d: (lambda s: (as_nobody(lambda: os.mkdir(s + "/x")), as_nobody(lambda: os.rmdir(s + "/x")))[1])(sticky(d)))
case("rmdir", "as another uid in a 0755 directory: EACCES", "EACCES",
     lambda d: (os.mkdir(d + "/x"), as_nobody(lambda: os.rmdir(d + "/x")))[1])

# ---- unlink ----
case("unlink", "a directory: EISDIR", ("EISDIR", "EPERM"), lambda d: (os.mkdir(d + "/x"), code(lambda: os.unlink(d + "/x")))[1])
case("unlink", "a missing name: ENOENT", "ENOENT", lambda d: code(lambda: os.unlink(d + "/nope")))
case("unlink", "a path through a file: ENOTDIR", "ENOTDIR", lambda d: (touch(d + "/f"), code(lambda: os.unlink(d + "/f/x")))[1])
case("unlink", "a 256-byte name: ENAMETOOLONG", "ENAMETOOLONG", lambda d: code(lambda: os.unlink(d + "/" + LONG)))
case("unlink", "a symlink, not its target", "ok",
     lambda d: (touch(d + "/f"), os.symlink("f", d + "/l"), os.unlink(d + "/l"), code(lambda: os.stat(d + "/f") and None))[3])
case("unlink", "a FIFO", "ENOENT", lambda d: (os.mkfifo(d + "/q"), os.unlink(d + "/q"), code(lambda: os.lstat(d + "/q")))[2])
case("unlink", "another's file in a sticky directory: EPERM", ("EPERM", "EACCES"),
     lambda d: (lambda s: (touch(s + "/f"), as_nobody(lambda: os.unlink(s + "/f")))[1])(sticky(d)))
case("unlink", "one's own file in a sticky directory", "ok",
     lambda d: (lambda s: (as_nobody(lambda: touch(s + "/f")), as_nobody(lambda: os.unlink(s + "/f")))[1])(sticky(d)))
case("unlink", "as another uid in a 0755 directory: EACCES", "EACCES",
     lambda d: (touch(d + "/f"), as_nobody(lambda: os.unlink(d + "/f")))[1])

# ---- rename ----
case("rename", "a file over a directory: EISDIR", "EISDIR",
     lambda d: (touch(d + "/f"), os.mkdir(d + "/x"), code(lambda: os.rename(d + "/f", d + "/x")))[2])
case("rename", "a directory over a file: ENOTDIR", "ENOTDIR",
     lambda d: (touch(d + "/f"), os.mkdir(d + "/x"), code(lambda: os.rename(d + "/x", d + "/f")))[2])
case("rename", "a directory over a non-empty one: ENOTEMPTY", ("ENOTEMPTY", "EEXIST"),
     lambda d: (os.mkdir(d + "/x"), os.mkdir(d + "/y"), touch(d + "/y/f"), code(lambda: os.rename(d + "/x", d + "/y")))[3])
case("rename", "a directory into itself: EINVAL", "EINVAL",
     lambda d: (os.mkdir(d + "/x"), code(lambda: os.rename(d + "/x", d + "/x/y")))[1])
case("rename", "to a 256-byte name: ENAMETOOLONG", "ENAMETOOLONG",
     lambda d: (touch(d + "/f"), code(lambda: os.rename(d + "/f", d + "/" + LONG)))[1])
case("rename", "a missing name: ENOENT", "ENOENT", lambda d: code(lambda: os.rename(d + "/nope", d + "/x")))
case("rename", "a file keeps its inode number", "same",
     lambda d: (touch(d + "/f"), os.stat(d + "/f").st_ino, os.rename(d + "/f", d + "/g"))[1] == os.stat(d + "/g").st_ino
     and "same" or "changed")
case("rename", "a file replaces another", "x",
     lambda d: (touch(d + "/f"), touch(d + "/g", b"old"), os.rename(d + "/f", d + "/g"), open(d + "/g").read())[3])
case("rename", "a FIFO stays a FIFO", "fifo",
     lambda d: (os.mkfifo(d + "/q"), os.rename(d + "/q", d + "/r"),
                "fifo" if os.path.exists(d + "/r") and (os.lstat(d + "/r").st_mode & 0o170000) == 0o010000 else "other")[2])
case("rename", "another's file out of a sticky directory: EPERM", ("EPERM", "EACCES"),
     lambda d: (lambda s: (touch(s + "/f"), as_nobody(lambda: os.rename(s + "/f", s + "/g")))[1])(sticky(d)))
case("rename", "as another uid in a 0755 directory: EACCES", "EACCES",
     lambda d: (touch(d + "/f"), as_nobody(lambda: os.rename(d + "/f", d + "/g")))[1])

families = []
for fam, name, ok, got in results:
    print("%s\t%s\t%s\t%s" % (fam, "PASS" if ok else "FAIL", name, got))
    if fam not in families:
        families.append(fam)
for fam in families:
    rows = [r for r in results if r[0] == fam]
    print("SUMMARY %s %d/%d" % (fam, sum(1 for r in rows if r[2]), len(rows)))
