#include "train/workloads.h"

namespace strata::train {

const std::vector<Workload>& Workloads() {
  // mlcommons/storage configs/dlio/workload/{unet3d,resnet50,cosmoflow}_{h100,a100}.yaml:
  // record_length_bytes, num_samples_per_file, batch_size, computation_time, metric.au,
  // num_files_train. `samples` is this tool's default dataset size (a few hundred MB).
  static const std::vector<Workload> workloads = {
      {"unet3d", dataset::ShardFormat::kIndexed, "npz", 146600628, 1, 7, 0.323, 0.636, 0.90, 168, 28},
      {"resnet50", dataset::ShardFormat::kTfRecord, "jpg", 114660, 1251, 400, 0.224, 0.435, 0.90, 1024, 5004},
      {"cosmoflow", dataset::ShardFormat::kTfRecord, "bin", 2828486, 1, 1, 0.0035, 0.00551, 0.70, 524288, 256},
  };
  return workloads;
}

Result<Workload> FindWorkload(std::string_view name) {
  for (const auto& w : Workloads()) {
    if (w.name == name) return w;
  }
  return InvalidArgumentError("unknown workload '" + std::string(name) + "': expected unet3d, resnet50 or cosmoflow");
}

Result<double> ComputeTime(const Workload& w, std::string_view accelerator) {
  if (accelerator == "h100") return w.compute_h100_s;
  if (accelerator == "a100") return w.compute_a100_s;
  return InvalidArgumentError("unknown accelerator '" + std::string(accelerator) + "': expected h100 or a100");
}

}  // namespace strata::train
