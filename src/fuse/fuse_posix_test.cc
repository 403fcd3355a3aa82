// Real mounts (label fuse) for POSIX semantics: attributes and symlinks
// across remounts, special files, inode numbers across renames, and s3fs on
// the same RGW bucket: what one writes the other reads, and the conformance
// cases of testdata/posix_conformance.py run on both mounts.
#include "fuse/fuse_test_fixture.h"

namespace strata::fuse {
namespace {

// s3fs (Debian's 1.90) mounting `prefix` of the shared RGW bucket at `mnt`
// (its marker made here: s3fs mounts bucket:/prefix only where it sees a
// directory), in the foreground, stopped by UnmountS3fs.
std::unique_ptr<MountProcess> MountS3fs(testing::S3TestServer& rgw, const std::string& prefix, const std::string& dir,
                                        const std::string& mnt, const std::string& extra_options) {
  auto root = object::OpenStore(rgw.StoreUrl());
  EXPECT_TRUE(root.ok()) << root.status();
  if (!root.ok()) return nullptr;
  object::PutOptions dir_meta;
  dir_meta.metadata.user = {{"mode", "16877"}};
  EXPECT_TRUE((*root)->Put(prefix + "/", Buffer(), dir_meta).ok()) << prefix;
  const std::string passwd = dir + "/s3fs.passwd";
  {
    std::ofstream out(passwd);
    out << rgw.access_key() << ":" << rgw.secret_key() << "\n";
  }
  stdfs::permissions(passwd, stdfs::perms::owner_read | stdfs::perms::owner_write);
  stdfs::create_directories(mnt);
  auto p = std::make_unique<MountProcess>(
      std::vector<std::string>{"/usr/bin/s3fs", rgw.bucket() + ":/" + prefix, mnt, "-f", "-o",
                               "url=" + rgw.endpoint() + ",use_path_request_style,sigv4,endpoint=" + rgw.region() +
                                   ",passwd_file=" + passwd + ",dbglevel=warn,retries=1,stat_cache_expire=1" +
                                   extra_options},
      testing::WithoutCaBundles(), dir + "/s3fs.log");
  EXPECT_TRUE(p->WaitMounted(mnt)) << p->Log();
  return p;
}

void UnmountS3fs(std::unique_ptr<MountProcess>& p, const std::string& mnt) {
  (void)testing::RunCommand({"fusermount3", "-u", mnt}, {});
  EXPECT_EQ(p->Wait(), 0) << p->Log();
  p.reset();
}

// FIFOs, sockets and device nodes are empty objects whose mode says their
// type (s3fs's form); a file or directory keeps its inode number across a
// rename, in every tool's view, for the mount's lifetime.
TEST_P(FuseTest, SpecialFilesAndStableInodeNumbers) {
  Mount({"--allow-other"});
  RunOk({"sh", "-c",
         "set -e; cd " + mnt_ +
             "; mkfifo -m 0640 fifo; mknod -m 0600 null c 1 3; mknod -m 0660 disk b 8 1;"
             " mkdir -m 1777 pub; " +
             kPython + " -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")'"});
  auto types = [&] {
    return RunOk({"sh", "-c", "cd " + mnt_ + " && stat -c '%n %F %a %t:%T %s' fifo null disk && stat -c '%n %F' sock"})
        .stdout_text;
  };
  const std::string want =
      "fifo fifo 640 0:0 0\nnull character special file 600 1:3 0\ndisk block special file 660 8:1 0\nsock socket\n";
  EXPECT_EQ(types(), want);
  // The kernel runs the FIFO: a writer and a reader meet in it.
  EXPECT_EQ(RunOk({"sh", "-c", "cd " + mnt_ + " && (printf through > fifo &) && cat fifo"}).stdout_text, "through");
  // Device nodes are root's to make, as the kernel decides (another uid, in a directory it may write).
  auto as_nobody =
      Run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "mknod", mnt_ + "/pub/n", "c", "1", "3"});
  EXPECT_NE(as_nobody.exit_code, 0);
  EXPECT_NE(as_nobody.stderr_text.find("Operation not permitted"), std::string::npos) << as_nobody.stderr_text;

