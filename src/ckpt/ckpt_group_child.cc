// A node of ckpt_group_process_test: joins cache group GROUP as member LISTEN
// (group::JoinGroupStore over the store at URL), waits until every node has
// joined, pulls checkpoint STEP into OUT_DIR (every shard verified on the
// way, then the copy verified in full), then waits until every node is done
// (a member leaving early would send the others to the bucket).
//   ckpt_group_child URL GROUP LISTEN SECRET_FILE CACHE_DIR SYNC_DIR INDEX NODES STEP OUT_DIR
// Exit 0 and "pulled and verified" on success; 1 with the error otherwise.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "ckpt/reader.h"
#include "group/group_store.h"
#include "object/store_url.h"
#include "testing/background_process.h"

namespace {

namespace fs = std::filesystem;

// Waits (polling the files, with a deadline) until `prefix`0..nodes-1 exist in `dir`.
bool WaitForAll(const fs::path& dir, const std::string& prefix, int nodes) {
  return strata::testing::WaitForFiles(dir.string(), prefix, nodes, std::chrono::seconds(120));
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "ckpt_group_child: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace strata;
  if (argc != 11) return Fail("usage: URL GROUP LISTEN SECRET_FILE CACHE_DIR SYNC_DIR INDEX NODES STEP OUT_DIR");
  const std::string index = argv[7];
  const fs::path sync = argv[6];
  const int nodes = std::atoi(argv[8]);
  const int64_t step = std::atoll(argv[9]);
  auto bucket = object::OpenStore(argv[1]);
  if (!bucket.ok()) return Fail("open: " + bucket.status().ToString());
  group::GroupStoreOptions go;
  go.url = argv[2];
  go.listen = argv[3];
  go.secret_file = argv[4];
  go.cache_dir = argv[5];
  go.deadline = std::chrono::seconds(20);  // a loaded machine must not turn a peer ask into a bucket read
  auto store = group::JoinGroupStore(*bucket, go);
  if (!store.ok()) return Fail("join: " + store.status().ToString());
  auto from = ckpt::StoreLocation(*store);
  auto to = ckpt::OpenLocalLocation(io::DefaultFileSystem(), argv[10]);
  if (!to.ok()) return Fail("out: " + to.status().ToString());
  std::ofstream(sync / ("ready" + index)) << "ready\n";
  if (!WaitForAll(sync, "ready", nodes)) return Fail("the other nodes did not join");
  if (Status st = ckpt::Pull(*from, step, **to); !st.ok()) return Fail("pull: " + st.ToString());
  if (Status st = ckpt::Verify(**to, step, ckpt::VerifyLevel::kFull).ToStatus(); !st.ok()) {
    return Fail("verify: " + st.ToString());
  }
  std::printf("pulled and verified\n");
  std::fflush(stdout);
  std::ofstream(sync / ("done" + index)) << "done\n";
  if (!WaitForAll(sync, "done", nodes)) return Fail("the other nodes did not finish");
  return 0;
}
