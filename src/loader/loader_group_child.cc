// A node of loader_group_process_test: opens a StreamingDataset in cache
// group GROUP as member LISTEN, waits until every node has joined, streams
// the whole dataset checking every sample's bytes, then waits until every
// node is done (a member leaving early would send the others to the bucket).
//   loader_group_child URL GROUP LISTEN SECRET_FILE CACHE_DIR SYNC_DIR INDEX NODES
// Exit 0 and "streamed N samples" on success; 1 with the error otherwise.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "loader/loader_group_test_util.h"
#include "loader/streaming_dataset.h"
#include "testing/background_process.h"

namespace {

namespace fs = std::filesystem;
using strata::loader::testing::GroupSampleBytes;

// Waits (polling the files, with a deadline) until `prefix`0..nodes-1 exist in `dir`.
bool WaitForAll(const fs::path& dir, const std::string& prefix, int nodes) {
  return strata::testing::WaitForFiles(dir.string(), prefix, nodes, std::chrono::seconds(120));
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "loader_group_child: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 9) return Fail("usage: URL GROUP LISTEN SECRET_FILE CACHE_DIR SYNC_DIR INDEX NODES");
  const std::string url = argv[1], index = argv[7];
  const fs::path sync = argv[6];
  const int nodes = std::atoi(argv[8]);
  strata::loader::StreamingOptions o;
  o.cache_dir = argv[5];
  o.shuffle = strata::loader::Shuffle::kShards;
  o.seed = static_cast<uint64_t>(std::atoi(argv[7]));  // each node reads the shards in another order
  o.cache_group = argv[2];
  o.peer_listen = argv[3];
  o.group_secret_file = argv[4];
  o.group_deadline = std::chrono::seconds(20);  // a loaded machine must not turn a peer ask into a bucket read
  auto ds = strata::loader::StreamingDataset::Open(url, o);
  if (!ds.ok()) return Fail("open: " + ds.status().ToString());
  std::ofstream(sync / ("ready" + index)) << "ready\n";
  if (!WaitForAll(sync, "ready", nodes)) return Fail("the other nodes did not join");
  auto it = (*ds)->Iterate(0, (*ds)->MakeState(0, 0));
  if (!it.ok()) return Fail("iterate: " + it.status().ToString());
  uint64_t samples = 0;
  for (;;) {
    auto s = (*it)->NextSample();
    if (!s.ok()) return Fail("next: " + s.status().ToString());
    if (!*s) break;
    if ((*s)->fields.at("bin").bytes.view() != GroupSampleBytes((*s)->index)) {
      return Fail("sample " + std::to_string((*s)->index) + " differs");
    }
    ++samples;
  }
  if (samples != (*ds)->size())
    return Fail("streamed " + std::to_string(samples) + " of " + std::to_string((*ds)->size()));
  std::printf("streamed %llu samples\n", static_cast<unsigned long long>(samples));
  std::fflush(stdout);
  std::ofstream(sync / ("done" + index)) << "done\n";
  if (!WaitForAll(sync, "done", nodes)) return Fail("the other nodes did not finish");
  return 0;
}