  // Inode numbers across renames: stat, ls -i and find -inum agree.
  RunOk({"sh", "-c", "cd " + mnt_ + " && echo data > a.txt && mkdir d e"});
  auto ino = [&](const std::string& rel) { return RunOk({"stat", "-c", "%i", mnt_ + "/" + rel}).stdout_text; };
  const std::string file_ino = ino("a.txt"), dir_ino = ino("e"), fifo_ino = ino("fifo");
  RunOk({"mv", mnt_ + "/a.txt", mnt_ + "/d/b.txt"});
  RunOk({"mv", mnt_ + "/e", mnt_ + "/e2"});
  RunOk({"mv", mnt_ + "/fifo", mnt_ + "/d/fifo2"});
  EXPECT_EQ(ino("d/b.txt"), file_ino);
  EXPECT_EQ(ino("e2"), dir_ino);
  EXPECT_EQ(ino("d/fifo2"), fifo_ino);
  const std::string n = file_ino.substr(0, file_ino.size() - 1);
  EXPECT_EQ(RunOk({"ls", "-i", mnt_ + "/d/b.txt"}).stdout_text, n + " " + mnt_ + "/d/b.txt\n");
  EXPECT_EQ(RunOk({"find", mnt_, "-inum", n}).stdout_text, mnt_ + "/d/b.txt\n");
  RunOk({"sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"});  // the kernel forgets: numbers come from the mount
  EXPECT_EQ(ino("d/b.txt"), file_ino);
  EXPECT_EQ(ino("e2"), dir_ino);
  EXPECT_EQ(RunOk({"stat", "-c", "%F %a", mnt_ + "/d/fifo2"}).stdout_text, "fifo 640\n");
  EXPECT_EQ(Get("d/b.txt"), "data\n");
  auto fifo_obj = store_->Head("d/fifo2");
  ASSERT_TRUE(fifo_obj.ok()) << fifo_obj.status();
  EXPECT_EQ(fifo_obj->size, 0u);
  EXPECT_EQ(fifo_obj->metadata.user["mode"], std::to_string(S_IFIFO | 0640));
  RunOk({"mv", mnt_ + "/d/fifo2", mnt_ + "/fifo"});

  // Another mount reads them back from the objects.
  Stop(SIGTERM);
  Mount();
  EXPECT_EQ(types(), want);
  RunOk({"rm", mnt_ + "/fifo", mnt_ + "/null", mnt_ + "/disk", mnt_ + "/sock"});
  EXPECT_EQ(Get("fifo").substr(0, 10), "<NotFound:");
}

// `find -printf '%m %u %g %T@ %l %P'` of a tree, sorted; directories only
// when `dirs` (file:// keeps no directory markers, so not their attributes).
std::string Attrs(const std::string& root, bool dirs) {
  auto r = testing::RunCommand({"find", root, "-mindepth", "1", "-printf", "%y %m %u %g %T@ %l %P\n"}, {});
  if (!r.ok()) return "<" + r.status().ToString() + ">";
  std::istringstream lines(r->stdout_text);
  std::vector<std::string> out;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("d ") && !dirs) continue;
    out.push_back(line);
  }
  std::sort(out.begin(), out.end());
  std::string joined;
  for (const auto& l : out) joined += l + "\n";
  return joined;
}

