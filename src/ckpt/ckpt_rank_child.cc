// One rank of a multi-process checkpoint test (ckpt_dist_test runs several):
// saves MakeState(seed, rank) as `step` under `attempt` into its directory,
// tiered to a file:// store, and exits 0 once its part (and, on rank 0, the
// checkpoint) is committed in the store. --stall-persist makes it hang once
// its shards are written, before its rank manifest and commit (announced by
// creating DIR/STALLED), so the test can kill it mid-save.
//
//   ckpt_rank_child DIR STORE_URL RANK WORLD ATTEMPT STEP SEED [--stall-persist]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ckpt/test_util.h"
#include "ckpt/writer.h"
#include "io/durable.h"
#include "io/fault_file_system.h"
#include "object/store_url.h"

using namespace strata;
using namespace strata::ckpt;

namespace {

// Hangs (until killed) at the rename that would publish the rank manifest.
class StallBeforeManifest : public io::FaultFileSystem {
 public:
  StallBeforeManifest(io::FileSystem& base, std::string announce)
      : io::FaultFileSystem(base), announce_(std::move(announce)) {}
  Status Rename(const std::string& from, const std::string& to) override {
    if (to.find(".manifest.json") != std::string::npos) {
      io::WriteFileAtomic(io::DefaultFileSystem(), announce_, std::string_view("stalled\n")).IgnoreError();
      for (;;) ::pause();
    }
    return io::FaultFileSystem::Rename(from, to);
  }

 private:
  std::string announce_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr, "usage: %s DIR STORE_URL RANK WORLD ATTEMPT STEP SEED [--stall-persist]\n", argv[0]);
    return 2;
  }
  const bool stall = argc > 8 && std::string(argv[8]) == "--stall-persist";
  auto store = object::OpenStore(argv[2]);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  WriterOptions o;
  o.dir = argv[1];
  o.remote = *store;
  StallBeforeManifest stalling(io::DefaultFileSystem(), io::JoinPath(o.dir, "STALLED"));
  if (stall) o.fs = &stalling;
  o.rank = std::atoi(argv[3]);
  o.world_size = std::atoi(argv[4]);
  o.attempt = argv[5];
  o.shared_dir = false;  // node-local directories: the store is where the checkpoint commits
  o.shard_bytes = 1 << 20;
  o.upload_part_size = 1 << 20;
  o.poll_interval = std::chrono::milliseconds(5);
  auto w = CheckpointWriter::Open(o);
  if (!w.ok()) {
    std::fprintf(stderr, "%s\n", w.status().ToString().c_str());
    return 1;
  }
  const testing::OwnedState state = testing::MakeState(std::atoll(argv[7]), o.rank);
  auto h = (*w)->Save(std::atoll(argv[6]), state.views);
  Status st = h.ok() ? h->WaitUploaded() : h.status();
  if (!st.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", o.rank, st.ToString().c_str());
    return 1;
  }
  return 0;
}
