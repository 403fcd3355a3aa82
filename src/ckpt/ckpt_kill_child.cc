// The process ckpt_remote_kill_test SIGKILLs: saves checkpoints from
// FIRST_STEP on, each uploaded to the store at URL (multipart for its large
// shards) and committed there before the next, with retention on both tiers,
// until it is killed. A writer opened on DIR first resumes the uploads a
// killed predecessor left.
//   ckpt_kill_child DIR URL FIRST_STEP
// Prints "uploaded STEP" after each remote commit; exits 1 on any error.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ckpt/kill_loop_util.h"
#include "ckpt/writer.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "ckpt_kill_child: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace strata;
  if (argc != 4) return Fail("usage: DIR URL FIRST_STEP");
  ckpt::WriterOptions o = ckpt::testing::KillLoopWriterOptions(argv[1]);
  o.remote_url = argv[2];
  auto w = ckpt::CheckpointWriter::Open(o);
  if (!w.ok()) return Fail("open: " + w.status().ToString());
  for (int64_t step = std::atoll(argv[3]);; ++step) {
    const ckpt::testing::OwnedState s = ckpt::testing::KillLoopState(step);
    auto h = (*w)->Save(step, s.views, "{\"step\":" + std::to_string(step) + "}");
    if (!h.ok()) return Fail("save " + std::to_string(step) + ": " + h.status().ToString());
    Status up = h->WaitUploaded();
    if (!up.ok()) return Fail("upload " + std::to_string(step) + ": " + up.ToString());
    std::printf("uploaded %lld\n", static_cast<long long>(step));
    std::fflush(stdout);
  }
}