TEST_P(FuseTest, PosixAttributesAndSymlinksSurviveARemount) {
  const bool dirs = GetParam() == Backend::kRgw;
  Put("obj", "existing object");
  const std::string src = dir_ + "/local/src";
  RunOk({"sh", "-c",
         "set -e; mkdir -p " + src + "/sub/deeper; cd " + src +
             "; printf '#!/bin/sh\\necho hi\\n' > run.sh; chmod 0751 run.sh; echo secret > sub/key; chmod 0600 sub/key;"
             " head -c 200000 /dev/urandom > sub/deeper/blob; chmod 0640 sub/deeper/blob; chown 1234:5678 sub/key;"
             " ln -s run.sh link; ln -s ../run.sh sub/up; ln -s /nowhere/at/all sub/dangling; chmod 0750 sub;"
             " chown -h 77:88 sub/up;"
             " for p in run.sh sub/key sub/deeper/blob link sub/up sub/dangling sub/deeper sub; do"
             " touch -h -d '2020-01-02 03:04:05' $p; done;"
             " touch -h -d '2019-05-06 07:08:09' sub/deeper/blob"});
  const std::string want = Attrs(src, dirs);
  ASSERT_NE(want.find("l 777 root root 1577934245.0000000000 run.sh link"), std::string::npos) << want;
  Mount();
  // Operations on an existing object (server-side copies onto itself) and new symlinks.
  RunOk({"chmod", "0700", mnt_ + "/obj"});
  RunOk({"chown", "42:43", mnt_ + "/obj"});
  RunOk({"touch", "-d", "2021-03-04 05:06:07", mnt_ + "/obj"});
  RunOk({"ln", "-s", "obj", mnt_ + "/obj.link"});
  EXPECT_EQ(RunOk({"readlink", mnt_ + "/obj.link"}).stdout_text, "obj\n");
  EXPECT_EQ(RunOk({"cat", mnt_ + "/obj.link"}).stdout_text, "existing object");
  // The tools that copy attributes.
  RunOk({"cp", "-pR", src, mnt_ + "/cp"});
  RunOk({"rsync", "-a", src + "/", mnt_ + "/rsync/"});
  RunOk({"tar", "-C", src, "-cf", dir_ + "/local/src.tar", "."});
  RunOk({"mkdir", mnt_ + "/tar"});
  RunOk({"tar", "-C", mnt_ + "/tar", "-xpf", dir_ + "/local/src.tar"});
  for (const char* sub : {"cp", "rsync", "tar"}) EXPECT_EQ(Attrs(mnt_ + "/" + sub, dirs), want) << sub << " (mounted)";
  Stop(SIGTERM);
  EXPECT_EQ(Get("obj"), "existing object") << "attributes changed, bytes kept";
  EXPECT_EQ(Get("obj.link"), "obj") << "a symlink's body is its target, as s3fs stores it";

  Mount();
  RunOk({"sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"});
  for (const char* sub : {"cp", "rsync", "tar"})
    EXPECT_EQ(Attrs(mnt_ + "/" + sub, dirs), want) << sub << " (remounted)";
  EXPECT_EQ(RunOk({"stat", "-c", "%a %u %g %Y %s", mnt_ + "/obj"}).stdout_text,
            "700 42 43 " + RunOk({"date", "-d", "2021-03-04 05:06:07", "+%s"}).stdout_text.substr(0, 10) + " 15\n");
  EXPECT_EQ(RunOk({"stat", "-c", "%F %N", mnt_ + "/obj.link"}).stdout_text,
            "symbolic link '" + mnt_ + "/obj.link' -> 'obj'\n");
  EXPECT_EQ(RunOk({"sh", mnt_ + "/cp/run.sh"}).stdout_text, "hi\n");
  EXPECT_EQ(RunOk({"cmp", src + "/sub/deeper/blob", mnt_ + "/tar/sub/deeper/blob"}).exit_code, 0);
}

// s3fs and strata on the same RGW bucket: what one writes, the other shows
// with the same types, modes, owners, times, symlinks and special files.
TEST_P(FuseTest, S3fsAndStrataAgreeOnAttributesAndSymlinks) {
  if (GetParam() != Backend::kRgw) GTEST_SKIP() << "s3fs needs an S3 endpoint";
  testing::S3TestServer* rgw = Rgw::Get();
  ASSERT_NE(rgw, nullptr);
  const std::string s3mnt = dir_ + "/s3fs";
  auto s3fs_mount = [&] { return MountS3fs(*rgw, prefix_, dir_, s3mnt, ""); };
  auto s3fs_stop = [&](std::unique_ptr<MountProcess>& p) { UnmountS3fs(p, s3mnt); };
  const std::string src = dir_ + "/local/src";
  RunOk({"sh", "-c",
         "set -e; mkdir -p " + src + "/d; cd " + src +
             "; echo x > exe; chmod 0755 exe; echo y > d/priv; chmod 0600 d/priv; chown 1234:5678 d/priv;"
             " ln -s exe link; ln -s ../exe d/up; mkfifo -m 0640 fifo; mknod -m 0600 d/null c 1 3; chmod 0700 d;"
             " for p in exe d/priv link d/up fifo d/null d; do touch -h -d '2020-01-02 03:04:05' $p; done"});
  // s3fs 1.90 sets no times on symlinks (its utimens follows them): compare files and modes only for those.
  auto cmp = [&](const std::string& root) {
    std::string a = Attrs(root, true), out;
    std::istringstream lines(a);
    for (std::string l; std::getline(lines, l);) {
      if (l.starts_with("l ")) {
        std::istringstream f(l);
        std::string y, m, u, g, t, target, name;
        f >> y >> m >> u >> g >> t >> target >> name;
        l = y + " " + m + " " + target + " " + name;
      }
      out += l + "\n";
    }
    return out;
  };
  const std::string want = cmp(src);

  // s3fs writes, strata reads (s3fs 1.90 loses owners and times under cp -a: set modes one by one).
  auto s3 = s3fs_mount();
  ASSERT_TRUE(s3);
  RunOk({"sh", "-c",
         "set -e; cd " + s3mnt +
             "; mkdir -p by-s3fs/d; cd by-s3fs; echo x > exe; chmod 0751 exe; echo y > d/priv;"
             " chmod 0600 d/priv; ln -s exe link; ln -s ../exe d/up; mkfifo -m 0640 fifo; mknod -m 0600 d/null c 1 3;"
             " " +
             std::string(kPython) + " -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")'; chmod 0700 d"});
  s3fs_stop(s3);
  s3 = s3fs_mount();
  ASSERT_TRUE(s3);
  auto modes = [](const std::string& root) {
    auto r = testing::RunCommand({"find", root, "-mindepth", "1", "-printf", "%y %m %l %P\n"}, {});
    return r.ok() ? r->stdout_text : r.status().ToString();
  };
  const std::string s3fs_view = modes(s3mnt + "/by-s3fs");
  s3fs_stop(s3);
  EXPECT_NE(s3fs_view.find("f 751  exe"), std::string::npos) << s3fs_view;
  EXPECT_NE(s3fs_view.find("l 777 ../exe d/up"), std::string::npos) << s3fs_view;
  EXPECT_NE(s3fs_view.find("p 640  fifo"), std::string::npos) << s3fs_view;
  EXPECT_NE(s3fs_view.find("c 600  d/null"), std::string::npos) << s3fs_view;
  EXPECT_NE(s3fs_view.find("s "), std::string::npos) << s3fs_view;
  Mount();
  std::string strata_view = modes(mnt_ + "/by-s3fs");
  auto sorted = [](const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> v;
    for (std::string l; std::getline(in, l);) v.push_back(l);
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(strata_view), sorted(s3fs_view)) << "strata reading what s3fs wrote";
  EXPECT_EQ(RunOk({"readlink", mnt_ + "/by-s3fs/d/up"}).stdout_text, "../exe\n");
  EXPECT_EQ(RunOk({"ls", "-l", mnt_ + "/by-s3fs/link"}).stdout_text.substr(0, 10), "lrwxrwxrwx");
  EXPECT_EQ(RunOk({"ls", "-ld", mnt_ + "/by-s3fs/d"}).stdout_text.substr(0, 10), "drwx------");
  EXPECT_EQ(RunOk({"stat", "-c", "%F", mnt_ + "/by-s3fs/sock"}).stdout_text, "socket\n");
  // strata writes, s3fs reads.
  RunOk({"cp", "-a", src, mnt_ + "/by-strata"});
  Stop(SIGTERM);
  s3 = s3fs_mount();
  ASSERT_TRUE(s3);
  EXPECT_EQ(cmp(s3mnt + "/by-strata"), want) << "s3fs reading what strata wrote";
  EXPECT_EQ(RunOk({"readlink", s3mnt + "/by-strata/d/up"}).stdout_text, "../exe\n");
  EXPECT_EQ(RunOk({"cat", s3mnt + "/by-strata/link"}).stdout_text, "x\n");
  s3fs_stop(s3);
}

// testdata/posix_conformance.py's cases (open, mkdir, rmdir, unlink, rename:
// errno, modes, owners, sticky directories, another uid) on an s3fs mount and
// a strata mount (both --allow-other) of the same bucket in one run: strata
// passes every case s3fs passes. The per-family tallies go to the log.
TEST_P(FuseTest, ConformanceCasesPassWhereS3fsPasses) {
  if (GetParam() != Backend::kRgw) GTEST_SKIP() << "s3fs needs an S3 endpoint";
  testing::S3TestServer* rgw = Rgw::Get();
  ASSERT_NE(rgw, nullptr);
  const std::string script = testing::SourceDir() + "/src/fuse/testdata/posix_conformance.py";
  auto run = [&](const std::string& root) {
    std::map<std::string, std::pair<bool, std::string>> out;  // case -> passed, what it got
    auto r = RunOk({kPython, script, root});
    std::istringstream lines(r.stdout_text);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream f(line);
      std::string family, verdict, name, got;
      if (!std::getline(f, family, '\t') || !std::getline(f, verdict, '\t') || !std::getline(f, name, '\t')) continue;
      std::getline(f, got);
      out[family + ": " + name] = {verdict == "PASS", got};
    }
    return out;
  };
  const std::string s3mnt = dir_ + "/s3fs";
  auto s3 = MountS3fs(*rgw, prefix_, dir_, s3mnt, ",allow_other");
  ASSERT_TRUE(s3);
  RunOk({"mkdir", "-m", "0755", s3mnt + "/by-s3fs"});
  const auto s3fs_results = run(s3mnt + "/by-s3fs");
  UnmountS3fs(s3, s3mnt);
  Mount({"--allow-other"});
  RunOk({"mkdir", "-m", "0755", mnt_ + "/by-strata"});
  const auto strata_results = run(mnt_ + "/by-strata");
  ASSERT_GT(s3fs_results.size(), 40u);
  ASSERT_EQ(strata_results.size(), s3fs_results.size());
  std::map<std::string, std::pair<int, int>> s3fs_tally, strata_tally;  // family -> passed, cases
  for (const auto& [name, s3fs_case] : s3fs_results) {
    const auto& strata_case = strata_results.at(name);
    const std::string family = name.substr(0, name.find(':'));
    s3fs_tally[family].first += s3fs_case.first;
    ++s3fs_tally[family].second;
    strata_tally[family].first += strata_case.first;
    ++strata_tally[family].second;
    if (s3fs_case.first) {
      EXPECT_TRUE(strata_case.first) << name << ": s3fs passes, strata got " << strata_case.second;
    }
  }
  for (const auto& [family, t] : s3fs_tally)
    std::printf("conformance %-7s s3fs %d/%d  strata %d/%d\n", family.c_str(), t.first, t.second,
                strata_tally[family].first, strata_tally[family].second);
}

INSTANTIATE_TEST_SUITE_P(Backends, FuseTest, ::testing::Values(Backend::kFile, Backend::kRgw),
                         [](const auto& info) { return info.param == Backend::kFile ? "file" : "rgw"; });

}  // namespace
}  // namespace strata::fuse
